#!/usr/bin/env bash
# Set up the GLiNER2 and GLiClass engines for tests and host runs, one venv each, since they need
# different transformers majors:
#   .venv-gliner2   torch, gliner2[local]==2.1.0 with transformers<5 (4.57.x; hub<1), kit without its
#                   worker extra (that extra asks for transformers>=5), plus mlperf-logging and numpy
#   .venv-gliclass  torch, gliclass==0.1.21 (needs transformers>=5) with transformers==5.17.0, kit[worker]
#   scripts/backends/gl-venv.sh [gliner2|gliclass|all]     (default all)
#   KIT_GLINER2_VENV, KIT_GLICLASS_VENV   venv folders (defaults above)
#   KIT_GLINER2_SPEC (gliner2[local]==2.1.0), KIT_GLICLASS_SPEC (gliclass==0.1.21),
#   KIT_GLICLASS_TRANSFORMERS (transformers==5.17.0), KIT_TORCH_SPEC (torch==2.13.0)
# Idempotent; a second caller waits for the first. Each step's output is in VENV/.kit-setup.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
which=${1:-all}
py=${PYTHON:-python3}
torch_spec=${KIT_TORCH_SPEC:-torch==2.13.0}

setup() {  # name venv import-check requirement...
  local name=$1 venv=$2 check=$3 want
  shift 3
  case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac
  venv_lock "$venv"
  want="$(sha256sum pyproject.toml | cut -c1-16) $torch_spec $*"
  if venv_current "$venv" ".kit-$name" "$want"; then
    step "$venv is up to date"
    return 0
  fi
  venv_create "$py" "$venv"
  venv_pip "$venv" install -q "$torch_spec"
  venv_pip "$venv" install -q "$@"
  venv_check "$venv" "$name" "$check"
  echo "$want" > "$venv/.kit-$name"
  step "$venv ready ($(du -sh "$venv" | cut -f1))"
}

case $which in
  gliner2|all)
    setup gliner2 "${KIT_GLINER2_VENV:-.venv-gliner2}" 'import gliner2, transformers, kit.worker.shard' \
      -e . "${KIT_GLINER2_SPEC:-gliner2[local]==2.1.0}" "transformers<5" "mlperf-logging>=4.1" "numpy>=1.26" ;;&
  gliclass|all)
    setup gliclass "${KIT_GLICLASS_VENV:-.venv-gliclass}" 'import gliclass, transformers, kit.worker.shard' \
      -e ".[worker]" "${KIT_GLICLASS_SPEC:-gliclass==0.1.21}" "${KIT_GLICLASS_TRANSFORMERS:-transformers==5.17.0}" ;;
  gliner2) ;;
  *) echo "gl-venv.sh: unknown engine $which; use gliner2, gliclass or all" >&2; exit 2 ;;
esac
