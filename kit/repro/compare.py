"""Compare a rerun with the recorded result: REPRODUCED, WITHIN TOLERANCE or DIFFERENT."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kit.results import keys as K

REPRODUCED = "REPRODUCED"
WITHIN_TOLERANCE = "WITHIN TOLERANCE"
DIFFERENT = "DIFFERENT"

# Exact outputs are expected only on the same GPU model, runtime and batch mode.
EXACTNESS_NOTE = ("Exact equality (REPRODUCED) is expected only on the same GPU model, the same runtime and the "
                  "same batch mode: floating-point reductions differ across GPU models, kernels and batch shapes, "
                  "so greedy outputs can diverge at near-ties. WITHIN TOLERANCE means the verdicts agree closely.")


@dataclass(frozen=True)
class Tolerance:
    """How close a rerun must be to count as WITHIN TOLERANCE."""

    agreement: float = 0.99    # fraction of items with the same predicted label
    f1: float = 0.01           # largest |delta F1|


@dataclass
class Comparison:
    """The verdict and its evidence."""

    verdict: str
    agreement: float
    metric_deltas: dict[str, float]
    differing: list[dict[str, Any]] = field(default_factory=list)
    outputs_identical: bool = False


def parse_tolerance(text: str | None) -> Tolerance:
    """'agreement=0.98,f1=0.02' -> Tolerance; None -> defaults."""
    from kit.errors import ConfigError

    if not text:
        return Tolerance()
    values = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("agreement", "f1"):
            raise ConfigError(f"--tolerance {text!r}: bad part {part!r}", fix="write e.g. agreement=0.99,f1=0.01")
        try:
            values[key] = float(value)
        except ValueError:
            raise ConfigError(f"--tolerance {text!r}: {value!r} is not a number", fix="write e.g. f1=0.01") from None
    return Tolerance(**values)


def compare(recorded: dict[str, Any], rerun: dict[str, Any], tolerance: Tolerance) -> Comparison:
    """Item by item: identical outputs, or agreement and metric deltas within tolerance."""
    rec = {p[K.ITEM_ID]: p for p in recorded[K.PREDICTIONS]}
    new = {p[K.ITEM_ID]: p for p in rerun[K.PREDICTIONS]}
    differing = []
    same_label = 0
    for item_id in rec:
        a, b = rec[item_id], new.get(item_id)
        if b is None:
            differing.append({"item_id": item_id, "recorded": a.get(K.PREDICTED), "rerun": None,
                              "recorded_output": a.get(K.RAW_OUTPUT), "rerun_output": None})
            continue
        same_label += a.get(K.PREDICTED) == b.get(K.PREDICTED)
        fields = (K.PREDICTED, K.RAW_OUTPUT, K.TRUNCATED, K.SCORE_YES, K.NATIVE_SCORE)
        if any(a.get(f) != b.get(f) for f in fields):
            differing.append({"item_id": item_id, "recorded": a.get(K.PREDICTED), "rerun": b.get(K.PREDICTED),
                              "recorded_output": a.get(K.RAW_OUTPUT), "rerun_output": b.get(K.RAW_OUTPUT)})
    extra = sorted(set(new) - set(rec))
    for item_id in extra:
        differing.append({"item_id": item_id, "recorded": None, "rerun": new[item_id].get(K.PREDICTED),
                          "recorded_output": None, "rerun_output": new[item_id].get(K.RAW_OUTPUT)})
    agreement = same_label / len(rec) if rec else 0.0
    deltas = {m: round(rerun[K.METRICS][m] - recorded[K.METRICS][m], 12) for m in K.METRIC_NAMES
              if m in recorded[K.METRICS] and m in rerun[K.METRICS]}
    identical = not differing
    if identical:
        verdict = REPRODUCED
    elif not extra and agreement >= tolerance.agreement and abs(deltas.get(K.F1, 0.0)) <= tolerance.f1:
        verdict = WITHIN_TOLERANCE
    else:
        verdict = DIFFERENT
    return Comparison(verdict, agreement, deltas, differing, identical)


SETTINGS = (K.BACKEND, K.TASK, K.DTYPE, K.BATCH_SIZE, K.MAX_NEW_TOKENS, K.SEED, K.DECODING, K.OPTIONS)


def settings_differences(recorded: dict[str, Any], rerun: dict[str, Any]) -> list[str]:
    """Recorded settings the rerun did not use, one line each (e.g. 'batch_size: 8 -> 4')."""
    a, b = recorded.get(K.METADATA, {}), rerun.get(K.METADATA, {})
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in SETTINGS if a.get(k) != b.get(k)]


def environment(result: dict[str, Any]) -> dict[str, Any]:
    """The facts of a result's environment that matter for exactness, for the side-by-side table."""
    prov = result.get(K.PROVENANCE, {})
    hw, job, image, pk = (prov.get(k, {}) for k in ("hardware", "job", "image", "packages"))
    return {
        "image digest": image.get("digest"), "artifact": image.get("artifact"),
        "artifact sha256": image.get("artifact_sha256"), "runtime": job.get("runtime"),
        "site": job.get("site"), "node": job.get("node"), "gpu": hw.get("gpu_name"), "gpu count": hw.get("gpu_count"),
        "cuda": hw.get("cuda"), "driver": hw.get("driver"), "cpu": hw.get("cpu"), "kit": prov.get("kit_version"),
        "kit commit": prov.get("kit_commit"), "torch": pk.get("torch"), "transformers": pk.get("transformers"),
        "batch_size": result.get(K.METADATA, {}).get(K.BATCH_SIZE), "dtype": result.get(K.METADATA, {}).get(K.DTYPE),
    }
