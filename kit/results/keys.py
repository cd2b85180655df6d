"""Vocabulary shared by the worker, the checker and the reports: checkpoint keys,
pair states, verdicts and mllog keys. One place, so a rename is one edit."""

from __future__ import annotations

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

# --- pair states (checkpoint side)
COMPLETE = "complete"
PENDING = "pending"
INVALID = "invalid"
STALE = "stale"  # valid, but recorded for another revision, setting, prompt or data file than the run has now
# --- pair states explained by the scheduler (job states themselves: kit.launch.schedulers.base)
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
