"""A multi-stage build's stage images: Docker keeps them as the next build's cache (a CUDA image's
hold its wheels and venv, 9 to 15 GB); `kit images build --drop-build-stages` (and any build with a
CA bundle) removes them and nothing else: the final image, its layers and the tagged base stay."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kit.images import engine
from kit.images.build import _drop_build_stages
from kit.images.progress import Progress

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]


def test_dropping_build_stages_removes_the_stage_images_only(tmp_path):
    subprocess.run(["bash", str(REPO / "scripts/dev/dockerd.sh"), "start"], check=True, capture_output=True)
    subprocess.run(["bash", str(REPO / "scripts/bootstrap-base.sh"), "bookworm", "kit/base:bookworm"], check=True,
                   capture_output=True)
    (tmp_path / "Dockerfile").write_text(
        "FROM kit/base:bookworm AS build\nRUN echo stage > /a\nRUN head -c 1048576 /dev/urandom > /cache\n"
        "FROM kit/base:bookworm\nCOPY --from=build /a /a\nRUN echo final > /b\n")
    api = engine.client().api
    progress = Progress("test build", quiet=True)
    image_id = None
    for event in api.build(path=str(tmp_path), decode=True, rm=True, nocache=True):
        image_id = progress.build_event(event) or image_id
    assert image_id
    final_chain = {h["Id"] for h in api.history(image_id) if h.get("Id", "<missing>") != "<missing>"}
    base_id = engine.image_attrs("kit/base:bookworm")["Id"]
    stages = [i for i in progress.layers if not any(f.split(":")[-1].startswith(i) for f in final_chain | {base_id})]
    assert len(stages) == 2            # the two RUN steps of the build stage
    try:
        _drop_build_stages(image_id, progress.layers, progress, bundle=False)
        for short in stages:
            with pytest.raises(Exception):
                api.inspect_image(short)
        for kept in final_chain | {base_id}:
            assert api.inspect_image(kept)["Id"] == kept
    finally:
        subprocess.run(["docker", "rmi", "-f", image_id], capture_output=True)
