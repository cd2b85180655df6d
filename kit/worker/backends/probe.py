"""Run one backend on a few inputs and print the outcome as JSON (a probe for tests and for images).

    python -m kit.worker.backends.probe --backend gguf --model kit-demo/tiny-llama-gguf \\
        --revision <40-hex> --cache-dir HUB --input "the quick brown fox" --max-new-tokens 16

Prints one JSON object: backend, versions, speed facts and, per input, the generation
(text, truncated, generated_tokens, token_ids) or the score (yes, no, native). Roster options go
in `--options '{"key": value}'`. A kit error prints its one line on stderr and exits with its code.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path


def probe(args: argparse.Namespace) -> dict:
    """Load the backend for the run described by `args`, run the inputs, return the JSON-ready outcome."""
    from kit.config.backends import engine_for
    from kit.config.roster import Run
    from kit.weights.snapshot import resolve_snapshot
    from kit.worker.backends.base import get_backend

    from pydantic import ValidationError

    from kit.config.loading import config_error_from

    try:   # the run as a roster would hold it: refused as a roster's [[run]] is, in one line
        run = Run.model_validate({
            "model": args.model, "revision": args.revision, "backend": args.backend,
            **({"task": args.task} if args.task else {}),   # unset: the backend's own task, as in a roster
            "dtype": args.dtype, "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens,
            "seed": args.seed, "options": json.loads(args.options),
        }, context={"allow_unpinned": args.revision is None})
    except ValidationError as exc:
        raise config_error_from(exc, Path("--options"), None, Run) from None
    backend = get_backend(engine_for(run.backend))(run, resolve_snapshot(run.model_id, run.revision, args.cache_dir))
    backend.load()
    try:
        outputs = backend.generate(args.input) if run.task == "generate" else backend.score(args.input)
        extra = backend.model_info() if hasattr(backend, "model_info") else {}
        encoded = [backend.encode(i) for i in args.input] if hasattr(backend, "encode") else None
        return {"backend": run.backend, "versions": backend.versions(), "speed_facts": backend.speed_facts(),
                "model_info": extra, "encoded": encoded, "outputs": [dataclasses.asdict(o) for o in outputs]}
    finally:
        backend.close()


def main(argv: list[str]) -> int:
    """Parse the arguments, run the probe, print its JSON."""
    from kit.errors import KitError, error_line

    p = argparse.ArgumentParser(prog="python -m kit.worker.backends.probe", description=__doc__.splitlines()[0])
    p.add_argument("--backend", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--revision", default=None)
    p.add_argument("--cache-dir", type=Path, default=None)
    p.add_argument("--task", default=None, choices=("generate", "score"), help="default: the backend's own")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--options", default="{}", help="roster options as a JSON object")
    p.add_argument("--input", action="append", default=[], help="one prompt or text (repeatable)")
    p.add_argument("--inputs-json", type=Path, default=None, help="a JSON list of inputs, added after --input")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here (engines may log on stdout)")
    args = p.parse_args(argv)
    if args.inputs_json is not None:
        args.input += json.loads(args.inputs_json.read_text(encoding="utf-8"))
    try:
        result = probe(args)
    except KitError as exc:
        print(error_line(exc), file=sys.stderr)
        return exc.exit_code
    text = json.dumps(result, ensure_ascii=False, sort_keys=True)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
