#!/usr/bin/env bash
# Set up and run the test suite, and say where the time went.
#   scripts/test.sh            the whole suite, in phases (what `make test` and CI run):
#     first, as root on Debian: the fast tier's Debian packages (see below), then the background
#     set-up starts, and runs while .venv is made (scripts/venv.sh) and the fast tier runs (elsewhere
#     the tests that need it skip, and under CI=true a skip is a failure):
#       services   one apt transaction for every Debian package the suite uses, dockerd, the
#                  debootstrapped bases, the Apptainer helper image, Slurm, OAR, sshd, and the CPU
#                  image build (it fills the wheelhouse and Docker's layer cache for the tests)
#       llama.cpp  the llama-cpp-python wheel (compiled once per machine) and .venv-llamacpp
#       engines    .venv-vllm, .venv-gliner2, .venv-gliclass
#     tests: the fast tier (no service), then the slow, integration and e2e tiers in one pytest
#     run, the engine tests last (never the images tier, tests/images: `make test-images`). A test
#     that needs a service or venv still being set up waits for
#     it on the set-up script's lock (every set-up script is idempotent and locked), never builds
#     it twice; a background step that failed is run again by the test that needs it.
#     Before the fast tier, in the foreground: the Debian packages of the programs the fast tier
#     runs (scripts/dev/packages.sh --fast-tier), so that it never races the install; the fast tier
#     runs with KIT_TEST_TIER=fast, under which it fails if it starts a program from any other package
#     than those and a Debian 12 base machine's (tests/programs.py).
#   scripts/test.sh ARGS...    .venv (and, as root on Debian, the packages), then one pytest run
#                              with ARGS; services start on demand.
#   scripts/test.sh --plan     print the phases in the order they would start (fg: the script waits
#                              for it; bg: in the background), one "fg|bg<TAB>NAME<TAB>COMMAND" a
#                              line, as they would run as root on Debian; run nothing.
# At the end: a table of every phase (start, seconds, result), pytest's 30 slowest tests, and the
# logs of the background phases under $KIT_TEST_LOGS (default build/test-logs).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
plan=0
if [ "${1:-}" = --plan ]; then
  plan=1
  shift
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TESTCONTAINERS_RYUK_DISABLED=true
logs=${KIT_TEST_LOGS:-build/test-logs}
case $logs in /*) ;; *) logs="$PWD/$logs" ;; esac
export KIT_TEST_LOGS=$logs
phases=$logs/phases.tsv
export KIT_TEST_TIMES=$logs/tiers.tsv
if [ "$plan" = 0 ]; then
  mkdir -p "$logs"
  : >"$phases"
  : >"$KIT_TEST_TIMES"
fi
t0=$(date +%s)
where='fg'

# phase NAME CMD...: run CMD, record NAME, its start (seconds after t0), its seconds and exit status.
# Under --plan: print "fg|bg<TAB>NAME<TAB>CMD" and run nothing.
phase() {
  local name=$1 start rc=0
  shift
  if [ "$plan" = 1 ]; then
    printf '%s\t%s\t%s\n' "$where" "$name" "$*"
    return 0
  fi
  start=$(date +%s)
  "$@" || rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$((start - t0))" "$(($(date +%s) - start))" "$rc" >>"$phases"
  return "$rc"
}

# background NAME FUNCTION: run FUNCTION in the background, its output in $logs/NAME.log.
pids=() names=()
background() {
  if [ "$plan" = 1 ]; then
    where='bg' "$2"
    return 0
  fi
  # niced: the tests in the foreground come first; the builds take the CPU the tests leave idle
  (renice -n 10 "$BASHPID" >/dev/null && "$2") >"$logs/$1.log" 2>&1 &
  pids+=("$!") names+=("$1")
}

# The background set-up chains; each stops at its first failure (the tests that need the rest then
# set it up themselves through the same idempotent scripts, or fail naming it).
setup_services() {
  # in the order the tests first need them: OAR and its frontend, Slurm, then Docker and images;
  # after the packages, a service that fails does not hold back the next (its tests start it again)
  local rc=0
  phase "services: Debian packages (one apt run)" bash scripts/dev/packages.sh || return
  phase "services: OAR" bash scripts/dev/oar.sh start || rc=1
  phase "services: sshd frontend" bash scripts/dev/sshd.sh start || rc=1
  phase "services: Slurm" bash scripts/dev/slurm.sh start || rc=1
  phase "services: dockerd" bash scripts/dev/dockerd.sh start &&
    phase "images: bases, Apptainer helper" bash scripts/images/tools.sh &&
    phase "images: .venv (the foreground's, waited for on its lock)" bash scripts/venv.sh &&
    phase "images: transformers-5.17 cpu build" env KIT_IMAGES_LOCK="$logs/images.lock.json" \
      KIT_IMAGES_DIR="$logs/images" .venv/bin/kit images build transformers-5.17 --variant cpu \
      --wheelhouse "${KIT_WHEELHOUSE:-$HOME/.cache/kit/wheelhouse}" --quiet || rc=1
  return "$rc"
}
setup_llamacpp() {
  phase "engines: llama.cpp wheel (compile)" bash scripts/backends/llamacpp-venv.sh --wheel &&
    phase "engines: .venv-llamacpp" bash scripts/backends/llamacpp-venv.sh
}
setup_engines() {
  phase "engines: .venv-vllm" bash scripts/backends/vllm-venv.sh &&
    phase "engines: .venv-gliner2, .venv-gliclass" bash scripts/backends/gl-venv.sh
}

table() {
  local total=$(($(date +%s) - t0))
  printf '\n%s\n' "---------------------------------------------------------- where the time went"
  awk -F'\t' 'BEGIN { printf "%-40s %7s %8s  %s\n", "phase", "start", "seconds", "result" }
              { printf "%-40s %7s %8s  %s\n", $1, $2, $3, ($4 == 0 ? "ok" : "FAILED (exit " $4 ")") }' "$phases"
  [ -s "$KIT_TEST_TIMES" ] && awk -F'\t' '{ printf "%-40s %7s %8.0f  %s passed, %s failed\n", $1, "", $2, $3, $4 }' "$KIT_TEST_TIMES"
  printf '%-40s %7s %8s\n' "total (wall)" "" "$total"
  printf 'background logs: %s\n' "$logs"
}
[ "$plan" = 1 ] || trap table EXIT

root_on_debian=0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && root_on_debian=1
[ "$plan" = 0 ] || root_on_debian=1
rc=0
if [ $# -eq 0 ] && [ "$root_on_debian" = 1 ]; then
  # first, and waited for: what the fast tier runs; then the rest starts in the background while
  # .venv is made and the fast tier runs (none of it needs .venv but the image build, which waits)
  phase "packages: the fast tier's programs" bash scripts/dev/packages.sh --fast-tier || rc=$?
  background services setup_services
  background llama.cpp setup_llamacpp
  background engines setup_engines
fi
phase "venv (.venv)" bash scripts/venv.sh
if [ $# -gt 0 ]; then
  [ "$root_on_debian" = 0 ] || phase "services: Debian packages (one apt run)" bash scripts/dev/packages.sh
  phase "tests: pytest $*" .venv/bin/python -m pytest "$@" || rc=$?
  exit "$rc"
fi

phase "tests: fast tier (no service)" env KIT_TEST_TIER=fast .venv/bin/python -m pytest \
  -m "not slow and not integration and not e2e and not images" --durations=10 || rc=$?
# The rest in one run, in the order their background set-up ends: first what needs no service or
# only the packages, OAR and Slurm; then what needs Docker and the CPU image; the tests of the
# engine venvs last (a test that needs a venv or service still being set up waits for it on its lock).
main=(tests/unit tests/faults) docker=() engines=()
for f in tests/e2e/test_*.py tests/integration/test_*.py; do
  case $f in
    */test_backends_*) engines+=("$f") ;;
    */test_slurm_sweep.py | */test_dev_services.py | */test_build_stages.py | */test_image_libraries.py | \
      */test_images.py | */test_reproduce_guide_images.py | */test_slurm_apptainer.py | \
      */test_images_at_a_site.py) docker+=("$f") ;;
    *) main+=("$f") ;;
  esac
done
phase "tests: slow, integration, e2e tiers" .venv/bin/python -m pytest -m "(slow or integration or e2e) and not images" \
  --durations=30 "${main[@]}" "${docker[@]}" "${engines[@]}" || rc=$?
[ "$plan" = 0 ] || exit 0
# A background step that failed was run again by the tests that needed it (they pass or fail on
# their own); its log is still worth a look.
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "test.sh: WARNING: background set-up '${names[$i]}' failed; its log: $logs/${names[$i]}.log" >&2
                          tail -n 30 "$logs/${names[$i]}.log" >&2; }
done
# pytest exits 5 when nothing was collected: that is a failure for us, not a pass.
exit "$rc"
