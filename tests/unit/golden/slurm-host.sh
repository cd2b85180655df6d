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
export KIT_RUNTIME=host
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
echo "kit: job ${KIT_JOB_ID:-?} shard $KIT_SHARD_INDEX/2 on $(hostname)" >&2
# the worker runs as a child so that the cleanup runs after it; signals are passed on
/opt/kit/.venv/bin/python -m kit shard --roster /lustre/me/kit/inputs/roster-5b4af37538092390.toml --benchmark /lustre/me/kit/inputs/benchmark-2e419a363aad8df2 --results /lustre/me/kit/results --pairs /lustre/me/kit/plans/plan-0fc93b87b7d4.json --shard "$KIT_SHARD_INDEX/2" &
KIT_WORKER=$!
trap 'kill -TERM "$KIT_WORKER" 2>/dev/null || true' TERM
trap 'kill -INT "$KIT_WORKER" 2>/dev/null || true' INT
trap 'kill -HUP "$KIT_WORKER" 2>/dev/null || true' HUP
KIT_STATUS=0
wait "$KIT_WORKER" || KIT_STATUS=$?
# a trapped signal ends `wait` early: wait again for the worker's own exit status
while kill -0 "$KIT_WORKER" 2>/dev/null; do KIT_STATUS=0; wait "$KIT_WORKER" || KIT_STATUS=$?; done
exit "$KIT_STATUS"
