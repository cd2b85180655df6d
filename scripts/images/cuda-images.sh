#!/usr/bin/env bash
# Usage: scripts/images/cuda-images.sh [NAME...]     (root; what `make images-cuda` runs; never in CI)
#
# The CUDA variants without a registry (images.toml [image.NAME.variants.cuda]; default: transformers-5.17,
# gguf, vllm, those that have one), one at a time, offline from the wheelhouse on the bootstrapped Debian
# base: build (kit images build NAME --variant cuda --wheelhouse DIR), convert to SIF and sqsh, verify
# both content-equal to the image, lint; then print a table: image, unpacked size (docker), SIF and sqsh
# sizes (the compressed forms), build, SIF, sqsh and verify seconds, lint result. Each image is about
# 10 GB unpacked: this is a bench, not a test. gguf first makes its build stage's base,
# kit/base:bookworm-build (scripts/images/build-base.sh: the base plus g++ and make).
#   KIT_CUDA_VARIANT   the variant built (default cuda); cuda11 builds gguf's CUDA 11.8 variant for Volta
#                      (KIT_CUDA_VARIANT=cuda11 scripts/images/cuda-images.sh gguf), whose build stage's
#                      base is kit/base:bookworm-cuda11-build (scripts/images/build-base-cuda11.sh: Debian's
#                      CUDA 11.8 toolkit and g++-11), made first; images without that variant are skipped
#   KIT_WHEELHOUSE     the wheelhouse (default ~/.cache/kit/wheelhouse); filled from pip's indexes on the
#                      first build (PyPI has torch's CUDA build and NVIDIA's nvidia-* wheels)
#   KIT_IMAGES_LOCK    the lock of built images (default build/images/VARIANT/images.lock.json, e.g.
#                      build/images/cuda/images.lock.json: the CPU variants' lock is left alone)
#   KIT_IMAGES_DIR     where SIF and sqsh go (default build/images/VARIANT)
#   KIT_BUILD_TIMES    a TSV each image's figures are appended to (default build/images/cuda-builds.tsv)
#   KIT_DROP_ARTIFACTS=1  delete each SIF and sqsh once measured and verified (they are GBs)
#   KIT_BUILD_OUTPUT=1 print the builds' output (cmake's configure, the compile seconds line), not only
#                      their steps (kit images build without --quiet)
#   KIT_KEEP_BUILD_STAGES=1  keep each build stage's images, Docker's cache for the next build (9 to 15 GB
#                      each; gguf's holds the 48-minute CUDA compile); by default they are removed
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/dev/lib.sh
. scripts/dev/lib.sh
kit_require_root
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(transformers-5.17 gguf vllm)
variant=${KIT_CUDA_VARIANT:-cuda}
[[ $variant =~ ^cuda[a-z0-9-]*$ ]] || die "KIT_CUDA_VARIANT=$variant: a CUDA variant (cuda, cuda11)"
# one lock per variant: the lock keeps one entry per image, so cuda11 must not replace gguf's cuda entry
export KIT_IMAGES_LOCK=${KIT_IMAGES_LOCK:-build/images/$variant/images.lock.json}
export KIT_IMAGES_DIR=${KIT_IMAGES_DIR:-build/images/$variant}
wheelhouse=${KIT_WHEELHOUSE:-$HOME/.cache/kit/wheelhouse}
times=${KIT_BUILD_TIMES:-build/images/cuda-builds.tsv}
mkdir -p "$(dirname "$times")" "$wheelhouse" "$KIT_IMAGES_DIR" "$(dirname "$KIT_IMAGES_LOCK")"
kit=.venv/bin/kit
py=.venv/bin/python
bash scripts/images/tools.sh | sed 's/^/  /'
rows=()
seconds() { local t; t=$(date +%s); "$@"; echo $(( $(date +%s) - t )) >"$tmp/s"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in "${names[@]}"; do
  if ! $py -c 'import sys; from kit.images.spec import target; target(sys.argv[1], sys.argv[2])' "$name" "$variant" 2>/dev/null; then
    step "$name: no $variant variant in containers/images.toml, skipped"
    continue
  fi
  if [ "$name" = gguf ] && [ "$variant" = cuda11 ]; then
    bash scripts/images/build-base-cuda11.sh | sed 's/^/  /'
  elif [ "$name" = gguf ]; then
    bash scripts/images/build-base.sh | sed 's/^/  /'
  fi
  drop=(--drop-build-stages)
  [ "${KIT_KEEP_BUILD_STAGES:-0}" != 1 ] || drop=()
  quiet=(--quiet)
  [ "${KIT_BUILD_OUTPUT:-0}" != 1 ] || quiet=()
  seconds "$kit" images build "$name" --variant "$variant" --wheelhouse "$wheelhouse" "${drop[@]}" "${quiet[@]}"
  build_s=$(cat "$tmp/s")
  seconds "$kit" images convert "$name" --to sif
  sif_s=$(cat "$tmp/s")
  seconds "$kit" images convert "$name" --to sqsh
  sqsh_s=$(cat "$tmp/s")
  verify="SAME"
  seconds "$kit" images verify "$name" || verify="DIFFERENT"
  verify_s=$(cat "$tmp/s")
  lint=$($py - "$name" <<'EOF'
import os, sys
from pathlib import Path
from kit.images import spec
from kit.images.built import load_lock
from kit.images.lint import lint, summary
built = load_lock(Path(os.environ["KIT_IMAGES_LOCK"])).get(sys.argv[1])
findings = lint(spec.target(sys.argv[1], built.variant), built)
for f in findings:
    print(f"{f.state:9} {f.check:16} {f.detail}", file=sys.stderr)
print(summary(findings))
EOF
)
  read -r tag size sif sqsh < <($py - "$name" <<'EOF'
import os, sys
from pathlib import Path
from kit.images.built import load_lock
b = load_lock(Path(os.environ["KIT_IMAGES_LOCK"])).get(sys.argv[1])
size = lambda k: (Path(os.environ["KIT_IMAGES_DIR"]) / b.artifacts[k].file).stat().st_size if k in b.artifacts else 0
print(b.tag, b.size_bytes or 0, size("sif"), size("sqsh"))
EOF
)
  gb() { awk -v b="$1" 'BEGIN { printf "%.2f GB", b / 1e9 }'; }
  row="| $name ($tag) | $(gb "$size") | $(gb "$sif") | $(gb "$sqsh") | ${build_s} s | ${sif_s} s | ${sqsh_s} s | ${verify_s} s ($verify) | $lint |"
  rows+=("$row")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$name" "$tag" "$size" "$sif" "$sqsh" \
    "$build_s" "$sif_s" "$sqsh_s" "$verify_s" "$verify" "$lint" >>"$times"
  step "$row"
  if [ "${KIT_DROP_ARTIFACTS:-0}" = 1 ]; then
    $py - "$name" <<'EOF'
import os, sys
from pathlib import Path
from kit.images.built import load_lock
b = load_lock(Path(os.environ["KIT_IMAGES_LOCK"])).get(sys.argv[1])
for a in b.artifacts.values():
    (Path(os.environ["KIT_IMAGES_DIR"]) / a.file).unlink(missing_ok=True)
EOF
  fi
done
echo
echo "| image | unpacked | SIF | sqsh | build | SIF time | sqsh time | verify | lint |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
