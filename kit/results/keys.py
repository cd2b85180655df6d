"""Vocabulary shared by the worker, the checker and the reports: checkpoint keys,
pair states, verdicts and mllog keys. One place, so a rename is one edit."""

from __future__ import annotations

from enum import StrEnum

# --- checkpoint top-level sections (the lrb format plus `provenance`)
METADATA = "metadata"
METRICS = "metrics"
PREDICTIONS = "predictions"
SPEED = "speed"
PROVENANCE = "provenance"

# --- metadata keys (lrb names first, kit additions after)
MODEL_ID = "model_id"
MODEL_REVISION = "model_revision"
LANGUAGE = "language"
RUN = "run"
RUN_ID = "run_id"  # lrb's name for a variant run ("org/name+DSpark"); "" when the run is the model
BACKEND = "backend"
TASK = "task"
BATCH_SIZE = "batch_size"
BENCHMARK_SHA256 = "benchmark_sha256"
PROMPT_SHA256 = "prompt_sha256"
PROMPT_FILE = "prompt"  # the prompt file a run named (roster key `prompt`); null: the benchmark's for its kind
DECODING = "decoding"
DTYPE = "dtype"
MAX_NEW_TOKENS = "max_new_tokens"
SEED = "seed"
DURATION_SECONDS = "duration_seconds"
STARTED_AT = "started_at"
PACKAGE_VERSION = "package_version"
SOURCE_COMMIT = "source_commit"
OPTIONS = "options"
MANIFEST_SHA256 = "manifest_sha256"
TRUST_REMOTE_CODE = "trust_remote_code"
LRB_INFERENCE = "inference"  # lrb's own files: "scoring" for its score runs
LRB_DECISION_RULE = "decision_rule"  # lrb's scoring files: how native scores became a verdict
BENCHMARK_KIND = "benchmark_kind"  # absent: lrb; "lighteval": a LightEval suite task

# --- provenance block keys (written by kit.worker.provenance; docs/checkpoint-format.md)
PROV_KIT_VERSION = "kit_version"
PROV_KIT_COMMIT = "kit_commit"
PROV_IMAGE = "image"
PROV_MODEL = "model"
PROV_DATA = "data"
PROV_JOB = "job"
PROV_HARDWARE = "hardware"
PROV_PACKAGES = "packages"
PROV_ENGINE_ENV = "engine_env"   # the environment variables that set the engine's behaviour, as the job had them
PROV_UNKNOWN = "unknown"  # "section.key" -> why that fact is null
# provenance.image
IMAGE_BACKEND = "backend"
IMAGE_DIGEST = "digest"
IMAGE_ARTIFACT = "artifact"
IMAGE_ARTIFACT_SHA256 = "artifact_sha256"
IMAGE_LOCK_SHA256 = "lock_sha256"
# provenance.model
PROV_MODEL_ID = "id"
PROV_MODEL_REVISION = "revision"
WEIGHT_FILES_SHA256 = "weight_files_sha256"
WEIGHTS_MANIFEST_SHA256 = "weights_manifest_sha256"
# how the job knew weight_files_sha256: it hashed every weight file it loaded, or it checked their
# sizes against the staged manifest and recorded the manifest's digests (a same-size change is not seen)
WEIGHTS_CHECKED = "weights_checked"
WEIGHTS_HASHED = "sha256"
WEIGHTS_SIZES = "sizes against the manifest"
# provenance.data
DATA_MANIFEST_SHA256 = "manifest_sha256"
DATA_FILE_SHA256 = "file_sha256"
DATA_PROMPT_SHA256 = "prompt_sha256"
# provenance.job
JOB_SITE = "site"
JOB_SCHEDULER = "scheduler"
JOB_ID = "job_id"
JOB_ARRAY_INDEX = "array_index"
JOB_SHARD = "shard"
JOB_NODE = "node"
JOB_RUNTIME = "runtime"
# provenance.hardware
HW_GPU_NAME = "gpu_name"
HW_GPU_COUNT = "gpu_count"
HW_DRIVER = "driver"
HW_CUDA = "cuda"
HW_CPU = "cpu"

# --- prediction keys
ITEM_ID = "item_id"
EXPECTED = "expected"
PREDICTED = "predicted"
RAW_OUTPUT = "raw_output"
TRUNCATED = "truncated"
PARSE_MODE = "parse_mode"
SCORE_YES = "score_yes"
SCORE_NO = "score_no"
NATIVE_SCORE = "native_score"
ITEM_METRICS = "item_metrics"  # LightEval suites: {metric: value} of one item
OUTPUTS = "outputs"  # LightEval suites: every sample's text when a task samples several

# --- benchmark kinds
KIND_LRB = "lrb"
KIND_LIGHTEVAL = "lighteval"
# LightEval checkpoints: LightEval's own aggregates and what its registry left out
LIGHTEVAL = "lighteval"

# --- labels and parse modes
YES = "yes"
NO = "no"
UNPARSED = "unparsed"  # kit's label for no verdict; lrb writes predicted null for the same
LABELS = (YES, NO)
PARSE_EXACT = "exact"
PARSE_LEADING = "leading"
PARSE_LAST = "last"
PARSE_TRUNCATED = "truncated"
PARSE_NONE = "none"
PARSE_SCORE = "score"
PARSE_MODES = (PARSE_EXACT, PARSE_LEADING, PARSE_LAST, PARSE_TRUNCATED, PARSE_NONE, PARSE_SCORE)

# --- metric keys
N_ITEMS = "n_items"
CONFUSION = "confusion"
TRUE_POSITIVE = "true_positive"
FALSE_POSITIVE = "false_positive"
TRUE_NEGATIVE = "true_negative"
FALSE_NEGATIVE = "false_negative"
ACCURACY = "accuracy"
BALANCED_ACCURACY = "balanced_accuracy"
PRECISION = "precision"
RECALL = "recall"
F1 = "f1"
MCC = "matthews_corrcoef"
UNPARSED_RATE = "unparsed_rate"
METRIC_NAMES = (ACCURACY, BALANCED_ACCURACY, F1, PRECISION, RECALL, MCC, UNPARSED_RATE)



class PairState(StrEnum):
    """Where a pair (run, language) stands. The first four are read from its checkpoint; the rest
    explain a missing one by the job that should have written it (a job's own state is
    kit.launch.schedulers.base.JobState, a different word list)."""

    COMPLETE = "complete"
    PENDING = "pending"
    INVALID = "invalid"
    STALE = "stale"  # valid, but recorded for another revision, setting, prompt or data file than the run has now
    RUNNING = "running"
    QUEUED = "queued"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    UNCLAIMED = "unclaimed"
    UNKNOWN = "unknown"


# --- tasks
TASK_GENERATE = "generate"
TASK_SCORE = "score"
TASKS = (TASK_GENERATE, TASK_SCORE)

# --- the JSON envelope printed by --json
RESULT_VERSION = 1
