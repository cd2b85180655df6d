#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv by default) with kit, its
# worker extra (transformers, mlperf-logging), the report extra and the test tools.
# Idempotent: reinstalls only when pyproject.toml changed. Each step's output is in
# VENV/.kit-setup.log; a failing step prints its name and the log's last lines.
#   KIT_VENV       venv folder            (default: .venv)
#   KIT_TORCH_SPEC torch requirement       (default: torch==2.13.0, the CPU build on this project's machines)
#   KIT_EXTRAS     extras to install       (default: worker,report,images,publish,sign,fast,demo,test)
#   PYTHON         interpreter for the venv (default: python3; >= 3.11)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
venv=${KIT_VENV:-.venv}
torch_spec=${KIT_TORCH_SPEC:-torch==2.13.0}
extras=${KIT_EXTRAS:-worker,report,images,publish,sign,fast,demo,test}
py=${PYTHON:-python3}
case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "venv.sh: $py is $("$py" --version 2>&1); kit needs Python >= 3.11 (set PYTHON=...)" >&2
  exit 2
fi
venv_lock "$venv"
stamp=.kit-installed
want="$(sha256sum pyproject.toml | cut -c1-16) $torch_spec $extras"
if venv_current "$venv" "$stamp" "$want"; then
  step "$venv is up to date"
  exit 0
fi
venv_create "$py" "$venv"
quiet "$KIT_VENV_LOG" "$venv/bin/python" -m pip install -q --upgrade pip || warn "pip could not upgrade itself; going on with $("$venv/bin/python" -m pip --version | cut -d" " -f2)"
venv_pip "$venv" install -q "$torch_spec"
venv_check "$venv" "torch ($torch_spec)" 'import torch'
venv_pip "$venv" install -q -e ".[$extras]"
venv_check "$venv" "kit with [$extras]" 'import kit.cli.main, transformers, mlperf_logging'
echo "$want" > "$venv/$stamp"
step "$venv ready"
