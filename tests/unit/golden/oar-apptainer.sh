#!/bin/bash
# kit job kit-ci
set -euo pipefail

export HF_HUB_OFFLINE=1
export KIT_SITE=ci
# the scheduler's job id and raw array index, under names every runtime passes on
export KIT_JOB_ID="${SLURM_JOB_ID:-${OAR_JOB_ID:-${KIT_JOB_ID:-$$}}}"
export KIT_ARRAY_INDEX="${SLURM_ARRAY_TASK_ID:-${OAR_ARRAY_INDEX:-${KIT_ARRAY_INDEX:-0}}}"

KIT_SLOTS=(4 5 6)
KIT_ARRAY_POS=$(( ${OAR_ARRAY_INDEX:-1} - 1 ))
if [ "$KIT_ARRAY_POS" -lt 0 ] || [ "$KIT_ARRAY_POS" -ge "${#KIT_SLOTS[@]}" ]; then
  echo "kit: array index $KIT_ARRAY_POS has no shard slot (${#KIT_SLOTS[@]} slots)" >&2; exit 2
fi
KIT_SHARD_INDEX="${KIT_SLOTS[$KIT_ARRAY_POS]}"
export KIT_SHARD_INDEX
echo "kit: job ${KIT_JOB_ID:-?} shard $KIT_SHARD_INDEX/8 on $(hostname)" >&2
exec apptainer exec --nv --containall --cleanenv /img.sif kit shard --shard "$KIT_SHARD_INDEX/8"
