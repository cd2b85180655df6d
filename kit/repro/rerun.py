"""Rerun exactly one recorded pair: a one-run roster from the recorded settings, `kit shard`
in the resolved image (docker, apptainer, sqsh) or on the host, into a fresh results tree."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from kit.config.names import ENV_NAME
from kit.errors import ConfigError, ImageError, RerunError
from kit.files import write_text_atomic
from kit.repro.resolve import ResolvedImage, load_result, recorded_run
from kit.results import keys
from kit.results.store import checkpoint_path


def roster_for(result: dict[str, Any], benchmark_root: Path, *, batch_size: int | None = None,
               run: dict[str, Any] | None = None) -> str:
    """A roster TOML holding one run: the result's recorded settings, or `run` (roster keys) when given
    (a deliberate rerun's, kit.repro.deliberate.changed_run)."""
    run = dict(run) if run is not None else recorded_run(result)
    options = run.pop("options")
    if batch_size:
        run["batch_size"] = batch_size
    lines = [f"benchmark = {json.dumps(str(benchmark_root))}", "", "[[run]]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in run.items()]
    if options:
        lines += ["", "[run.options]"] + [f"{k} = {json.dumps(v)}" for k, v in sorted(options.items())]
    return "\n".join(lines) + "\n"


def recorded_engine_env(result: dict[str, Any]) -> dict[str, str]:
    """The engine settings the result's job ran with (provenance.engine_env: vLLM's VLLM_* such as its CPU
    KV-cache size, thread counts), which the rerun gets in any runtime; only string values of the engine
    setting names --engine-env takes (kit.config.engine_env) are taken, anything else is left out."""
    from kit.config.engine_env import engine_environment

    recorded = (result.get(keys.PROVENANCE) or {}).get(keys.PROV_ENGINE_ENV)
    if not isinstance(recorded, dict):
        return {}
    named = {k: v for k, v in recorded.items()
             if isinstance(k, str) and isinstance(v, str) and ENV_NAME.fullmatch(k) and "\0" not in v}
    # only what --engine-env takes (kit.config.engine_env): a result file is data, and PYTHONPATH,
    # LD_PRELOAD or PATH from it would run code on the reviewer's machine
    return engine_environment(named)


def run_in_image(image: ResolvedImage, kit_args: list[str], binds: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run `kit <kit_args>` in the resolved image (or on the host); (exit status, output)."""
    if image.runtime == "host":
        # the host's engine settings (vLLM's CPU KV-cache size, the visible GPUs) carry over
        kept = {k: v for k, v in os.environ.items()
                if k in ("PATH", "HOME", "LANG", "USER", "CUDA_VISIBLE_DEVICES") or k.startswith("VLLM_CPU_")}
        run_env = {**kept, **env}   # the recorded engine settings (in env) win over this machine's
        # -P: the folder a reviewer runs this in (a downloaded release) is never on the import path, so a
        # `kit/` folder there cannot stand in for the installed kit
        proc = subprocess.run([sys.executable, "-P", "-m", "kit", *kit_args], capture_output=True, text=True,
                              env=run_env, timeout=3600)
        return proc.returncode, proc.stdout + proc.stderr
    from kit.images import execute

    argv = ["kit", *kit_args]
    if image.runtime == "docker":
        out = execute.run_oci(str(image.ref), argv, binds, env, user=f"{os.getuid()}:{os.getgid()}")
    elif image.runtime == "apptainer":
        out = execute.run_sif(Path(str(image.ref)), argv, binds, env)
    elif image.runtime == "sqsh":
        out = execute.run_sqsh(Path(str(image.ref)), argv, binds, env, user=f"{os.getuid()}:{os.getgid()}")
    else:
        raise ImageError(f"unknown runtime {image.runtime!r}", fix="use docker, apptainer, sqsh or host")
    return out.status, out.stdout + out.stderr


def rerun_pair(result: dict[str, Any], image: ResolvedImage, benchmark_root: Path, weights: Path | None,
               workdir: Path, *, batch_size: int | None = None, run: dict[str, Any] | None = None,
               extra_env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """Run the pair again (as `run`, roster keys, when given: a deliberate rerun's); returns the new
    checkpoint and the worker's output. `extra_env` (the user's engine settings) wins over the recorded ones."""
    meta = result[keys.METADATA]
    # the folder the worker may write is one kit's own private folder holds: a container that runs as another
    # user (uid 1000 in the Apptainer helper) must be let write it, and no other user of this machine may
    # reach it (to swap the rerun's checkpoint, or its roster, before it is judged)
    private = Path(workdir).resolve()
    private.mkdir(parents=True, exist_ok=True)
    private.chmod(0o700)
    workdir = private / "rerun"
    workdir.mkdir(exist_ok=True)
    out = workdir / "results"
    roster = workdir / "roster.toml"
    write_text_atomic(roster, roster_for(result, Path(benchmark_root).resolve(), batch_size=batch_size, run=run))
    run_name = run["model"] if run is not None else meta.get(keys.RUN) or meta[keys.MODEL_ID]
    lang = meta[keys.LANGUAGE]
    kit_args = ["shard", "--roster", str(roster), "--results", str(out), "--languages", lang, "--model", run_name,
                "--force"]
    if not (run.get("revision") if run is not None else meta.get(keys.MODEL_REVISION)):
        kit_args.append("--allow-unpinned")
    env = {**recorded_engine_env(result), **(extra_env or {}),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
           "TRANSFORMERS_VERBOSITY": "error", "KIT_RUNTIME": image.runtime}
    if weights:
        env["HF_HUB_CACHE"] = str(Path(weights).resolve())
    if image.digest:
        env["KIT_IMAGE_DIGEST"] = image.digest
    if image.runtime in ("apptainer", "sqsh"):
        env["KIT_IMAGE_ARTIFACT"] = "sif" if image.runtime == "apptainer" else "sqsh"
        env["KIT_IMAGE_SHA256"] = image.sha256 or ""
    elif image.runtime == "docker":
        env["KIT_IMAGE_ARTIFACT"] = "oci"
    binds = sorted({str(workdir), str(Path(benchmark_root).resolve()), *([str(Path(weights).resolve())] if weights else [])})
    # the container may run as another user (uid 1000 in the Apptainer helper): let it write here
    out.mkdir(parents=True, exist_ok=True)
    for p in (workdir, out):
        p.chmod(0o777)
    roster.chmod(0o644)
    try:
        status, log = run_in_image(image, kit_args, binds, env)
    except FileNotFoundError as exc:
        raise ImageError(f"{exc.filename} not found", fix="install it, or choose another --runtime") from None
    path = checkpoint_path(out, run_name, lang)
    if not path.exists():
        raise ConfigError(f"the rerun wrote no checkpoint (exit {status}): {failure_summary(log)}",
                          fix=f"see the worker's whole log, {keep_log(log)}; check --weights and --benchmark")
    try:   # held to what the result itself was held to (its log, its verdicts, its bytes as logged)
        return load_result(path), log
    except ConfigError as exc:
        raise RerunError(f"the rerun's checkpoint does not hold: {exc.message}",
                         fix=f"see the worker's whole log, {keep_log(log)}") from None


_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception|Exit)|ERROR\b|(?:kit: )?error:)[^\n]*", re.M)


def failure_summary(log: str, tail: int = 400) -> str:
    """A failed worker's log in one line: the distinct error lines it printed (an engine's root cause
    comes before its last word: vLLM's "Engine core initialization failed. See root cause above."), then
    its last characters."""
    # the worker's own "; fix: ..." reads as a suggestion inside this line, which ends in a fix of its own
    errors = list(dict.fromkeys(m.group(0).strip()[:300].replace("; fix: ", "; the worker suggests: ")
                                for m in _ERROR_LINE.finditer(log)))
    if errors:
        return f"errors in its log: {' | '.join(errors[-6:])}"
    text = log.strip()
    start = max(0, len(text) - tail)
    if start:   # whole lines, never a sentence begun in its middle
        newline = text.find("\n", start)
        start = newline + 1 if 0 <= newline < len(text) - 1 else start
    end = " ".join(text[start:].split())
    return f"its last lines: {end}" if end else "no output"


def keep_log(log: str) -> str:
    """Write a failed rerun's whole log where the user can read it; its path."""
    import tempfile

    fd, name = tempfile.mkstemp(prefix="kit-rerun-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(log)
    return name
