"""Compare a rerun with the recorded result: REPRODUCED, WITHIN TOLERANCE or DIFFERENT."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kit.errors import CheckpointError
from kit.results import keys
from kit.results.kinds import kind_of, unknown_kind
from kit.results.verdicts import DIFFERENT, REPRODUCED, WITHIN_TOLERANCE  # noqa: F401 - named here too

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
        number = values[key]
        # agreement is a share of items; the metric bound a finite distance
        if not math.isfinite(number) or number < 0 or (key == "agreement" and number > 1):
            raise ConfigError(f"--tolerance {text!r}: {key}={value.strip()} is not "
                              + ("a share from 0 to 1" if key == "agreement" else "a finite number of 0 or more"),
                              fix="write e.g. agreement=0.99,f1=0.01")
    return Tolerance(**values)


def compare(recorded: dict[str, Any], rerun: dict[str, Any], tolerance: Tolerance) -> Comparison:
    """Item by item: identical outputs, or agreement and metric deltas within tolerance.

    The result's benchmark kind says when an item agrees (lrb: the same predicted label; LightEval:
    the same item metric values) and which metric delta the tolerance bounds (lrb: F1; LightEval:
    the largest change of any task metric)."""
    kind = kind_of(recorded)
    if kind is None:
        raise CheckpointError(f"the result's {unknown_kind(recorded)}", fix="reproduce a checkpoint that `kit verify` accepts")
    verdict_of = kind.agreement_field
    rec = {p[keys.ITEM_ID]: p for p in recorded[keys.PREDICTIONS]}
    new = {p[keys.ITEM_ID]: p for p in rerun[keys.PREDICTIONS]}
    differing = []
    same_label = 0
    for item_id in rec:
        a, b = rec[item_id], new.get(item_id)
        if b is None:
            differing.append({"item_id": item_id, "recorded": a.get(verdict_of), "rerun": None,
                              "recorded_output": a.get(keys.RAW_OUTPUT), "rerun_output": None})
            continue
        same_label += a.get(verdict_of) == b.get(verdict_of)
        fields = (keys.PREDICTED, keys.RAW_OUTPUT, keys.TRUNCATED, keys.SCORE_YES, keys.NATIVE_SCORE, keys.ITEM_METRICS, keys.OUTPUTS)
        if any(a.get(f) != b.get(f) for f in fields):
            differing.append({"item_id": item_id, "recorded": a.get(verdict_of), "rerun": b.get(verdict_of),
                              "recorded_output": a.get(keys.RAW_OUTPUT), "rerun_output": b.get(keys.RAW_OUTPUT)})
    extra = sorted(set(new) - set(rec))
    for item_id in extra:
        differing.append({"item_id": item_id, "recorded": None, "rerun": new[item_id].get(verdict_of),
                          "recorded_output": None, "rerun_output": new[item_id].get(keys.RAW_OUTPUT)})
    agreement = same_label / len(rec) if rec else 0.0
    deltas = {m: round(rerun[keys.METRICS][m] - recorded[keys.METRICS][m], 12) for m in kind.compared_metrics(recorded[keys.METRICS])
              if m in recorded[keys.METRICS] and m in rerun[keys.METRICS]}
    signed = kind.bounded_delta(deltas)
    worst = abs(signed)
    identical = not differing
    if identical:
        verdict = REPRODUCED
    elif not extra and agreement >= tolerance.agreement and worst <= tolerance.f1:
        verdict = WITHIN_TOLERANCE
    else:
        verdict = DIFFERENT
    return Comparison(verdict, agreement, deltas, differing, identical, kind.bounded, signed)


SETTINGS = (keys.BACKEND, keys.TASK, keys.DTYPE, keys.BATCH_SIZE, keys.MAX_NEW_TOKENS, keys.SEED, keys.DECODING, keys.OPTIONS)


def settings_differences(recorded: dict[str, Any], rerun: dict[str, Any]) -> list[str]:
    """Recorded settings the rerun did not use, one line each (e.g. 'batch_size: 8 -> 4')."""
    a, b = recorded.get(keys.METADATA, {}), rerun.get(keys.METADATA, {})
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in SETTINGS if a.get(k) != b.get(k)]


def environment(result: dict[str, Any]) -> dict[str, Any]:
    """The facts of a result's environment that matter for exactness, for the side-by-side table."""
    prov = result.get(keys.PROVENANCE, {})
    hw, job, image, pk = (prov.get(k, {}) for k in (keys.PROV_HARDWARE, keys.PROV_JOB, keys.PROV_IMAGE,
                                                     keys.PROV_PACKAGES))
    return {
        "image digest": image.get(keys.IMAGE_DIGEST), "artifact": image.get(keys.IMAGE_ARTIFACT),
        "artifact sha256": image.get(keys.IMAGE_ARTIFACT_SHA256), "runtime": job.get(keys.JOB_RUNTIME),
        "site": job.get(keys.JOB_SITE), "node": job.get(keys.JOB_NODE), "gpu": hw.get(keys.HW_GPU_NAME),
        "gpu count": hw.get(keys.HW_GPU_COUNT), "cuda": hw.get(keys.HW_CUDA), "driver": hw.get(keys.HW_DRIVER),
        "cpu": hw.get(keys.HW_CPU), "kit": prov.get(keys.PROV_KIT_VERSION),
        "kit commit": prov.get(keys.PROV_KIT_COMMIT), "torch": pk.get("torch"), "transformers": pk.get("transformers"),
        "batch_size": result.get(keys.METADATA, {}).get(keys.BATCH_SIZE), "dtype": result.get(keys.METADATA, {}).get(keys.DTYPE),
        "engine env": " ".join(f"{k}={v}" for k, v in sorted((prov.get(keys.PROV_ENGINE_ENV) or {}).items())) or None,
    }


def setup(result: dict[str, Any]) -> dict[str, Any]:
    """What a result ran on, as the drift table tells setups apart: the engine (backend family and the
    version of its engine package), the dtype, the GPU model and driver (or the CPU), the runtime and kit's version."""
    from kit.config.backends import engine_package

    meta, prov = result.get(keys.METADATA, {}), result.get(keys.PROVENANCE, {})
    hw = prov.get(keys.PROV_HARDWARE) or {}
    backend = meta.get(keys.BACKEND)
    version = (prov.get(keys.PROV_PACKAGES) or {}).get(engine_package(str(backend)))
    dtype = meta.get(keys.DTYPE)
    if backend == "gguf":   # llama.cpp ignores dtype: the GGUF's tensor types (its roster quantization) decide
        options = meta.get(keys.OPTIONS) if isinstance(meta.get(keys.OPTIONS), dict) else {}
        dtype = f"GGUF {options['quantization']}" if isinstance(options.get("quantization"), str) else "GGUF"
    return {"backend": backend, "engine_version": version, "dtype": dtype,
            "gpu": hw.get(keys.HW_GPU_NAME) or None, "driver": hw.get(keys.HW_DRIVER) or None,
            "cpu": hw.get(keys.HW_CPU) or None, "runtime": (prov.get(keys.PROV_JOB) or {}).get(keys.JOB_RUNTIME),
            "kit": prov.get(keys.PROV_KIT_VERSION)}
