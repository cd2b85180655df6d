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

    agreement: float = 0.99    # fraction of items with the same predicted label (suites: item metrics)
    f1: float = 0.01           # largest |delta F1| (suites: largest |delta| of any task metric)


@dataclass
class Comparison:
    """The verdict and its evidence."""

    verdict: str
    agreement: float
    metric_deltas: dict[str, float]
    differing: list[dict[str, Any]] = field(default_factory=list)
    outputs_identical: bool = False
    bounded: str = "F1"            # what the tolerance's f1 bound applies to
    bounded_delta: float = 0.0     # its delta (for suites, the largest |delta| of any task metric)


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
    """Item by item: identical outputs, or agreement and metric deltas within tolerance.

    lrb results agree on an item when the predicted label is the same, and the tolerance bounds
    |delta f1|; LightEval suite results agree when the item's metric values are the same, and the
    tolerance bounds the largest |delta| of any task metric."""
    suite = recorded.get(K.METADATA, {}).get(K.BENCHMARK_KIND) == K.KIND_LIGHTEVAL
    verdict_of = K.ITEM_METRICS if suite else K.PREDICTED
    rec = {p[K.ITEM_ID]: p for p in recorded[K.PREDICTIONS]}
    new = {p[K.ITEM_ID]: p for p in rerun[K.PREDICTIONS]}
    differing = []
    same_label = 0
    for item_id in rec:
        a, b = rec[item_id], new.get(item_id)
        if b is None:
            differing.append({"item_id": item_id, "recorded": a.get(verdict_of), "rerun": None,
                              "recorded_output": a.get(K.RAW_OUTPUT), "rerun_output": None})
            continue
        same_label += a.get(verdict_of) == b.get(verdict_of)
        fields = (K.PREDICTED, K.RAW_OUTPUT, K.TRUNCATED, K.SCORE_YES, K.NATIVE_SCORE, K.ITEM_METRICS, K.OUTPUTS)
        if any(a.get(f) != b.get(f) for f in fields):
            differing.append({"item_id": item_id, "recorded": a.get(verdict_of), "rerun": b.get(verdict_of),
                              "recorded_output": a.get(K.RAW_OUTPUT), "rerun_output": b.get(K.RAW_OUTPUT)})
    extra = sorted(set(new) - set(rec))
    for item_id in extra:
        differing.append({"item_id": item_id, "recorded": None, "rerun": new[item_id].get(verdict_of),
                          "recorded_output": None, "rerun_output": new[item_id].get(K.RAW_OUTPUT)})
    agreement = same_label / len(rec) if rec else 0.0
    names = sorted(m for m in recorded[K.METRICS] if m != K.N_ITEMS) if suite else K.METRIC_NAMES
    deltas = {m: round(rerun[K.METRICS][m] - recorded[K.METRICS][m], 12) for m in names
              if m in recorded[K.METRICS] and m in rerun[K.METRICS]}
    worst = max((abs(d) for d in deltas.values()), default=0.0) if suite else abs(deltas.get(K.F1, 0.0))
    identical = not differing
    if identical:
        verdict = REPRODUCED
    elif not extra and agreement >= tolerance.agreement and worst <= tolerance.f1:
        verdict = WITHIN_TOLERANCE
    else:
        verdict = DIFFERENT
    signed = max(deltas.values(), key=abs, default=0.0) if suite else deltas.get(K.F1, 0.0)
    return Comparison(verdict, agreement, deltas, differing, identical,
                      "largest task metric" if suite else "F1", signed)


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
