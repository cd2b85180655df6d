"""`make locks`: the uv command line of every lock (no network: the commands are built, not run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.errors import ConfigError
from kit.images import compile_locks

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "containers" / "images.toml"


@pytest.fixture
def jobs(monkeypatch):
    monkeypatch.setattr(compile_locks, "uv_command", lambda: ["uv"])
    return lambda env=None, **kw: {j.lock: list(j.argv) for j in compile_locks.lock_jobs(IMAGES, env=env or {}, **kw)}


def test_one_job_per_lock_file_each_from_its_in_file(jobs):
    got = jobs()
    # every lock but gguf's prebuilt CPU wheel lock (written by scripts/images/gguf-cpu-wheel.sh)
    assert len(got) == 19 and "containers/gguf/llama-cpp-python-cpu.lock" not in got
    for lock, argv in got.items():
        assert argv[:3] == ["uv", "pip", "compile"]
        assert lock.replace(".lock", ".in") in argv
        assert argv[argv.index("--output-file") + 1] == lock
        assert "--generate-hashes" in argv and argv[argv.index("--custom-compile-command") + 1] == "make locks"
        # glibc 2.28 wheels, except vllm's Debian locks (Debian 12's 2.36: llguidance 1.7 has manylinux_2_31 only)
        glibc = "2_36" if lock in ("containers/vllm/requirements-cpu.lock",
                                   "containers/vllm/requirements-cuda-bookworm.lock") else "2_28"
        assert argv[argv.index("--python-platform") + 1] == f"x86_64-manylinux_{glibc}"


def test_runtime_locks_take_kits_extra_build_locks_do_not(jobs):
    got = jobs()
    assert got["containers/transformers-5.11/requirements.lock"][3:6] == ["pyproject.toml", "--extra", "worker"]
    # gliner2 runs transformers<5: its extra is the worker without the Transformers 5 pin
    assert got["containers/gliner2/requirements.lock"][3:6] == ["pyproject.toml", "--extra", "gliner2"]
    for lock in ("containers/gguf/build-tools.lock", "containers/gguf/llama-cpp-python.lock"):
        assert "pyproject.toml" not in got[lock]
    assert got["containers/gguf/llama-cpp-python.lock"][-1] == "--no-deps"
    assert got["containers/gguf/requirements.lock"][-2:] == ["--no-emit-package", "llama-cpp-python"]


def test_each_lock_targets_its_images_python(jobs):
    got = jobs()
    version = lambda argv: argv[argv.index("--python-version") + 1]  # noqa: E731
    assert version(got["containers/transformers-5.17/requirements-cpu.lock"]) == "3.11"
    assert version(got["containers/transformers-5.17/requirements-cuda.lock"]) == "3.12"


def test_torch_cpu_source_is_the_pytorch_index_or_a_local_folder(jobs):
    cpu = "containers/transformers-5.17/requirements-cpu.lock"
    online = jobs()[cpu]
    assert online[-4:] == ["--extra-index-url", compile_locks.TORCH_CPU_INDEX, "--index-strategy", "unsafe-best-match"]
    mirror = jobs({"KIT_TORCH_CPU_INDEX": "https://mirror.example/cpu"})[cpu]
    assert "https://mirror.example/cpu" in mirror
    offline = jobs({"KIT_TORCH_CPU_FIND_LINKS": "/srv/wheels"})[cpu]
    assert offline[-2:] == ["--find-links", "/srv/wheels"] and "--extra-index-url" not in offline
    # only the CPU lock gets the CPU torch source: the CUDA lock must never resolve torch==2.13.0+cpu
    assert "--find-links" not in jobs({"KIT_TORCH_CPU_FIND_LINKS": "/srv/wheels"})[cpu.replace("cpu", "cuda")]


def test_cuda_variant_locks_take_pypi_or_a_local_mirror_of_the_cuda_wheels(jobs):
    locks = ["containers/transformers-5.17/requirements-cuda-bookworm.lock", "containers/gguf/requirements-cuda.lock",
             "containers/gguf/cuda-toolkit.lock", "containers/vllm/requirements-cuda-bookworm.lock"]
    online = jobs()
    for lock in locks:   # PyPI holds torch's CUDA build and the nvidia-* wheels: no extra source
        assert "--extra-index-url" not in online[lock] and "--find-links" not in online[lock], lock
        assert online[lock][online[lock].index("--python-version") + 1] == "3.11"
    assert online["containers/gguf/requirements-cuda.lock"][3:6] == ["pyproject.toml", "--extra", "gguf"]
    assert "pyproject.toml" not in online["containers/gguf/cuda-toolkit.lock"]
    mirror = jobs({"KIT_CUDA_INDEX": "file:///srv/a/simple file:///srv/b/simple"})[locks[0]]
    assert mirror[-6:] == ["--extra-index-url", "file:///srv/a/simple", "--extra-index-url", "file:///srv/b/simple",
                           "--index-strategy", "unsafe-best-match"]
    folder = jobs({"KIT_CUDA_FIND_LINKS": "/srv/wheels"})[locks[2]]
    assert folder[-4:] == ["--find-links", "/srv/wheels", "--index-strategy", "unsafe-best-match"]
    # the CPU torch source never reaches a CUDA lock, nor the CUDA one a CPU lock
    assert "--find-links" not in jobs({"KIT_TORCH_CPU_FIND_LINKS": "/srv/cpu"})[locks[0]]
    assert "--find-links" not in jobs({"KIT_CUDA_FIND_LINKS": "/srv/wheels"})["containers/gguf/requirements-cpu.lock"]


def test_upgrade_and_name_selection(jobs):
    got = jobs(names=["gguf"], upgrade=True)
    assert set(got) == {"containers/gguf/requirements.lock", "containers/gguf/build-tools.lock",
                        "containers/gguf/llama-cpp-python.lock", "containers/gguf/requirements-cpu.lock",
                        "containers/gguf/requirements-cuda.lock", "containers/gguf/cuda-toolkit.lock",
                        "containers/gguf/requirements-cuda11.lock"}
    assert all(argv[-1] == "--upgrade" for argv in got.values())
    with pytest.raises(ConfigError) as exc:
        jobs(names=["nope"])
    assert "nope" in exc.value.one_line()


def test_an_invalid_lock_names_the_key_and_the_problem(tmp_path):
    from kit.errors import ConfigError
    from kit.images.built import load_lock

    bad = tmp_path / "images.lock.json"
    bad.write_text('{"images": {"vllm": {"backend": 3}}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not a valid images lock \(images\.vllm\.backend: Input should be a valid string\)"):
        load_lock(bad)


def test_check_with_a_lock_that_is_not_there_is_bad_input(tmp_path):
    from click.testing import CliRunner

    from kit.cli.main import cli

    (tmp_path / "results").mkdir()
    r = CliRunner().invoke(cli, ["check", str(tmp_path / "results"), "--images-lock", str(tmp_path / "nope.json")])
    assert "--images-lock" in str(r.exception) and "no such file" in str(r.exception)


_IMAGE = {"backend": "gguf", "tag": "kit/gguf:1", "image_id": "sha256:" + "0" * 64, "dockerfile_sha256": "aa",
          "lock_sha256": "bb", "base": "debian:12", "kit_version": "0.1", "built_at": "2026-01-01T00:00:00Z",
          "artifacts": {"sif": {"file": "kit-gguf-000000000000.sif", "sha256": "cc"}}}


@pytest.mark.parametrize("text,said", [
    ('{"kit_images_lock_version": 1, "images": {"gguf": IMAGE, "gguf": IMAGE}}', "'gguf' is given twice"),
    ('{"kit_images_lock_version": 99, "images": {}}', "version 99 is not 1"),
    ('{"kit_images_lock_version": "1", "images": {}}', "kit_images_lock_version: Input should be a valid integer"),
    ('{"kit_images_lock_version": 1, "images": {"vllm": IMAGE}}', "the image under 'vllm' records backend 'gguf'"),
    ('{"kit_images_lock_version": 1, "images": {"gguf": ESCAPING}}', "artifact file name"),
])
def test_a_lock_kit_could_misread_is_refused_naming_what(tmp_path, text, said):
    """Every reader of the images lock (verify, convert, push, the launcher, check) gets one that means one
    thing: no key given twice, this kit's version, each image under its own backend, each artifact a name
    in the artifacts folder (never a path that leaves it)."""
    import json

    from kit.errors import ConfigError
    from kit.images.built import load_lock

    escaping = {**_IMAGE, "artifacts": {"sif": {"file": "../../etc/hostname", "sha256": "cc"}}}
    path = tmp_path / "images.lock.json"
    path.write_text(text.replace("ESCAPING", json.dumps(escaping)).replace("IMAGE", json.dumps(_IMAGE)), encoding="utf-8")
    with pytest.raises(ConfigError, match=said) as err:
        load_lock(path)
    assert str(path) in err.value.one_line() and "git" not in err.value.fix
    path.write_text(json.dumps({"kit_images_lock_version": 1, "images": {"gguf": _IMAGE}}), encoding="utf-8")
    assert load_lock(path).images["gguf"].artifacts["sif"].file == "kit-gguf-000000000000.sif"


def test_a_lock_path_that_cannot_be_one_is_not_read_as_nothing_built(tmp_path):
    from kit.errors import ConfigError
    from kit.images.built import load_lock

    assert load_lock(tmp_path / "images.lock.json").images == {}   # nothing built here yet
    with pytest.raises(ConfigError, match="its folder does not exist"):
        load_lock(tmp_path / "typo" / "images.lock.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(ConfigError, match="a broken link"):
        load_lock(tmp_path / "link.json")
