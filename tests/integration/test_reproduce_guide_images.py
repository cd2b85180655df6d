"""REPRODUCE.md's image steps, followed literally: build the image, run the demo in it,
reproduce through Docker, then convert to SIF and sqsh, verify, and reproduce through each; then
the reviewer's path from a published release: the demo's results released and published with their
SIF to the local stand-in hub (tests/hubserver.py, the real HfApi), the SIF pulled back and the
result reproduced from it."""

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
        if name == "published":
            env = {**env, **_publish_demo_release(box, env)}
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
        if name == "published":
            assert "REPRODUCED" in out and "as the card lists; recorded in published-images/images.lock.json" in out
            v = json.loads((box / "kit-demo-docker/reproduce-published/reproduce-kit-demo__tiny-llama-en.json")
                           .read_text())
            assert v["verdict"] == "REPRODUCED" and v["image"]["matches_record"]
            assert "published-images/" in v["image"]["ref"]     # the pulled SIF, not build/images' own


def _publish_demo_release(box: Path, env: dict[str, str]) -> dict[str, str]:
    """The authors' side: the demo's results released and published with their SIF to a stand-in hub
    that then serves the commit as the dataset repo; the reviewer's environment to reach it."""
    import atexit
    import subprocess

    from hubserver import HubServer, Repo

    hub = HubServer({})
    endpoint = hub.start()
    atexit.register(hub.stop)
    online = {**env, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": endpoint}
    for argv in (["release", "kit-demo-docker/results", "-o", "kit-demo-docker/release",
                  "--roster", "kit-demo-docker/roster.toml"],
                 ["publish", "me/kit-demo", "kit-demo-docker/release", "--with-images", "sif"]):
        r = subprocess.run([sys.executable, "-m", "kit", *argv], cwd=box, env=online, capture_output=True, text=True,
                           timeout=1800)
        assert r.returncode == 0, f"kit {argv[0]}: {r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    (commit,) = hub.commits
    served = box / "hub-served"
    for rel, data in commit.files.items():
        (served / rel).parent.mkdir(parents=True, exist_ok=True)
        (served / rel).write_bytes(data)
    commit.files.clear()   # the SIF's bytes, twice in memory otherwise
    hub.repos["me/kit-demo"] = Repo("c" * 40, served)
    return {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": endpoint, "KIT_RELEASE_REPO": "me/kit-demo"}
