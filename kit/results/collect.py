"""`kit collect`: merge the results trees of several sites into one release tree.

Refuses (listing every problem) invalid files, duplicate pairs (keyed by run name, so
@variant runs never collide) whose files differ, pairs outside the plan, missing pairs, and runs
whose files mix kit commits or image digests. Byte-identical copies of one checkpoint at several
sites (a tree synced to two clusters) are one file: the first site's is taken, with its log and signed
statement (kit.results.store.travelling_files, as a release takes them). The merged tree is
written under the output contract (kit.outputs): staged beside the output and renamed into place,
so an interrupted collect leaves the output absent or complete, and --force replaces only an earlier
collect output."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import CheckpointError
from kit.files import copy_new, file_sha256
from kit.outputs import write_output
from kit.plan import Pair
from kit.results import keys
from kit.results.keys import PairState
from kit.results.checkpoint import read_checkpoint, validate_checkpoint
from kit.results.evidence import evidence_reasons
from kit.results.identity import Expected
from kit.results.records import file_run
from kit.results.store import (SYSTEMS_DIR, checkpoint_path, collection_of, file_language, iter_checkpoint_files,
                               linked_part, travelling_files, unread_files, why_unread)


@dataclass
class CollectPlan:
    """Which site's file each pair comes from, and every problem found."""

    chosen: dict[Pair, tuple[str, Path]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)


def _pair_of(root: Path, path: Path, data: dict | None) -> Pair:
    meta = (data or {}).get(keys.METADATA)
    if not isinstance(meta, dict):   # validation names the fault; the pair comes from the path meanwhile
        meta = {}
    return Pair(file_run(path, meta), file_language(root, path, meta))


def plan_collect(sources: list[tuple[str, Path]], expected: list[Pair],
                 expect: Callable[[Pair], Expected], left_out: Collection[Pair] = ()) -> CollectPlan:
    """Examine every site tree against the plan (`expect`: what a planned pair's checkpoint must hold
    now, kit.results.identity.PlanExpectations; `left_out`: planned pairs a selection leaves out, whose
    files are not taken, kit.plan.left_out_by_selection); nothing is written."""
    plan = CollectPlan()
    wanted, skipped = set(expected), set(left_out)
    seen: dict[Pair, tuple[str, Path]] = {}
    described: dict[str, tuple[str, Path]] = {}   # a system description's name -> the first site holding it
    facts: dict[str, dict[str, set[str]]] = defaultdict(lambda: {"kit_commit": set(), "image_digest": set()})
    for site, root in sources:
        if not Path(root).is_dir():
            plan.problems.append(f"{site}: {root} is not a folder")
            continue
        plan.sources.append(Path(root).resolve())
        systems = sorted((root / SYSTEMS_DIR).glob("*.json"))
        links = [p for p in systems if p.is_symlink()]
        links += dict.fromkeys(link for c in iter_checkpoint_files(root) if (link := linked_part(root, c)) is not None)
        for link in links:   # a release holds the sites' own files, never what a link points at
            plan.problems.append(f"symlink: {site}: {link} is a link, not a file the site wrote")
        for odd in (p for p in systems if not p.is_symlink() and not p.is_file()):
            plan.problems.append(f"not a file: {site}: {odd} is not a regular file (a folder, pipe or device)")
        for desc in (p for p in systems if p.is_file() and not p.is_symlink()):   # one merged systems/ folder
            first = described.setdefault(desc.name, (site, desc))
            if first[1] != desc and file_sha256(first[1]) != file_sha256(desc):
                plan.problems.append(f"duplicate: {SYSTEMS_DIR}/{desc.name} of {first[0]} ({first[1]}) and of {site} "
                                     f"({desc}) differ: one would replace the other")
        unread = unread_files(root)
        if unread:   # a release must not lose a site's results without a word
            plan.problems.append(f"not read: {site}: {len(unread)} .json file(s) where no checkpoint lies "
                                 f"({unread[0]} {why_unread(root, unread[0])}{'; and more' if len(unread) > 1 else ''}): "
                                 "collect the folder that holds their language folders as a site of its own, or "
                                 "move them out")
        for path in iter_checkpoint_files(root):
            if linked_part(root, path, log=False) is not None:   # (listed above; a linked log: invalid below)
                continue
            pair = _pair_of(root, path, read_checkpoint(path).data)
            if pair in skipped:
                continue
            batch = collection_of(root, path, pair.language)
            if batch:   # a collection of its own (kit report's batches/): never a second copy of a planned pair
                plan.problems.append(f"in a batch folder: {site}: {path}: lrb's batch {batch!r} is a collection of its "
                                     f"own, never the tree's own copy of a pair; move {Path(root) / batch} out of the "
                                     "site's tree (and collect it apart, as a site of its own)")
                continue
            st = validate_checkpoint(path, language=pair.language, expect=expect(pair) if pair in wanted else None)
            if st.state != PairState.COMPLETE:
                plan.problems.append(f"{st.state}: {site}: {path}: {'; '.join(st.reasons)}")
                continue
            edited = "; ".join(evidence_reasons(path, st.data, sealed=True))
            if edited:
                plan.problems.append(f"edited: {site}: {path}: {edited}")
                continue
            if pair not in wanted:
                plan.problems.append(f"outside the plan: {pair} from {site} ({path})")
                continue
            if pair in seen:
                if file_sha256(path) != file_sha256(seen[pair][1]):
                    plan.problems.append(f"duplicate: {pair} in {seen[pair][0]} ({seen[pair][1]}) and {site} ({path}) "
                                         "differ")
                continue
            seen[pair] = (site, path)
            prov = st.data.get(keys.PROVENANCE, {})
            facts[pair.run]["kit_commit"].add(str(prov.get(keys.PROV_KIT_COMMIT)))
            facts[pair.run]["image_digest"].add(str(prov.get(keys.PROV_IMAGE, {}).get(keys.IMAGE_DIGEST)))
    for pair in sorted(wanted - set(seen)):
        plan.problems.append(f"missing: {pair}")
    for run, f in sorted(facts.items()):
        for what, values in f.items():
            if len(values) > 1:
                plan.problems.append(f"mixed {what.replace('_', ' ')}s for run {run}: {', '.join(sorted(values))}")
    plan.chosen = dict(sorted(seen.items()))
    return plan


def install_collect(plan: CollectPlan, output: Path, *, force: bool = False) -> Path:
    """Write the chosen files (each checkpoint with its :::MLLOG log and signed statement, as
    kit.results.store.travelling_files names them; the sites' system descriptions) as the
    collect output `output`, under the output contract (kit.outputs.write_output): built beside and
    renamed into place, replacing with `force` only an earlier collect output."""
    if plan.problems:
        raise CheckpointError(f"collect refused: {len(plan.problems)} problems", fix="fix them (see the list above)")
    output = Path(output)
    with write_output(output, "collect", force=force, inputs=plan.sources) as out:
        roots: set[Path] = set()
        # the files of the collect output replaced that come out the same are linked in (OutputFolder.earlier)
        for pair, (_, src) in plan.chosen.items():
            for source, dst in travelling_files(src, checkpoint_path(out.stage, pair.run, pair.language)):
                copy_new(source, dst, same_as=out.same_as(dst))
            roots.add(src.parent.parent)
        for root in sorted(roots):
            for desc in sorted((root / SYSTEMS_DIR).glob("*.json")):
                if desc.is_file() and not desc.is_symlink():   # the plan refused anything else
                    dst = out.file(SYSTEMS_DIR, desc.name)
                    copy_new(desc, dst, same_as=out.same_as(dst))
    return output.resolve()
