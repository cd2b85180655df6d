"""The bare loop a worker is measured against: the same tiny model, prompts and batches through
plain transformers + torch (load, chat template, left padding, greedy generate, decode), nothing
else: no checkpoints, logs, claims or provenance.

    python bare_loop.py SNAPSHOT PROMPTS.json BATCH MAX_NEW OUT.json

PROMPTS.json: [[language, [prompt, ...]], ...], as kit formats them; OUT.json gets the decoded
answers in the same layout, so the bench can check both gave the same text."""

import json
import sys

import torch
import transformers


def main(snapshot: str, prompts_file: str, batch: int, max_new: int, out_file: str) -> None:
    """Generate every prompt's answer, language by language, batch by batch."""
    torch.manual_seed(0)
    tok = transformers.AutoTokenizer.from_pretrained(snapshot, local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(snapshot, local_files_only=True,
                                                              dtype=torch.float32).eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    eos = model.generation_config.eos_token_id
    answers = []
    for language, prompts in json.load(open(prompts_file, encoding="utf-8")):
        texts = [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
                 for p in prompts]
        out = []
        for start in range(0, len(texts), batch):
            enc = tok(texts[start:start + batch], add_special_tokens=False, padding=True, return_tensors="pt",
                      return_token_type_ids=False)
            with torch.inference_mode():
                ids = model.generate(**enc, do_sample=False, num_beams=1, max_new_tokens=max_new, eos_token_id=eos,
                                     pad_token_id=tok.pad_token_id)
            out += tok.batch_decode(ids[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        answers.append([language, out])
    json.dump(answers, open(out_file, "w", encoding="utf-8"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
