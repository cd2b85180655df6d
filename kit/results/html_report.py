"""`kit report`'s static HTML report: an index (the kind's overview and plots, the reruns, the files
not counted), a page per language and a page per counted result with its metrics, full provenance,
MLLOG compliance verdict (kit check's pair rules), reruns and the `kit reproduce` command to paste.
The kind's sections come from ResultKind.html_parts; everything here is common to the kinds.
Every file is written atomically; the pages are the same bytes for the same inputs."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kit.errors import MissingExtraError
from kit.results import keys
from kit.results.check import compliance_findings, found_lines
from kit.results.html_page import (INDEX, PAGES, Cell, HtmlParts, PageLinks, code, esc, flatten, image, key_values,
                                   link, maybe_link, page, page_pieces, slug, table, table_pieces)
from kit.results.parallel import fork_map
from kit.results.plot_process import draw
from kit.files import regular_file_here, write_bytes_atomic, write_bytes_new
from kit.results.drift import DRIFT_CSV, DriftRow, drift_csv, drift_rows, setup_label, setup_pairs
from kit.results.html_plots import agreement_png, drift_png
from kit.results.kinds.base import ResultKind
from kit.results.records import CheckpointRecord
from kit.results.verdicts import Verdict, of_current_results, read_verdicts

AGREEMENT_PLOT = "verdict_agreement.png"
DRIFT_PLOT = "drift.png"
# the provenance a reviewer looks for first (docs/checkpoint-format.md, `provenance`), before the full record
KEY_PROVENANCE = (
    ("image digest", "image.digest"), ("image artifact", "image.artifact"),
    ("artifact sha256", "image.artifact_sha256"), ("lock sha256", "image.lock_sha256"),
    ("model", "model.id"), ("model revision", "model.revision"),
    ("weights manifest sha256", "model.weights_manifest_sha256"),
    ("data file sha256", "data.file_sha256"), ("manifest sha256", "data.manifest_sha256"),
    ("prompt sha256", "data.prompt_sha256"), ("GPU", "hardware.gpu_name"), ("GPU count", "hardware.gpu_count"),
    ("driver", "hardware.driver"), ("CUDA", "hardware.cuda"), ("site", "job.site"), ("scheduler", "job.scheduler"),
    ("job id", "job.job_id"), ("array index", "job.array_index"), ("node", "job.node"), ("runtime", "job.runtime"),
    ("kit version", "kit_version"), ("kit commit", "kit_commit"),
)


@dataclass(frozen=True)
class HtmlReport:
    """Where the HTML report is: its index, every page and plot it wrote."""

    index: Path
    pages: list[str]     # file names in OUT/pages/ (a release's report has tens of thousands)
    images: list[Path]


def write_html_report(records: Sequence[CheckpointRecord], out_dir: Path, kind: ResultKind,
                      verdict_dirs: Sequence[Path] = (), earlier: Path | None = None) -> HtmlReport:
    """Write OUT/index.html, OUT/pages/*.html and the plots for these records (complete ones get
    pages, invalid ones are listed with their reasons), with the reproduce verdicts found in
    `verdict_dirs`. `earlier`: the same folder of the report OUT replaces, whose pages that come out
    the same are linked in rather than written again (kit.files.write_bytes_new's same_as)."""
    out_dir = Path(out_dir)
    before = None if earlier is None else Path(earlier) / PAGES

    def write_page(name: str, text: str) -> str:
        return _write(out_dir / PAGES / name, text, None if before is None else before / name)

    valid = [r for r in records if r.valid]
    links = PageLinks({r.name: slug("result", r.name) for r in valid},
                      {lang: slug("language", lang) for lang in sorted({r.language for r in valid})})
    parts = kind.html_parts(records, links)
    verdicts, unread = read_verdicts(verdict_dirs)
    # a verdict shows only beside the very file it reran (a result rewritten since, or a verdict of another
    # tree's file of the same name, is listed, not shown as this result's)
    verdicts, other = of_current_results(verdicts, {r.name: r.path for r in valid})
    unread = [*unread, *other]
    images = dict(parts.images)
    rerun_pages = {v.path: slug("rerun", f"{v.path.parent.name}/{v.path.name}") for v in verdicts}
    reruns, plot = _reruns_section(verdicts, unread, links, rerun_pages)
    if plot is not None:
        images[AGREEMENT_PLOT] = plot
    drift = drift_rows(verdicts)
    drift_section, drift_plot = _drift_section(drift, links, rerun_pages)
    if drift_plot is not None:
        images[DRIFT_PLOT] = drift_plot
    if drift:
        images[DRIFT_CSV] = drift_csv(drift).encode("utf-8")

    plots = []   # first, so that no page names a file not there yet
    for name, data in sorted(images.items()):
        write_bytes_atomic(out_dir / name, data, durable=False)
        plots.append(out_dir / name)
    for name in (AGREEMENT_PLOT, DRIFT_PLOT, DRIFT_CSV):
        if name not in images and (out_dir / name).is_file():
            (out_dir / name).unlink()   # an earlier report's reruns
    written: list[str] = []   # page names: a Path each would be held (and pickled back from the workers)
    for language, body in parts.languages.items():
        title = f"{parts.title}: {language}"
        nav = [(links.from_page().index(), "index")]
        written.append(write_page(links.languages[language], page(title, body, nav)))
    for name in sorted(parts.pages):   # each asked for when written (OnDemand builds it then)
        title, body = parts.pages[name]
        written.append(write_page(name, page(title, body, [(links.from_page().index(), "index")])))
    verdicts_of: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        verdicts_of.setdefault(verdict.key, []).append(verdict)

    def result_page(record: CheckpointRecord) -> str:
        return write_page(links.results[record.name],
                          _result_page(record, parts, links.from_page(), verdicts_of.get(record.name, []), rerun_pages))

    written += fork_map(result_page, valid)   # thousands of pages: rendered and written on every core
    for verdict in verdicts:
        written.append(write_page(rerun_pages[verdict.path], _rerun_page(verdict, links.from_page())))
    # no fsync here: OUT is a staging folder, which kit.outputs makes durable as a whole before it is swapped in
    _write(out_dir / INDEX, page_pieces(parts.title, _index_body(records, parts, links, reruns + drift_section, kind.units)))
    _remove_old_pages(out_dir / PAGES, set(written))
    return HtmlReport(out_dir / INDEX, written, plots)


def _remove_old_pages(folder: Path, keep: set[str]) -> None:
    # pages of results an earlier report counted and this one does not: a copied report must not
    # carry them (only kit's own page names are touched)
    try:
        with os.scandir(folder) as entries:
            old = [entry.path for entry in entries if entry.name.endswith(".html") and entry.name not in keep
                   and entry.name.startswith(("result-", "language-", "compare-", "rerun-"))
                   and entry.is_file(follow_symlinks=False)]
    except FileNotFoundError:   # no page written, none there before
        return
    for path in old:
        os.unlink(path)


def _write(path: Path, text: str | Iterable[str], same_as: Path | None = None) -> str:
    """Write a page or the index (its text, or its pieces: see table_pieces); its file name. A page's
    text equal to the `same_as` file's is that file, linked in."""
    # into the staging folder (kit.outputs.write_output), which is made durable and swapped in whole
    write_bytes_new(path, _utf8(text) if isinstance(text, str) else map(_utf8, text), same_as=same_as)
    return path.name


def _utf8(text: str) -> bytes:
    """A page's text as UTF-8; a path that is not UTF-8 (a folder's bytes) shows its escape, as Python writes it."""
    return text.encode("utf-8", "backslashreplace")


def _index_body(records: Sequence[CheckpointRecord], parts: HtmlParts, links: PageLinks, reruns: str,
                units: str = "languages") -> Iterator[str]:
    valid = [r for r in records if r.valid]
    invalid = [r for r in records if not r.valid]
    head = (f"<p>{len({r.run for r in valid})} runs, {len({r.language for r in valid})} {units}, "
            f"{len(valid)} results counted; {len(invalid)} files not counted (invalid or stale). "
            f"The same numbers as the CSV files and summary.md beside this page.</p>\n")
    languages = (f"<h2>Pages</h2>\n<p>{units.capitalize()}: " + ", ".join(link(links.language(lang) or "", lang)
                                                             for lang in sorted(links.languages)) + "</p>\n")
    results = table_pieces(("result", "run", keys.LANGUAGE),
                    ([maybe_link(links.result(r.name), r.name), r.run, maybe_link(links.language(r.language), r.language)]
                     for r in sorted(valid, key=lambda r: (r.run, r.language))), caption="Results")
    not_counted = "".join(f"<li>{code(r.name)} ({esc(r.state)}): {esc('; '.join(r.reasons) or 'no reason given')}</li>\n"
                          for r in invalid) or "<li>None.</li>\n"
    stale = [r for r in valid if r.notices]
    notices = ("<h2>Notices</h2>\n<ul>\n" + "".join(f"<li>{code(r.name)}: {esc(n)}</li>\n" for r in stale for n in r.notices)
               + "</ul>\n") if stale else ""
    yield head + parts.index + reruns + languages
    yield from results
    yield f"<h2>Files not counted ({len(invalid)})</h2>\n<ul>\n{not_counted}</ul>\n" + notices


def _reruns_section(verdicts: list[Verdict], unread: list[tuple[Path, str]], links: PageLinks,
                    rerun_pages: dict[Path, str]) -> tuple[str, bytes | None]:
    out = ["<h2>Reruns (kit reproduce)</h2>\n"]
    plot = None
    if not verdicts:
        out.append("<p>No reruns: no <code>kit reproduce</code> verdict (reproduce-*.json) of these results was found, "
                   "so there is no cross-hardware agreement to show.</p>\n")
    else:
        rows = [(f"{v.key}: {v.hardware('recorded')} -> {v.hardware('rerun')}", v.agreement, v.verdict) for v in verdicts]
        tolerance = verdicts[0].tolerance.get("agreement")
        try:
            plot = draw(agreement_png, rows, float(tolerance) if isinstance(tolerance, (int, float)) else None).result()
            out.append(f"<p>{image(links.file(AGREEMENT_PLOT), 'per-item agreement of each rerun')}</p>\n")
        except MissingExtraError as exc:
            out.append(f"<p class=\"note\">No plot: {esc(exc.one_line())}</p>\n")
        out.append(_verdict_table(verdicts, links, rerun_pages))
    if unread:
        out.append("<p>Verdict files not read:</p>\n<ul>\n" + "".join(
            f"<li>{code(p.name)}: {esc(why)}</li>\n" for p, why in unread) + "</ul>\n")
    return "".join(out), plot


def _verdict_table(verdicts: list[Verdict], links: PageLinks, rerun_pages: dict[Path, str]) -> str:
    return table(("result", "verdict", "agreement", "recorded on", "rerun on", "verdict file"),
                 ([maybe_link(links.result(v.key), v.key), v.verdict, f"{v.agreement:.2%}", v.hardware("recorded"),
                   v.hardware("rerun"), maybe_link(_page_of(v, links, rerun_pages), v.path.name)] for v in verdicts))


def _page_of(verdict: Verdict, links: PageLinks, rerun_pages: dict[Path, str]) -> str | None:
    name = rerun_pages.get(verdict.path)
    return None if name is None else links.page(name)


def _drift_section(rows: list[DriftRow], links: PageLinks, rerun_pages: dict[Path, str]) -> tuple[str, bytes | None]:
    """The drift table of the index (per pair of setups, then per rerun, each number linking to its
    rerun's page), and its plot; nothing when no verdict carries a paired change."""
    if not rows:
        return "", None
    pairs = setup_pairs(rows)
    out = ["<h2>Drift between setups</h2>\n",
           f"<p>{len(rows)} reruns of {len({(r.run, r.language) for r in rows})} results on {len(pairs)} pairs of "
           "setups (engine and version, dtype, GPU and driver, kit): the share of items whose verdict changed and the "
           "F1 change (rerun minus recorded) with its 95% paired bootstrap interval, as <code>kit compare</code> "
           "computes it. A pair with one setup twice is run-to-run noise. Every number links to its rerun; the same "
           f"rows are in {link(links.file(DRIFT_CSV), DRIFT_CSV)}.</p>\n"]
    out.append(table(("recorded setup", "rerun setup", "reruns", "items", "verdicts changed", "mean F1 change"),
                     ([p.recorded_setup, p.rerun_setup, len(p.rows), p.items,
                       f"{p.changed} ({p.changed / p.items:.1%})" if p.items else "0",
                       f"{p.mean_f1_change:+.4f}"] for p in pairs), caption="Pairs of setups"))
    plot = None
    index = {p: i for i, p in enumerate((p.recorded_setup, p.rerun_setup) for p in pairs)}
    try:
        plot = draw(drift_png, [(f"{r.run} [{r.language}] {r.deliberate or 'rerun ' + str(index[r.setups] + 1)}"[:70],
                               r.f1_change, r.f1_low, r.f1_high, r.changed_share, index[r.setups]) for r in rows]).result()
        out.append(f"<p>{image(links.file(DRIFT_PLOT), 'F1 change of each rerun with its interval')}</p>\n")
    except MissingExtraError as exc:
        out.append(f"<p class=\"note\">No plot: {esc(exc.one_line())}</p>\n")

    def linked(r: DriftRow, text: str) -> Cell:
        return maybe_link(_page_of(r.verdict, links, rerun_pages), text)

    out.append(table(("run", "language", "recorded setup", "rerun setup", "changed on purpose", "verdicts changed",
                      "outputs differ", "F1 recorded", "F1 rerun", "F1 change", "95% interval", "McNemar p"),
                     ([r.run, maybe_link(links.language(r.language), r.language), r.recorded_setup, r.rerun_setup,
                       r.deliberate or "nothing", linked(r, f"{r.changed}/{r.items} ({r.changed_share:.1%})"),
                       linked(r, str(r.outputs_differ)),
                       f"{r.f1_recorded:.4f}", f"{r.f1_rerun:.4f}", linked(r, f"{r.f1_change:+.4f}"),
                       linked(r, f"{r.f1_low:+.4f} to {r.f1_high:+.4f}"),
                       "" if r.p_value is None else f"{r.p_value:.3g}"] for r in rows), caption="Reruns"))
    return "".join(out), plot


def _rerun_page(verdict: Verdict, links: PageLinks) -> str:
    """A rerun's page: its verdict, the two setups, the paired change, the two environments, the items
    that differ."""
    body = [f"<p>Verdict: <strong>{esc(verdict.verdict)}</strong>; {verdict.agreement:.2%} of items have the same "
            f"verdict. Result: {maybe_link(links.result(verdict.key), verdict.key)}; verdict file "
            f"{code(verdict.path.name)}.</p>\n"]
    if verdict.deliberate:
        body.append("<p>Changed on purpose (<code>kit reproduce --as</code>): "
                    + esc(", ".join(f"{k} {v}" for k, v in sorted(verdict.deliberate.items()))) + "</p>\n")
    if verdict.setups.get("recorded") or verdict.setups.get("rerun"):
        body.append(key_values([("recorded setup", setup_label(verdict.setups.get("recorded") or {})),
                                ("rerun setup", setup_label(verdict.setups.get("rerun") or {}))], caption="Setups"))
    if verdict.paired:
        f1 = verdict.paired["f1"]
        body.append(key_values([("items", verdict.paired["items"]), ("verdicts changed", verdict.paired["changed"]),
                                ("F1 recorded", f"{f1['b']:.4f}"), ("F1 rerun", f"{f1['a']:.4f}"),
                                ("F1 change", f"{f1['diff']:+.4f}"),
                                ("95% interval", f"{f1['low']:+.4f} to {f1['high']:+.4f}"),
                                ("McNemar p", verdict.paired.get("p_value"))], caption="Paired change"))
    facts = sorted(set(verdict.recorded) | set(verdict.rerun))
    body.append(table(("fact", "recorded", "rerun"),
                      ([k, verdict.recorded.get(k), verdict.rerun.get(k)] for k in facts), caption="Environments"))
    body.append(table(("item", "recorded", "rerun", "recorded output", "rerun output"),
                      ([d.get("item_id"), d.get("recorded"), d.get("rerun"), d.get("recorded_output"),
                        d.get("rerun_output")] for d in verdict.differing),
                      caption=f"Items that differ ({len(verdict.differing)})"))
    if verdict.note:
        body.append(f"<p class=\"note\">{esc(verdict.note)}</p>\n")
    return page(f"Rerun of {verdict.key}", "".join(body), [(links.index(), "index")])


def _result_page(record: CheckpointRecord, parts: HtmlParts, links: PageLinks, verdicts: list[Verdict],
                 rerun_pages: dict[Path, str]) -> str:
    nav = [(links.index(), "index"), (links.language(record.language) or links.index(), f"language {record.language}")]
    data = record.data or {}
    provenance = data.get(keys.PROVENANCE)
    flat = dict(flatten(provenance)) if isinstance(provenance, dict) else {}
    body = [table(("run", keys.LANGUAGE, "file"), [[record.run, Cell(link(links.language(record.language) or links.index(),
                                                                          record.language)), record.name]]),
            parts.results.get(record.name, ""), _compliance(record), _signature(record)]
    body.append("<h2>Reproduce</h2>\n<p>From the folder <code>kit report</code> ran in (REPRODUCE.md, section 4); "
                "a result out of its workspace also needs <code>--benchmark DIR --weights DIR</code>:</p>\n"
                f"<pre>{esc(shlex.join(['kit', 'reproduce', str(record.path)]))}</pre>\n")
    if verdicts:
        body.append("<h2>Reruns</h2>\n" + _verdict_table(verdicts, links, rerun_pages))
    if not flat:
        body.append("<h2>Provenance</h2>\n<p>None recorded (an lrb file from before kit).</p>\n")
    else:
        unknown = provenance.get("unknown") if isinstance(provenance.get("unknown"), dict) else {}
        body.append("<h2>Provenance</h2>\n" + key_values(
            ((label, flat.get(k) if flat.get(k) is not None or k not in unknown else f"null: {unknown[k]}")
             for label, k in KEY_PROVENANCE), caption="the key facts (null: why kit could not know)"))
        body.append(key_values(flatten(provenance, "provenance"), caption="the full record"))
    body.append(key_values(flatten(record.metadata, "metadata"), caption="metadata"))
    if record.notices:
        body.append("<h2>Notices</h2>\n<ul>\n" + "".join(f"<li>{esc(n)}</li>\n" for n in record.notices) + "</ul>\n")
    return page(f"{record.run} [{record.language}]", "".join(body), nav)


def _signature(record: CheckpointRecord) -> str:
    """Whether the result carries a signed statement (kit sign), as its envelope says; the report has no
    trusted keys, so it says how to check it."""
    from kit.results.attest import signed_notice
    from kit.results.store import envelope_path

    head = "<h2>Signature</h2>\n"
    where = envelope_path(record.path)
    if not regular_file_here(where):
        return head + "<p>Unsigned: no signed statement beside the checkpoint (<code>kit sign</code> makes one).</p>\n"
    said = signed_notice(record.path) or "an envelope whose statement could not be read"
    check = shlex.join(["kit", "verify", str(record.path), "--trusted-keys", "KEYS.json"])
    return head + (f"<p>{esc(said)}, in <code>{esc(where.name)}</code>; not checked here: check it against the "
                   f"signer's public key with</p>\n<pre>{esc(check)}</pre>\n<p class=\"note\">A signature proves who "
                   "published a result and that it has not changed since, not that the computation was honest.</p>\n")


def _compliance(record: CheckpointRecord) -> str:
    """The page's compliance section: the findings the validation found beside the file, else checked now."""
    head = "<h2>MLLOG compliance (kit check)</h2>\n"
    findings = record.compliance
    if findings is None:
        try:
            findings = compliance_findings(record.path, dict(record.data or {}))
        except MissingExtraError as exc:
            return head + f"<p class=\"note\">Not checked: {esc(exc.one_line())}</p>\n"
    lines = found_lines(record.path, findings)
    if not lines:
        return head + ("<p><span class=\"pass\">PASS</span>: the :::MLLOG log passes mlperf-logging's compliance "
                       "checker with the kind's ruleset and records this file's sha256.</p>\n")
    return head + "<p><span class=\"fail\">FAIL</span></p>\n<ul>\n" + "".join(
        f"<li>{esc(line)}</li>\n" for line in lines) + "</ul>\n"
