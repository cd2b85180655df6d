"""Model weights in the Hugging Face cache layout: the staged snapshot of a pinned revision, found
offline, and the digests of its weight files. Used by the worker (loading), `kit reproduce`
(checking a rerun's weights) and the launcher; it imports only kit.errors and kit.results."""
