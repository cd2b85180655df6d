"""Model weights in the Hugging Face cache layout: staging a pinned revision with huggingface_hub
(stage), the weights manifest beside each snapshot (manifest), which files a backend needs
(select), the staged snapshot found offline and the digests a job records (snapshot), size facts
(facts). Used by the worker (loading), `kit weights`, `kit reproduce`, `kit check` and the
launcher; it imports only kit.errors, kit.config and kit.results."""
