#!/usr/bin/env bash
# Set up and run the test suite: the venv, then pytest. Integration tests start the real
# services they need (dockerd, Slurm, OAR, sshd) through scripts/dev/*.sh when run as root
# on Debian; elsewhere they skip with a reason, and under CI=true a skip is a failure.
#   scripts/test.sh                 full suite
#   scripts/test.sh -m "not slow"   any pytest arguments
set -euo pipefail
cd "$(dirname "$0")/.."
# System tools the tests use (as root on Debian/Ubuntu, as CI is; elsewhere those tests skip).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  command -v shellcheck >/dev/null || need+=(shellcheck)
  command -v git >/dev/null || need+=(git)
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
bash scripts/venv.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TESTCONTAINERS_RYUK_DISABLED=true
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
# pytest exits 5 when nothing was collected: that is a failure for us, not a pass.
exit $rc
