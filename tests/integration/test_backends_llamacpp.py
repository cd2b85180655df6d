"""The gguf backend (llama-cpp-python, CPU build) for real, in its own venv
(scripts/backends/llamacpp-venv.sh): the GGUF written by kit.demo.gguf, refusals, and a
`kit shard` pair whose checkpoint `kit verify` accepts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from engines import kit_run_local_pair, local_site, shard_and_verify

from kit.demo.backends import roster_text, write_backend_benchmark
from kit.demo.model import build_tiny_llama, repo_folder

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def hub(tmp_path_factory, llamacpp_python) -> SimpleNamespace:
    """The tiny Llama (built here) and its F32 GGUF (written in the llama.cpp venv, which has `gguf`)."""
    cache = tmp_path_factory.mktemp("hub")
    llama = build_tiny_llama(cache)
    code = "import json, sys; from kit.demo.gguf import write_gguf; print(json.dumps(write_gguf(sys.argv[1])))"
    gguf = [tuple(json.loads(_ok(llamacpp_python, "-c", code, str(cache)).stdout)) for _ in range(2)]
    assert gguf[0] == gguf[1], "writing the GGUF twice must give the same revision"
    return SimpleNamespace(cache=cache, llama=llama, gguf=gguf[0])


def _ok(python: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    r = subprocess.run([str(python), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def _probe(python: Path, hub, *inputs: str, max_new_tokens: int = 8, **options) -> subprocess.CompletedProcess:
    repo_id, revision = hub.gguf
    return subprocess.run(
        [str(python), "-m", "kit.worker.backends.probe", "--backend", "gguf", "--model", repo_id,
         "--revision", revision, "--cache-dir", str(hub.cache), "--max-new-tokens", str(max_new_tokens),
         "--options", json.dumps(options), *[a for i in inputs for a in ("--input", i)]],
        cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)


def test_gguf_reads_back_with_llama_metadata_and_chat_template(llamacpp_python, hub):
    path = repo_folder(hub.cache, hub.gguf[0]) / "snapshots" / hub.gguf[1] / "tiny-llama-f32.gguf"
    code = ("import json, sys, gguf; r = gguf.GGUFReader(sys.argv[1]); f = r.fields; "
            "s = lambda k: bytes(f[k].parts[f[k].data[0]]).decode(); n = lambda k: int(f[k].parts[f[k].data[0]][0]); "
            "print(json.dumps({'arch': s('general.architecture'), 'type': n('general.file_type'), "
            "'tok': s('tokenizer.ggml.model'), 'pre': s('tokenizer.ggml.pre'), 'ctx': n('llama.context_length'), "
            "'template': s('tokenizer.chat_template'), 'tensors': len(r.tensors), "
            "'dtypes': sorted({t.tensor_type.name for t in r.tensors})}))")
    facts = json.loads(_ok(llamacpp_python, "-c", code, str(path)).stdout)
    assert facts["arch"] == "llama" and facts["type"] == 0 and facts["dtypes"] == ["F32"]
    assert (facts["tok"], facts["pre"], facts["ctx"], facts["tensors"]) == ("gpt2", "gpt-2", 2048, 3 + 2 * 9)
    assert facts["template"].startswith("{{ bos_token }}")
    origin = json.loads(path.with_name("kit-gguf.json").read_text())
    assert (origin["source_repo"], origin["source_revision"]) == hub.llama


def test_generation_reports_the_gguf_and_is_deterministic(llamacpp_python, hub):
    prompts = ["Oui ou non ?", "The river flows past a wetland."]
    runs = [json.loads(_probe(llamacpp_python, hub, *prompts, quantization="F32").stdout) for _ in range(2)]
    assert runs[0]["outputs"] == runs[1]["outputs"]
    info = runs[0]["model_info"]
    assert info == {"gguf_file": "tiny-llama-f32.gguf", "quantization": "F32", "n_ctx": 2048, "n_ctx_train": 2048,
                    "chat_template": True}
    assert runs[0]["versions"]["llama_cpp_python"] == "0.3.36"
    for out in runs[0]["outputs"]:
        assert out["truncated"] is (out["generated_tokens"] == 8) and len(out["token_ids"]) == out["generated_tokens"]
    # the GGUF's own template renders the bos token and the user/assistant turn
    assert runs[0]["encoded"][0][0] == 2


def test_prompt_plus_budget_over_n_ctx_is_refused(llamacpp_python, hub):
    r = _probe(llamacpp_python, hub, "short", "forest " * 1500, max_new_tokens=600)
    assert r.returncode == 2
    assert "input 1 of this batch" in r.stderr and "(2048 context - 600 max_new_tokens)" in r.stderr
    small = _probe(llamacpp_python, hub, "forest " * 100, max_new_tokens=4, n_ctx=64)
    assert small.returncode == 2 and "(64 context - 4 max_new_tokens)" in small.stderr


def test_wrong_quantization_or_file_is_refused(llamacpp_python, hub):
    r = _probe(llamacpp_python, hub, "x", quantization="Q4_K_M")
    assert r.returncode == 2 and "tiny-llama-f32.gguf is F32, not Q4_K_M" in r.stderr
    r = _probe(llamacpp_python, hub, "x", gguf_file="../other.gguf")   # refused as the roster is read, one line
    assert r.returncode == 2 and "options.gguf_file = '../other.gguf' is not a .gguf file's path inside the model's " \
        "snapshot" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = _probe(llamacpp_python, hub, "x", gguf_file="other.gguf")   # a good path the snapshot lacks: the worker's
    assert r.returncode == 2 and "is not a .gguf file of snapshot" in r.stderr


def test_kit_shard_pair_is_verified_and_names_llama_cpp(llamacpp_python, hub, tmp_path):
    bench = write_backend_benchmark(tmp_path / "bench")
    repo_id, revision = hub.gguf
    run = {"model": repo_id, "revision": revision, "backend": "gguf", "batch_size": 8, "max_new_tokens": 8,
           "options": {"gguf_file": "tiny-llama-f32.gguf", "quantization": "F32", "n_ctx": 1024}}
    (tmp_path / "roster.toml").write_text(roster_text([run], bench), encoding="utf-8")
    data = shard_and_verify(llamacpp_python, tmp_path, "en", hub.cache, ENV)
    prov = data["provenance"]
    assert prov["packages"]["llama_cpp_python"] == "0.3.36" and prov["image"]["backend"] == "gguf"
    assert list(prov["model"]["weight_files_sha256"]) == ["tiny-llama-f32.gguf"]
    assert data["metadata"]["options"]["quantization"] == "F32" and data["speed"]["generated_tokens"] > 0


def test_kit_run_site_local_completes_a_gguf_pair(llamacpp_python, hub, tmp_path):
    """`kit run --site local --model <tiny-gguf>`: the launcher's job script, run here with the
    llama.cpp venv as the host runtime, writes a checkpoint that `kit status` counts complete."""
    bench = write_backend_benchmark(tmp_path / "bench")
    repo_id, revision = hub.gguf
    run = {"model": repo_id, "revision": revision, "backend": "gguf", "batch_size": 8, "max_new_tokens": 4,
           "options": {"gguf_file": "tiny-llama-f32.gguf", "quantization": "F32", "n_ctx": 1024}}
    (tmp_path / "roster.toml").write_text(roster_text([run], bench), encoding="utf-8")
    (tmp_path / "sites.toml").write_text(local_site(llamacpp_python, hub.cache), encoding="utf-8")
    data = kit_run_local_pair(tmp_path, repo_id, "en", ENV)
    assert data["provenance"]["job"]["job_id"].startswith("local-") and data["provenance"]["image"]["backend"] == "gguf"
