"""Write the reproduction verdict as JSON and Markdown: every differing item, the two
environments side by side, the settings that differ, and the note on exactness."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kit.files import file_sha256, name_part, write_text_atomic
from kit.outputs import write_output
from kit.results.tables import md_code, md_text
from kit.repro.compare import EXACTNESS_NOTE, Comparison, Tolerance, environment, setup
from kit.repro.deliberate import Deliberate
from kit.repro.resolve import ResolvedImage
from kit.results import keys
from kit.results.kinds import kind_of

DELIBERATE_NOTE = ("A deliberate rerun on another engine or dtype (kit reproduce --as) measures drift: how many "
                   "verdicts and how much F1 move between the two setups. Its verdict is not a failure to reproduce.")


def verdict_data(result_path: Path, recorded: dict[str, Any], rerun: dict[str, Any], cmp: Comparison,
                 tolerance: Tolerance, image: ResolvedImage, settings_diff: list[str],
                 deliberate: Deliberate = Deliberate()) -> dict[str, Any]:
    """The JSON verdict: the comparison, the two environments and setups, what was changed on purpose
    (`deliberate`), and the paired change of the score with its interval where the kind has one."""
    kind = kind_of(recorded)
    paired = kind.paired_change(recorded, rerun) if kind is not None else None
    return {
        "deliberate": deliberate.as_dict(), "setups": {"recorded": setup(recorded), "rerun": setup(rerun)},
        "paired": paired, "run": recorded.get(keys.METADATA, {}).get(keys.RUN),
        "result": str(result_path), "result_sha256": file_sha256(result_path),   # what it reran, byte for byte
        "verdict": cmp.verdict, "agreement": cmp.agreement,
        "metric_deltas": cmp.metric_deltas, "tolerance": vars(tolerance), "bounded": cmp.bounded,
        "differing_items": cmp.differing, "settings_differences": settings_diff,
        "image": {"runtime": image.runtime, "ref": image.ref, "matches_record": image.matches_record,
                  "note": image.note, "provenance": image.provenance},
        "environments": {"recorded": environment(recorded), "rerun": environment(rerun)},
        "note": DELIBERATE_NOTE if deliberate else EXACTNESS_NOTE,
    }


def verdict_markdown(data: dict[str, Any]) -> str:
    """The Markdown verdict."""
    title = "Deliberate rerun" if data.get("deliberate") else "Reproduction"
    lines = [f"# {title} of {md_code(data['result'])}", "", f"**Verdict: {md_text(data['verdict'])}**", "",
             f"- items with the same verdict: {data['agreement']:.2%} "
             f"(tolerance: >= {data['tolerance']['agreement']:.0%}, |delta {data.get('bounded', 'F1')}| <= {data['tolerance']['f1']})",
             f"- image: {md_text(data['image']['note'])}" + ("" if data["image"]["matches_record"] else " — NOT the recorded image")]
    if data.get("deliberate"):
        lines.append("- changed on purpose (kit reproduce --as): "
                     + ", ".join(f"{md_text(k)} {md_text(v)}" for k, v in data["deliberate"].items()))
    paired = data.get("paired")
    if paired:
        f1 = paired["f1"]
        lines.append(f"- verdicts changed: {paired['changed']} of {paired['items']} items; F1 {f1['b']:.4f} -> "
                     f"{f1['a']:.4f}, change {f1['diff']:+.4f} (95% interval {f1['low']:+.4f} to {f1['high']:+.4f}); "
                     f"McNemar p = {paired['p_value']:.3g}")
    if data["settings_differences"]:
        lines += ["- settings that differ from the recorded run (they can explain differences):"]
        lines += [f"  - {md_text(d)}" for d in data["settings_differences"]]
    lines += ["", "## Metric deltas (rerun - recorded)", "", "| metric | delta |", "| --- | --- |"]
    lines += [f"| {md_text(k)} | {v:+.6f} |" for k, v in data["metric_deltas"].items()]
    lines += ["", "## Environments", "", "| fact | recorded | rerun |", "| --- | --- | --- |"]
    rec, new = data["environments"]["recorded"], data["environments"]["rerun"]
    for key in rec:
        mark = "" if rec[key] == new.get(key) else " **≠**"
        lines.append(f"| {md_text(key)} | {md_text(rec[key])} | {md_text(new.get(key))}{mark} |")
    lines += ["", f"## Differing items ({len(data['differing_items'])})", ""]
    if data["differing_items"]:
        lines += ["| item | recorded | rerun | recorded output | rerun output |", "| --- | --- | --- | --- | --- |"]
        for d in data["differing_items"]:
            cells = [md_text(str(d.get(k))[:80]) for k in
                     ("item_id", "recorded", "rerun", "recorded_output", "rerun_output")]
            lines.append("| " + " | ".join(cells) + " |")
    else:
        lines.append("None: every prediction and raw output is identical.")
    lines += ["", "## Note", "", data["note"], ""]
    return "\n".join(lines)


_VERDICT_FILE = re.compile(r"reproduce-[^/]+\.(json|md)")


def earlier_verdicts(files: set[str]) -> bool:
    """Whether `files` are verdicts an earlier kit wrote before its outputs had an inventory (kit.outputs)."""
    return bool(files) and all(_VERDICT_FILE.fullmatch(f) for f in files)


def write_verdict(out_dir: Path, stem: str, data: dict[str, Any]) -> tuple[Path, Path]:
    """Write reproduce-<stem>.json and .md into out_dir; returns both paths. `stem` comes from the
    result (its file name and recorded language): a ConfigError unless it is one plain name. out_dir
    is written under the output contract (kit.outputs): earlier verdicts are kept, a folder holding
    anything kit did not write there is refused."""
    out_dir, stem = Path(out_dir), name_part(stem, "result name (file stem and metadata.language)")
    names = (f"reproduce-{stem}.json", f"reproduce-{stem}.md")
    with write_output(out_dir, "reproduce", force_needed=False, update=True, legacy=earlier_verdicts) as out:
        write_text_atomic(out.stage / names[0], json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                          durable=False)
        write_text_atomic(out.stage / names[1], verdict_markdown(data), durable=False)
    return out_dir / names[0], out_dir / names[1]
