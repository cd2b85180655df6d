"""The dataset card (README.md) of a release, in the shape lrb publishes: front matter for the Hugging
Face Hub, per-run macro scores, F1 by language, every prompt used verbatim, and how to reproduce
each result (images by digest, REPRODUCE.md, `kit reproduce`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from kit.results import keys
from kit.results.tables import Markdown, md_code, md_text

SCORE_COLUMNS = keys.METRIC_NAMES
VIEWER_FILE = "data/train.csv"


@dataclass(frozen=True)
class CardPair:
    """One complete checkpoint, as the card needs it: run, language, metadata, metrics, provenance."""

    run: str
    language: str
    metadata: Mapping[str, Any]
    metrics: Mapping[str, Any]
    provenance: Mapping[str, Any]
    signed: str = "unsigned"   # how its checkpoint is signed (kit.results.release._signatures)


@dataclass(frozen=True)
class CardPrompt:
    """A prompt file used by the release's runs: its name, task, digest, text and the runs using it."""

    name: str
    task: str
    sha256: str
    text: str
    runs: tuple[str, ...]


def dataset_card(name: str, license_id: str, pairs: Sequence[CardPair], prompts: Sequence[CardPrompt],
                 status_line: str, files: Sequence[str], reproduce_guide: bool) -> str:
    """The README.md text of a release."""
    runs = sorted({p.run for p in pairs})
    languages = sorted({p.language for p in pairs})
    n_items = sorted({int(p.metrics.get(keys.N_ITEMS, 0)) for p in pairs})
    parts = [
        _front_matter(name, license_id),
        f"# Land-use relevance benchmark: {md_text(name)}\n",
        f"{status_line} {len(runs)} runs, {len(languages)} languages ({', '.join(map(md_code, languages))}), {len(pairs)} "
        f"run-language pairs, {'/'.join(map(str, n_items))} items per language. Scores are recomputed from the "
        "published predictions (`kit verify` checks them); coverage is in `SNAPSHOT_STATUS.md`.\n",
        _digests(pairs),
        _scores(pairs),
        _by_language(pairs, languages),
        _prompts(prompts),
        _reproducibility(pairs, reproduce_guide),
        _signatures(pairs),
        "## Files\n\n" + "\n".join(f"- {md_code(f)}" for f in files) + "\n",
    ]
    return "\n".join(part for part in parts if part)


def _front_matter(name: str, license_id: str) -> str:
    return (f"---\nlicense: {license_id}\npretty_name: {_yaml_str(name)}\ntask_categories:\n- text-classification\n"
            "tags:\n- land-use\n- land-cover\n- remote-sensing\n- llm-benchmark\nconfigs:\n- config_name: default\n"
            f"  data_files:\n  - split: train\n    path: {VIEWER_FILE}\n---\n")


def _yaml_str(text: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML), every character past ASCII escaped:
    YAML refuses C1 controls in a document and folds U+0085 and the line separators."""
    import json

    return json.dumps(text, ensure_ascii=True)


def _digests(pairs: Sequence[CardPair]) -> str:
    manifests = sorted({str(p.metadata.get(keys.MANIFEST_SHA256)) for p in pairs if p.metadata.get(keys.MANIFEST_SHA256)})
    files = sorted({(p.language, str(p.metadata.get(keys.BENCHMARK_SHA256))) for p in pairs})
    lines = [f"- manifest sha256: {md_code(m)}" for m in manifests]
    lines += [f"- benchmark file sha256 ({md_code(lang)}): {md_code(digest)}" for lang, digest in files]
    return "\n".join(lines) + "\n" if lines else ""


def _scores(pairs: Sequence[CardPair]) -> str:
    out = ["## Scores\n", "Macro means over each run's languages; sorted by f1, then run.\n"]
    for task in sorted({str(p.metadata.get(keys.TASK, keys.TASK_GENERATE)) for p in pairs}):
        rows = []
        for run in sorted({p.run for p in pairs if p.metadata.get(keys.TASK, keys.TASK_GENERATE) == task}):
            mine = [p for p in pairs if p.run == run]
            meta = mine[0].metadata
            means = {m: round(fmean(float(p.metrics[m]) for p in mine), 4) for m in SCORE_COLUMNS}
            rows.append([run, str(meta.get(keys.MODEL_ID)), str(meta.get(keys.MODEL_REVISION) or "unpinned"),
                         str(meta.get(keys.BACKEND)), str(len(mine)), *(f"{means[m]:.4f}" for m in SCORE_COLUMNS)])
        rows.sort(key=lambda r: (-float(r[5 + SCORE_COLUMNS.index(keys.F1)]), r[0]))
        decoding = _decoding(pairs, task)
        out.append(f"### {md_text(task)}{md_text(decoding)}\n")
        out.append(_table(["run", "model_id", "revision", "backend", "languages", *SCORE_COLUMNS], rows))
    return "\n".join(out)


def _decoding(pairs: Sequence[CardPair], task: str) -> str:
    if task != keys.TASK_GENERATE:
        return ""
    budgets = sorted({str(p.metadata.get(keys.MAX_NEW_TOKENS)) for p in pairs
                      if p.metadata.get(keys.TASK, keys.TASK_GENERATE) == task})
    return f" (greedy, max_new_tokens={'/'.join(budgets)})"


def _by_language(pairs: Sequence[CardPair], languages: list[str]) -> str:
    f1 = {(p.run, p.language): float(p.metrics[keys.F1]) for p in pairs}
    rows = [[run, *(f"{f1[(run, lang)]:.4f}" if (run, lang) in f1 else "" for lang in languages)]
            for run in sorted({p.run for p in pairs})]
    return "## F1 by language\n\n" + _table(["run", *languages], rows)


def _prompts(prompts: Sequence[CardPrompt]) -> str:
    out = ["## Prompts\n", "Each prompt file the runs used, verbatim; `{}` is where the sentence goes.\n"]
    for p in prompts:
        fence = "`" * max(3, _longest_backtick_run(p.text) + 1)
        out.append(f"### {md_code(p.name)} ({md_text(p.task)}; sha256 {md_code(p.sha256)})\n\n"
                   f"Runs: {', '.join(map(md_code, p.runs))}\n")
        out.append(f"{fence}text\n{p.text}{'' if p.text.endswith(chr(10)) else chr(10)}{fence}\n")
    return "\n".join(out)


def _longest_backtick_run(text: str) -> int:
    longest = current = 0
    for char in text:
        current = current + 1 if char == "`" else 0
        longest = max(longest, current)
    return longest


def _reproducibility(pairs: Sequence[CardPair], reproduce_guide: bool) -> str:
    images: dict[tuple[str, ...], set[str]] = {}
    for p in pairs:
        image = p.provenance.get(keys.PROV_IMAGE) or {}
        key = tuple(str(image.get(k) or "") for k in (keys.IMAGE_BACKEND, keys.IMAGE_DIGEST, keys.IMAGE_ARTIFACT,
                                                      keys.IMAGE_ARTIFACT_SHA256, keys.IMAGE_LOCK_SHA256))
        images.setdefault(key, set()).add(p.run)
    rows = [[b, md_code(d) if d else "none (host runtime)", a or "", md_code(s) if s else "", md_code(lk) if lk else "",
             Markdown(", ".join(map(md_code, sorted(r))))] for (b, d, a, s, lk), r in sorted(images.items())]
    guide = ("`REPRODUCE.md` (kit's artifact reviewer guide, in this folder)" if reproduce_guide
             else "kit's `REPRODUCE.md`")
    return "\n".join([
        "## Reproducibility\n",
        "Each result was computed in the image named below by its digest (an OCI image digest; the SIF or "
        "squashfs artifact and the lock file by sha256), from weights at the pinned revision, on the recorded data "
        "and prompt digests. kit's checkpoints under `checkpoints/` keep the full provenance (image, weights, data, "
        "job, hardware, packages) and their `:::MLLOG` logs; the run files under `<language>/` are lrb's own result "
        "files.\n",
        _table(["backend", "image digest", "artifact", "artifact sha256", "lock sha256", "runs"], rows),
        f"To rerun one result in its pinned image and compare, follow {guide}:\n",
        "```bash\nkit reproduce checkpoints/<language>/<run>.json   # REPRODUCED, WITHIN TOLERANCE or DIFFERENT\n```\n",
        "Exact equality is expected only on the same GPU model, runtime and batch mode.\n",
    ])


def _signatures(pairs: Sequence[CardPair]) -> str:
    """The card's section saying which results are signed, by which key, and how to check them offline."""
    signed = sum(p.signed != "unsigned" for p in pairs)
    rows = [[md_code(p.run), md_code(p.language), p.signed] for p in sorted(pairs, key=lambda p: (p.run, p.language))]
    return "\n".join([
        "## Signatures\n",
        f"{signed} of {len(pairs)} results carry a signed in-toto statement (`checkpoints/<language>/<run>.intoto.jsonl`: "
        "the checkpoint and its log by sha256, in a DSSE envelope). A signature proves who published a result and "
        "that it has not changed since, not that the computation was honest (`kit reproduce` reruns it). Check them "
        "offline with the signers' public keys (`keys.json`, when the release carries it):\n",
        "```bash\nkit verify checkpoints --trusted-keys keys.json\n```\n",
        _table(["run", "language", "signature"], rows),
    ])


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(text: str) -> str:
        return md_text(text)   # Markdown made by md_code is kept as it is

    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
