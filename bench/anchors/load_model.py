"""The end of a per-job environment sync: import torch and transformers and load the tiny model, as a
job does before its first prompt.

    python load_model.py SNAPSHOT
"""

import sys

import torch
import transformers

tok = transformers.AutoTokenizer.from_pretrained(sys.argv[1], local_files_only=True)
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], local_files_only=True, dtype=torch.float32)
print(type(model).__name__, len(tok))
