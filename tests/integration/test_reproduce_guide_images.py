"""REPRODUCE.md's image steps, followed literally: build the image, run the demo in it,
reproduce through Docker, then convert to SIF and sqsh, verify, and reproduce through each."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from guide import IMAGE_STEPS, REPO, run_step, sandbox  # noqa: E402

from kit.images.spec import kit_commit  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]


def test_guide_image_steps(cpu_image_env, tmp_path_factory):
    import tempfile

    box = sandbox(Path(tempfile.mkdtemp(prefix="kit-guide-", dir="/var/tmp")))
    os.chmod(box, 0o755)
    cache = tmp_path_factory.mktemp("guide-cache")
    os.chmod(cache, 0o755)
    # The sandbox is a copy without .git: KIT_COMMIT names the commit its image is built from, so the
    # guide's build is the session's image (same id) and its conversions are found up to date.
    env = {**os.environ, **cpu_image_env, "KIT_CACHE_DIR": str(cache), "KIT_COMMIT": kit_commit(REPO)}
    env.pop("VIRTUAL_ENV", None)
    for name in IMAGE_STEPS:
        r = run_step(name, box, env, timeout=3000)
        assert r.returncode == 0, f"step {name!r} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
        out = r.stdout + r.stderr
        if name == "image":
            assert "status: 6 complete" in out and "REPRODUCED" in out
            ckpt = json.loads((box / "kit-demo-docker/results/en/kit-demo__tiny-llama.json").read_text())
            lock = json.loads(Path(cpu_image_env["KIT_IMAGES_LOCK"]).read_text())
            assert ckpt["provenance"]["image"]["digest"] == lock["images"]["transformers-5.17"]["image_id"]
            assert ckpt["provenance"]["job"]["runtime"] == "docker"
        if name == "convert":
            assert out.count("REPRODUCED") == 2, out
            for sub in ("reproduce-sif", "reproduce-sqsh"):
                v = json.loads((box / f"kit-demo-docker/{sub}/reproduce-kit-demo__tiny-llama-en.json").read_text())
                assert v["verdict"] == "REPRODUCED" and v["image"]["matches_record"]
