#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv by default) with kit, its
# worker extra (transformers, mlperf-logging), the report extra and the test tools.
# Idempotent: reinstalls only when pyproject.toml changed.
#   KIT_VENV       venv folder            (default: .venv)
#   KIT_TORCH_SPEC torch requirement       (default: torch==2.13.0, the CPU build on this project's machines)
#   KIT_EXTRAS     extras to install       (default: worker,report,images,test)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${KIT_VENV:-.venv}
torch_spec=${KIT_TORCH_SPEC:-torch==2.13.0}
extras=${KIT_EXTRAS:-worker,report,images,test}
py=${PYTHON:-python3}
t0=$(date +%s)
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "venv.sh: $py is $("$py" --version 2>&1); kit needs Python >= 3.11 (set PYTHON=...)" >&2
  exit 2
fi
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
stamp="$venv/.kit-installed"
want="$(sha256sum pyproject.toml | cut -c1-16) $torch_spec $extras"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "venv.sh: $venv is up to date"
  exit 0
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
"$venv/bin/python" -m pip install -q "$torch_spec" 2>&1 | grep -v -e '^WARNING: Location' || true
"$venv/bin/python" -c 'import torch' || { echo "venv.sh: torch did not install ($torch_spec)" >&2; exit 1; }
"$venv/bin/python" -m pip install -q -e ".[$extras]" 2>&1 | grep -v -e '^WARNING: Location' || true
"$venv/bin/python" -c 'import kit.cli.main, transformers, mlperf_logging' || { echo "venv.sh: install incomplete" >&2; exit 1; }
echo "$want" > "$stamp"
echo "venv.sh: $venv ready in $(( $(date +%s) - t0 ))s"
