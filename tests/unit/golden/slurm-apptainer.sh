#!/bin/bash
#SBATCH --job-name=kit-cluster-big-model-0fc93b87b7d4
#SBATCH --partition=gpu
#SBATCH --account=proj123
#SBATCH --qos=normal
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-gpu=64G
#SBATCH --time=2:00:00
#SBATCH --array=0-1
#SBATCH --output=/lustre/me/kit/logs/%x-%A_%a.out
#SBATCH --export=PATH,HOME,USER,LANG,TZ
# kit job kit-cluster-big-model-0fc93b87b7d4
set -euo pipefail

export HF_DATASETS_OFFLINE=1
export HF_HUB_CACHE=/lustre/me/hf-hub
export HF_HUB_DISABLE_PROGRESS_BARS=1
export HF_HUB_OFFLINE=1
export KIT_GPUS=4
export KIT_IMAGE_ARTIFACT=sif
export KIT_IMAGE_DIGEST=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
export KIT_IMAGE_SHA256=dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd
export KIT_LOCK_SHA256=cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
export KIT_RUNTIME=apptainer
export KIT_SCHEDULER=slurm
export KIT_SITE=cluster
export TOKENIZERS_PARALLELISM=false
export TRANSFORMERS_OFFLINE=1
export TRANSFORMERS_VERBOSITY=error
# the scheduler's job id and raw array index, under names every runtime passes on
export KIT_JOB_ID="${SLURM_JOB_ID:-${OAR_JOB_ID:-${KIT_JOB_ID:-$$}}}"
export KIT_ARRAY_INDEX="${SLURM_ARRAY_TASK_ID:-${OAR_ARRAY_INDEX:-${KIT_ARRAY_INDEX:-0}}}"

KIT_SLOTS=(0 1)
KIT_ARRAY_POS=${KIT_ARRAY_INDEX:-0}
if [ "$KIT_ARRAY_POS" -lt 0 ] || [ "$KIT_ARRAY_POS" -ge "${#KIT_SLOTS[@]}" ]; then
  echo "kit: array index $KIT_ARRAY_POS has no shard slot (${#KIT_SLOTS[@]} slots)" >&2; exit 2
fi
KIT_SHARD_INDEX="${KIT_SLOTS[$KIT_ARRAY_POS]}"
export KIT_SHARD_INDEX
# writable caches on node-local scratch (weights stay read-only in HF_HUB_CACHE), removed at the end
KIT_CACHE=/tmp"/kit-cache-$KIT_JOB_ID"
export HF_HOME="$KIT_CACHE/hf" TRITON_CACHE_DIR="$KIT_CACHE/triton" VLLM_CACHE_ROOT="$KIT_CACHE/vllm" TORCHINDUCTOR_CACHE_DIR="$KIT_CACHE/inductor"
mkdir -p "$HF_HOME" "$TRITON_CACHE_DIR" "$VLLM_CACHE_ROOT" "$TORCHINDUCTOR_CACHE_DIR"
kit_cleanup() {
  rm -rf -- "$KIT_CACHE"
}
trap kit_cleanup EXIT
# srun steps get this script's environment, not the batch job's --export list
export SLURM_EXPORT_ENV=ALL
export SRUN_CPUS_PER_TASK="${SLURM_CPUS_PER_TASK:-1}"
# the site's setup lines, without set -u (Lmod reads unset variables); `module` from the profile
set +u
if ! command -v module >/dev/null 2>&1 && [ -r /etc/profile ]; then
  KIT_PATH="$PATH"
  . /etc/profile || true
  export PATH="$KIT_PATH${PATH:+:$PATH}"
fi
module load apptainer/1.3
set -u
[ -z "${KIT_SITE+set}" ] || export APPTAINERENV_KIT_SITE="${KIT_SITE}"
[ -z "${KIT_SCHEDULER+set}" ] || export APPTAINERENV_KIT_SCHEDULER="${KIT_SCHEDULER}"
[ -z "${KIT_RUNTIME+set}" ] || export APPTAINERENV_KIT_RUNTIME="${KIT_RUNTIME}"
[ -z "${KIT_JOB_ID+set}" ] || export APPTAINERENV_KIT_JOB_ID="${KIT_JOB_ID}"
[ -z "${KIT_ARRAY_INDEX+set}" ] || export APPTAINERENV_KIT_ARRAY_INDEX="${KIT_ARRAY_INDEX}"
[ -z "${KIT_SHARD_INDEX+set}" ] || export APPTAINERENV_KIT_SHARD_INDEX="${KIT_SHARD_INDEX}"
[ -z "${KIT_GPUS+set}" ] || export APPTAINERENV_KIT_GPUS="${KIT_GPUS}"
[ -z "${KIT_IMAGE_DIGEST+set}" ] || export APPTAINERENV_KIT_IMAGE_DIGEST="${KIT_IMAGE_DIGEST}"
[ -z "${KIT_IMAGE_ARTIFACT+set}" ] || export APPTAINERENV_KIT_IMAGE_ARTIFACT="${KIT_IMAGE_ARTIFACT}"
[ -z "${KIT_IMAGE_SHA256+set}" ] || export APPTAINERENV_KIT_IMAGE_SHA256="${KIT_IMAGE_SHA256}"
[ -z "${KIT_LOCK_SHA256+set}" ] || export APPTAINERENV_KIT_LOCK_SHA256="${KIT_LOCK_SHA256}"
[ -z "${HF_HUB_OFFLINE+set}" ] || export APPTAINERENV_HF_HUB_OFFLINE="${HF_HUB_OFFLINE}"
[ -z "${TRANSFORMERS_OFFLINE+set}" ] || export APPTAINERENV_TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE}"
[ -z "${HF_DATASETS_OFFLINE+set}" ] || export APPTAINERENV_HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE}"
[ -z "${HF_HUB_CACHE+set}" ] || export APPTAINERENV_HF_HUB_CACHE="${HF_HUB_CACHE}"
[ -z "${HF_HOME+set}" ] || export APPTAINERENV_HF_HOME="${HF_HOME}"
[ -z "${TRITON_CACHE_DIR+set}" ] || export APPTAINERENV_TRITON_CACHE_DIR="${TRITON_CACHE_DIR}"
[ -z "${VLLM_CACHE_ROOT+set}" ] || export APPTAINERENV_VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT}"
[ -z "${TORCHINDUCTOR_CACHE_DIR+set}" ] || export APPTAINERENV_TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR}"
[ -z "${HF_HUB_DISABLE_PROGRESS_BARS+set}" ] || export APPTAINERENV_HF_HUB_DISABLE_PROGRESS_BARS="${HF_HUB_DISABLE_PROGRESS_BARS}"
[ -z "${TRANSFORMERS_VERBOSITY+set}" ] || export APPTAINERENV_TRANSFORMERS_VERBOSITY="${TRANSFORMERS_VERBOSITY}"
[ -z "${TOKENIZERS_PARALLELISM+set}" ] || export APPTAINERENV_TOKENIZERS_PARALLELISM="${TOKENIZERS_PARALLELISM}"
[ -z "${HF_TOKEN_PATH+set}" ] || export APPTAINERENV_HF_TOKEN_PATH="${HF_TOKEN_PATH}"
[ -z "${CUDA_VISIBLE_DEVICES+set}" ] || export APPTAINERENV_CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES}"
test -r /lustre/me/kit-images/kit-vllm-aaaaaaaaaaaa.sif || { echo 'kit: image not readable: /lustre/me/kit-images/kit-vllm-aaaaaaaaaaaa.sif; put it there: kit images push --site '"${KIT_SITE:-SITE}" >&2; exit 2; }
if [ -n "${KIT_IMAGE_SHA256:-}" ]; then
  KIT_SEEN_SHA256=$(sha256sum /lustre/me/kit-images/kit-vllm-aaaaaaaaaaaa.sif | cut -d' ' -f1)
  [ "$KIT_SEEN_SHA256" = "$KIT_IMAGE_SHA256" ] || { echo "kit: image sha256 $KIT_SEEN_SHA256 is not the recorded $KIT_IMAGE_SHA256 (a half copy or another build); push the lock's image again: kit images push --site ${KIT_SITE:-SITE}" >&2; exit 2; }
fi
echo "kit: job ${KIT_JOB_ID:-?} shard $KIT_SHARD_INDEX/2 on $(hostname)" >&2
# the worker runs as a child so that the cleanup runs after it; signals are passed on
srun apptainer exec --nv --containall --cleanenv --no-home --bind /tmp,/lustre/me/hf-hub:/lustre/me/hf-hub:ro,/lustre/me/kit,/lustre/me/kit/inputs:/lustre/me/kit/inputs:ro,/lustre/me/kit/results,/lustre/me/kit/inputs/benchmark-2e419a363aad8df2:/lustre/me/kit/inputs/benchmark-2e419a363aad8df2:ro --pwd /lustre/me/kit /lustre/me/kit-images/kit-vllm-aaaaaaaaaaaa.sif kit shard --roster /lustre/me/kit/inputs/roster-5b4af37538092390.toml --benchmark /lustre/me/kit/inputs/benchmark-2e419a363aad8df2 --results /lustre/me/kit/results --pairs /lustre/me/kit/plans/plan-0fc93b87b7d4.json --shard "$KIT_SHARD_INDEX/2" &
KIT_WORKER=$!
trap 'kill -TERM "$KIT_WORKER" 2>/dev/null || true' TERM
trap 'kill -INT "$KIT_WORKER" 2>/dev/null || true' INT
trap 'kill -HUP "$KIT_WORKER" 2>/dev/null || true' HUP
KIT_STATUS=0
wait "$KIT_WORKER" || KIT_STATUS=$?
# a trapped signal ends `wait` early: wait again for the worker's own exit status
while kill -0 "$KIT_WORKER" 2>/dev/null; do KIT_STATUS=0; wait "$KIT_WORKER" || KIT_STATUS=$?; done
exit "$KIT_STATUS"
