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
set -euo pipefail
cd "$(dirname "$0")/../.."
which=${1:-all}
py=${PYTHON:-python3}
torch_spec=${KIT_TORCH_SPEC:-torch==2.13.0}
export PIP_DISABLE_PIP_VERSION_CHECK=1
quiet() { grep -v -e '^WARNING: Location' || true; }

setup() {  # name venv import-check requirement...
  local name=$1 venv=$2 check=$3; shift 3
  case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac
  local t0 stamp want
  t0=$(date +%s)
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  stamp="$venv/.kit-$name"
  want="$(sha256sum pyproject.toml | cut -c1-16) $torch_spec $*"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "gl-venv.sh: $venv is up to date"
    return 0
  fi
  "$venv/bin/python" -m pip install -q "$torch_spec" 2>&1 | quiet
  "$venv/bin/python" -m pip install -q "$@" 2>&1 | quiet
  (cd / && "$venv/bin/python" -c "$check") || { echo "gl-venv.sh: $name does not import in $venv" >&2; exit 1; }
  echo "$want" > "$stamp"
  echo "gl-venv.sh: $venv ready in $(( $(date +%s) - t0 ))s ($(du -sh "$venv" | cut -f1))"
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
