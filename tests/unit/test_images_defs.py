"""apptainer/*.def: regenerated from the Dockerfiles with spython, fixed where it is lossy."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.images import spec
from kit.images.apptainer_def import preprocess, render, runscript

pytest.importorskip("spython", reason="spython is not installed (pip install spython)")

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "containers" / "images.toml"
DEFAULTS = [t for t in spec.all_targets(IMAGES) if t.variant is None]


@pytest.mark.parametrize("t", DEFAULTS, ids=lambda t: t.name)
def test_committed_definition_equals_its_regeneration(t):
    path = REPO / "apptainer" / f"{t.name}.def"
    assert path.is_file(), f"missing {path}: run kit images defs"
    assert path.read_text() == render(t), f"{path} is stale: run kit images defs (make apptainer-defs)"


@pytest.mark.parametrize("t", DEFAULTS, ids=lambda t: t.name)
def test_every_stage_is_kept_and_the_last_copies_from_an_earlier_one(t):
    text = render(t)
    stages = [line.split(": ")[1] for line in text.splitlines() if line.startswith("Stage: ")]
    assert len(stages) >= 2 and stages[-1] == "final"
    assert text.count("Bootstrap: {{ BOOTSTRAP }}") == len(stages) == text.count("%arguments")
    last = text.split("Stage: final", 1)[1]
    assert "%files from " in last and "/opt/venv /opt/venv" in last
    assert ".kit-buil[d]" not in text  # kit's own context folder never reaches an Apptainer build
    before_env = text.split("%environment")[0].replace("$PATH", "").replace("${APPTAINER_ROOTFS}", "")
    assert "$TORCH_VARIANT" not in text and "${" not in before_env


def test_args_become_apptainer_build_arguments_with_the_images_values():
    text = render(spec.target("gguf", None, IMAGES))
    assert "From: {{ BUILD_IMAGE }}" in text and "From: {{ BASE_IMAGE }}" in text
    assert "CMAKE_CUDA_ARCHITECTURES=70;75;80;86;89;90" in text
    assert "-DCMAKE_CUDA_ARCHITECTURES={{ CMAKE_CUDA_ARCHITECTURES }}" in text
    cpu = render(spec.target("transformers-5.17", None, IMAGES))
    assert "requirements-{{ TORCH_VARIANT }}.lock /opt/kit-build/requirements-{{ TORCH_VARIANT }}.lock" in cpu


SYNTHETIC = """\
# a demo
ARG PY=3.11
FROM python:${PY}-slim AS builder
ARG APP_VERSION=1.2.3
RUN echo "built $APP_VERSION" > /v
FROM debian:bookworm-slim
COPY --from=builder /v /opt/v
USER app
ENTRYPOINT ["python3", "-m", "app"]
CMD ["--port", "8080"]
"""


def test_preprocess_fixes_spythons_losses():
    header, body, args, users, inputs = preprocess(SYNTHETIC)
    assert header == "# a demo"
    assert args == {"PY": "3.11", "APP_VERSION": "1.2.3"}
    assert users == ["app"] and "USER" not in body and inputs == {}
    assert "FROM debian:bookworm-slim AS final" in body  # spython merges an unnamed stage otherwise
    assert "python:@@PY@@-slim" in body and "built @@APP_VERSION@@" in body


def test_runscript_replaces_cmd_and_keeps_entrypoint():
    lines = runscript(["python3", "-m", "app"], ["--port", "8080"])
    assert lines[1].strip() == 'exec python3 -m app "$@"'
    assert lines[3].strip() == "exec python3 -m app --port 8080"
    assert runscript(None, ["kit", "--help"])[1].strip() == 'exec "$@"'
