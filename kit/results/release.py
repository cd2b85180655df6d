"""`kit release`: a results tree turned into a release folder laid out as lrb publishes one.

RELEASE/
  README.md              dataset card (kit.results.release_card): scores, prompts verbatim, reproducibility
  SNAPSHOT_STATUS.md     complete or in progress, with each run's coverage (kit.results.snapshot_status)
  leaderboard.csv ...    kit's report of the complete checkpoints (kit.results.report.write_report)
  data/train.csv         one row per item per run-language: ids, gold, prediction, score
  <language>/<run>.json  lrb's own result files (kit.results.kinds.lrb.export.lrb_file: a file lrb wrote comes
                         as it is, in its place, its top level or a batch folder)
  checkpoints/           kit's checkpoints, :::MLLOG logs and signed statements as written, for `kit reproduce`
                         and `kit verify checkpoints --trusted-keys keys.json`
  keys.json              the signers' public keys (kit release --public-keys)
  REPRODUCE.md           kit's reviewer guide, when kit runs from its source tree
  .kit-output.json       what kit wrote (hidden: never published), so --force replaces only a release

Only complete checkpoints go in; an invalid one stops the release (nothing written), a stale one
(with a roster) is left out and named in the status. The folder is written under the output
contract (kit.outputs): built beside RELEASE and renamed into place, so a reader never sees half a
release, and --force replaces only a release kit wrote that nobody has added to or changed since.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kit.errors import CheckpointError, ConfigError
from kit.files import regular_file_here, regular_files, write_bytes_atomic, write_bytes_new, write_text_atomic
from kit.outputs import OutputFolder, check_output, write_output
from kit.results import keys
from kit.results.keys import PairState
from kit.results.kinds import kind_name, kind_of
from kit.results.kinds.lrb import LRB
from kit.results.records import recorded_task
from kit.results.release_card import VIEWER_FILE, CardPair, CardPrompt, dataset_card
from kit.results.tables import csv_cell
from kit.results.store import collection_of, left_out_note, travelling_files, unread_files, why_unread
from kit.results.snapshot_status import Coverage, coverage, snapshot_status_text, unplanned_statuses

_WORDS = {True: "true", False: "false"}
ITEM_COLUMNS = ("run", "model_id", "language", "item_id", "expected", "predicted", "correct", "score_yes",
                "parse_mode", "truncated")
_REPRODUCE_GUIDE = Path(__file__).resolve().parents[2] / "REPRODUCE.md"
# the public keys of a release's signers (kit release --public-keys), what a reviewer verifies it with
KEYS_FILE = "keys.json"


@dataclass
class ReleaseOutcome:
    """What a release holds: its folder, files (relative, sorted), status and per-run coverage."""

    release: Path
    files: list[str]
    complete: bool
    coverage: list[Coverage]
    left_out: dict[str, list[str]] = field(default_factory=dict)   # stale checkpoint -> reasons
    outside: dict[str, str] = field(default_factory=dict)   # checkpoint of a pair the roster does not plan -> state
    in_batches: dict[str, str] = field(default_factory=dict)   # checkpoint of an lrb batch folder -> the batch
    not_counted: str | None = None   # the archive and deeper files left out (kit.results.store.left_out_note)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form for --json."""
        return {"release": str(self.release), "status": "complete" if self.complete else "in progress",
                "files": self.files, "coverage": [c.as_dict() for c in self.coverage], "left_out": self.left_out,
                "outside_the_plan": self.outside, "in_batches": self.in_batches, "not_counted": self.not_counted}


# a licence id as the Hub's card metadata takes it (mit, cc-by-4.0, apache-2.0, other)
LICENSE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,63}")


def build_release(results: Path, release: Path, *, benchmark: Any = None, runs: list[Any] | None = None,
                  name: str | None = None, license_id: str = "mit", force: bool = False,
                  public_keys: list[Any] | None = None) -> ReleaseOutcome:
    """Write the release folder of RESULTS to RELEASE. `benchmark` (a loaded lrb benchmark) gives the prompt
    texts; `runs` (roster runs) the planned pairs; without them, every run found times every language found.
    Each checkpoint's signed statement (kit sign) goes with it; with `public_keys` (the signers' keys,
    shipped as keys.json) every signed result must verify under them, or nothing is written."""
    results, release = Path(results), Path(release)
    if not LICENSE_ID.fullmatch(license_id):   # it goes into the card's YAML front matter as it is
        raise ConfigError(f"--license {license_id!r} is not a licence id",
                          fix="write the Hub's id of the licence: letters, digits and . + - (mit, cc-by-4.0, "
                              "apache-2.0, other)")
    _check_places(results, release, force)
    unread = unread_files(results)
    if unread:   # a release must not lose a site's results without a word (as kit collect refuses them)
        raise ConfigError(f"{unread[0]}: {why_unread(results, unread[0])} ({len(unread)} file(s) not read under "
                          f"{results}), and a release would leave it out", fix="move such files out of the results "
                          "folder, or release the folder that holds their language folders on its own")
    states, planned, outside, in_batches = _read_states(results, benchmark, runs)
    complete = [s for s in states if s.state == PairState.COMPLETE]
    if not complete:
        batches = sorted(set(in_batches.values()))
        raise ConfigError(f"{results}: no complete checkpoint to release" + (
                          f" outside its batch folders ({', '.join(batches[:5])})" if batches else ""),
                          fix=f"release a batch folder on its own (kit release {results}/{batches[0]} -o ...)"
                          if batches else "run `kit status` on it; point at the folder holding <language>/<run>.json")
    _refuse_links(results, complete)
    # each file read on its own, twice (checked, then written): a release of 20,000 pairs is never held
    checked = _check_files(complete)
    signatures = _signatures(complete, public_keys)
    pairs = [replace(p, signed=signatures.get(s.path, "unsigned")) for p, s in zip(checked.pairs, complete)]
    prompts = _prompts(checked.prompts, benchmark, results)
    covered = coverage(states)
    done = all(c.done for c in covered)
    title = name or (getattr(benchmark, "name", None) if benchmark is not None else None) or results.resolve().name
    with write_output(release, "release", force=force, inputs=[results]) as out:
        if public_keys is not None:   # first, so that the card's list of files names it
            from kit.signing import public_dict

            write_text_atomic(out.stage / KEYS_FILE, json.dumps([public_dict(k) for k in public_keys], indent=2) + "\n")
        _fill(out, results, complete, pairs, prompts, covered, done, planned, title, license_id,
              benchmark, runs)
        files = regular_files(out.stage)
    left = {str(s.path): list(s.reasons) for s in states if s.state == PairState.STALE}
    return ReleaseOutcome(release, files, done, covered, left, {str(s.path): s.state for s in outside},
                          {str(path): batch for path, batch in in_batches.items()}, left_out_note(results))


def _check_places(results: Path, release: Path, force: bool) -> None:
    if not results.is_dir():
        raise ConfigError(f"results folder {str(results)!r} does not exist",
                          fix="point at the folder holding <language>/<run>.json checkpoints (e.g. results/)")
    check_output(release, "release", force=force, inputs=[results])


def _read_states(results: Path, benchmark: Any, runs: list[Any] | None
                 ) -> tuple[list[Any], bool, list[Any], dict[Path, str]]:
    """Each pair's state (kit.results.status), whether they were planned from a roster, the files found
    of pairs the roster does not plan (left out), and the files of lrb batch folders ({path: batch}, left
    out: a release is the tree's own leaderboard, as lrb's active one, and a batch a collection of its own,
    kit report's batches/, never a second copy of a pair in the card, its items or checkpoints/). Every
    file released is held to the benchmark when there is one, by the rule every command follows."""
    from kit.results.identity import PlanExpectations
    from kit.results.status import pair_states, scan_results

    validate_all = every_core(results, sections=False)
    if benchmark is not None and runs:
        from kit.plan import select_pairs

        expect = PlanExpectations(benchmark, runs)
        states = pair_states(results, select_pairs(runs, benchmark, None), expect, validate_all)
        planned_paths, planned = {s.path for s in states}, {(s.pair.run, s.pair.language) for s in states}
        extra = [s for s in scan_results(results, validate_all, expect) if s.path not in planned_paths]
        # another copy of a planned pair (lrb's batch folders) is named with its batch by build_release; a pair
        # the roster does not plan is no part of this release, and is named rather than counted against the
        # planned pairs
        _refuse_invalid(states + extra)   # anywhere in the tree: an invalid file stops a release
        in_batches = _batches(results, extra)
        outside = [s for s in extra if s.path not in in_batches and (s.pair.run, s.pair.language) not in planned]
        return sorted(states, key=lambda s: (s.pair.run, s.pair.language)), True, outside, in_batches
    found = scan_results(results, validate_all, PlanExpectations(benchmark) if benchmark is not None else None)
    _refuse_invalid(found)
    in_batches = _batches(results, found)
    own = [s for s in found if s.path not in in_batches]
    return (unplanned_statuses(results, own) if own else []), False, [], in_batches


def _batches(results: Path, found: list[Any]) -> dict[Path, str]:
    """{path: its lrb batch folder} of the files found that lie in one."""
    return {s.path: batch for s in found if (batch := collection_of(results, s.path, s.pair.language))}


def every_core(results: Path, *, sections: bool) -> Any:
    """A ValidateAll that reads every file again (no cache: the evidence policy of a release) on every
    usable core (kit.results.parallel), keeping sections for a report's reader."""
    from kit.results.cache import CheckpointCache

    return CheckpointCache(results, None, sections=sections).validate_all


def _refuse_invalid(states: list[Any]) -> None:
    invalid = [s for s in states if s.state == PairState.INVALID]
    if invalid:
        first = invalid[0]
        raise CheckpointError(f"{first.path}: invalid checkpoint ({'; '.join(first.reasons) or 'unreadable'})"
                          + (f", and {len(invalid) - 1} more" if len(invalid) > 1 else ""),
                          fix="rerun the pair (kit shard --force) or move the file out of RESULTS, then release again")


def _refuse_links(results: Path, complete: list[Any]) -> None:
    """A linked checkpoint, log or folder would copy whatever it points at into the release: refuse it,
    as `kit collect` does (kit.results.store.linked_part)."""
    from kit.results.store import linked_part

    links = list(dict.fromkeys(link for s in complete if (link := linked_part(results, s.path)) is not None))
    if links:
        raise ConfigError(f"symlink: {links[0]} is a link, not a file the site wrote"
                          + (f", and {len(links) - 1} more" if len(links) > 1 else ""),
                          fix="replace each link with the file itself (or move it out of RESULTS), then release again")


@dataclass
class _Checked:
    """What the check pass keeps of the complete checkpoints: each one's card facts, and each prompt digest
    with its task, runs and a file that names it."""

    pairs: list[CardPair] = field(default_factory=list)
    prompts: dict[str, tuple[str, set[str], Path]] = field(default_factory=dict)


def _check_files(complete: list[Any]) -> _Checked:
    """Read each complete checkpoint once, keeping only what the card needs (values shared across files; its
    signature is added after);
    refuse (ConfigError) the first file changed since its job logged its digest, as `kit check`
    (log_matches_checkpoint), `kit collect` and `kit export` do (the sealed evidence policy), else the
    first that is not an lrb result."""
    from kit.results.evidence import evidence_reasons
    from kit.results.shared_values import shared_json

    out, table = _Checked(), {}
    edited: list[tuple[Path, str]] = []
    other_kind: tuple[Path, str] | None = None
    for s in complete:
        data = _read(s.path)
        why = "; ".join(evidence_reasons(s.path, data, sealed=True))
        if why:
            edited.append((s.path, why))
        if kind_of(data) is not LRB:
            other_kind = other_kind or (s.path, kind_name(data))
        if edited or other_kind:
            continue   # refused: only the count of edited files is still wanted
        meta = data[keys.METADATA]
        sha = str(meta.get(keys.PROMPT_SHA256))
        known = out.prompts.setdefault(sha, (str(recorded_task(meta)), set(), s.path))
        known[1].add(s.pair.run)   # the run as every command names it (lrb's files: run_id or model_id)
        facts = shared_json({"metadata": meta, "metrics": data[keys.METRICS],
                             "provenance": {keys.PROV_IMAGE: (data.get(keys.PROVENANCE) or {}).get(keys.PROV_IMAGE)}},
                            table, document_depth=1)
        out.pairs.append(CardPair(s.pair.run, s.pair.language, facts["metadata"], facts["metrics"], facts["provenance"]))
    if edited:
        path, why = edited[0]
        raise ConfigError(f"{path}: {why}" + (f", and {len(edited) - 1} more" if len(edited) > 1 else ""),
                          fix="rerun the pair (kit shard --force), or restore the file its job wrote, then release again")
    if other_kind:
        raise ConfigError(f"{other_kind[0]}: a {other_kind[1]} checkpoint; kit release writes lrb's layout",
                          fix="release only lrb results (keep each benchmark in its own results folder)")
    return out


def _read(path: Path) -> dict[str, Any]:
    """A complete checkpoint's document (read again for each pass: it was validated)."""
    return json.loads(path.read_text(encoding="utf-8"))


def _signatures(complete: list[Any], public_keys: list[Any] | None) -> dict[Path, str]:
    """How each checkpoint is signed, as the card says it; with `public_keys`, a ConfigError for the first
    signed one whose signature or statement does not verify under them (none is shipped that would fail)."""
    from kit.results.attest import signature_reasons, signed_notice
    from kit.results.store import envelope_path

    out = {}
    for s in complete:
        if not regular_file_here(envelope_path(s.path)):
            out[s.path] = "unsigned"
            continue
        if public_keys is not None:
            reasons = signature_reasons(s.path, public_keys)
            if reasons:
                raise ConfigError(f"{s.path}: {reasons[0]}", fix="sign it again (kit sign --force) or pass the key that "
                                                                 "signed it with --public-keys, then release again")
        note = signed_notice(s.path) or "signed (its statement could not be read)"
        out[s.path] = note + ("" if public_keys is not None else " (not checked: no --public-keys given)")
    return out


def _prompts(wanted: dict[str, tuple[str, set[str], Path]], benchmark: Any, results: Path) -> list[CardPrompt]:
    """Every prompt the checkpoints used (digest -> task, runs, a file naming it), read from the benchmark
    folder and matched by sha256."""
    if benchmark is None:
        raise ConfigError(f"{results}: the card needs the prompt texts, and no benchmark folder was given",
                          fix="pass --benchmark DIR (the sweep's benchmark folder) or --roster roster.toml")
    root = Path(benchmark.root)
    texts = {}
    for path in sorted(root.rglob("*.txt")):
        data = path.read_bytes()
        texts.setdefault(hashlib.sha256(data).hexdigest(), (path.relative_to(root).as_posix(), data))
    out = []
    for sha, (task, runs, example) in sorted(wanted.items(), key=lambda kv: (kv[1][0], kv[0])):
        if sha not in texts:
            raise ConfigError(f"{example}: metadata.prompt_sha256 {sha} matches no prompt file in {root}",
                              fix="pass --benchmark with the folder of the prompt files the sweep used")
        rel, data = texts[sha]
        out.append(CardPrompt(rel, task, sha, data.decode("utf-8"), tuple(sorted(runs))))
    return out


def _fill(out: OutputFolder, results: Path, complete: list[Any], pairs: list[CardPair], prompts: list[CardPrompt],
          covered: list[Coverage], done: bool, planned: bool, title: str, license_id: str, benchmark: Any,
          runs: list[Any] | None) -> None:
    """Write every file of the release into its empty staging folder (the files of the release it
    replaces that come out the same are linked in: OutputFolder.earlier)."""
    from kit.results.report import write_report

    tmp = out.stage
    expect = None
    if benchmark is not None and runs:
        from kit.results.identity import PlanExpectations

        expect = PlanExpectations(benchmark, runs)
    # the report of what the release holds: the tree's own collection, no batch folder's leaderboard
    write_report(results, tmp, expect=expect, own_output=False, validate_all=every_core(results, sections=True),
                 earlier=out.earlier, batches=False)
    _write_files(out, results, complete)
    write_text_atomic(tmp / "SNAPSHOT_STATUS.md", snapshot_status_text(title, covered, planned))
    guide = _REPRODUCE_GUIDE.is_file()
    if guide:
        write_bytes_atomic(tmp / "REPRODUCE.md", _REPRODUCE_GUIDE.read_bytes())
    status_line = ("Complete snapshot." if done else
                   "Snapshot in progress, not the final release (see `SNAPSHOT_STATUS.md`).")
    languages = {s.pair.language for s in complete}
    top = {"README.md", *(p.name + ("/" if p.is_dir() else "") for p in tmp.iterdir() if p.name not in languages)}
    listed = [*sorted(top - {"data/"}), VIEWER_FILE, "<language>/<run>.json"]
    write_text_atomic(tmp / "README.md", dataset_card(title, license_id, pairs, prompts, status_line, listed, guide))


def _write_files(out: OutputFolder, results: Path, complete: list[Any]) -> None:
    """Each complete checkpoint, one at a time in (run, language) order: its lrb file (as kit export lrb
    writes it: an lrb file as it is, in its place; a kit checkpoint converted), kit's checkpoint, log
    and signed statement as written, and its items' rows of data/train.csv (cells through csv_cell:
    data, never a spreadsheet formula)."""
    from kit.files import atomic_writer
    from kit.results.kinds.lrb.export import lrb_file

    tmp = out.stage
    # made durable together when the folder is renamed into place (kit.files.replace_folder)
    with atomic_writer(tmp / VIEWER_FILE, durable=False) as raw:
        viewer = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        writer = csv.writer(viewer, lineterminator="\n")
        writer.writerow(ITEM_COLUMNS)
        for s in sorted(complete, key=lambda s: (s.pair.run, s.pair.language)):
            data = _read(s.path)
            try:
                rel, body = lrb_file(results, s.path, data)
            except ValueError as exc:   # a file lrb's loader would refuse: no release that cannot be read back
                raise ConfigError(f"{s.path}: {exc}", fix="mend that key in the file (or leave the file out of "
                                                          "RESULTS), then release again") from None
            # into the new folder in one step each (no temporary file: the folder is swapped in whole)
            write_bytes_new(tmp / rel, body, same_as=out.same_as(tmp / rel))
            for source, copy in travelling_files(s.path, tmp / "checkpoints" / s.pair.language / s.path.name):
                write_bytes_new(copy, source.read_bytes(), same_as=out.same_as(copy))
            # the pair's own cells once; a score and the true/false cells are numbers and words, never formulas
            pair = [csv_cell(v) for v in (s.pair.run, data[keys.METADATA].get(keys.MODEL_ID), s.pair.language)]
            writer.writerows([*pair, csv_cell(item[keys.ITEM_ID]), csv_cell(item[keys.EXPECTED]),
                              csv_cell(item[keys.PREDICTED]), _WORDS[item[keys.PREDICTED] == item[keys.EXPECTED]],
                              "" if item.get(keys.SCORE_YES) is None else repr(float(item[keys.SCORE_YES])),
                              csv_cell(item.get(keys.PARSE_MODE) or ""), _WORDS[item.get(keys.TRUNCATED) is True]]
                             for item in data[keys.PREDICTIONS])
        viewer.flush()
        viewer.detach()
