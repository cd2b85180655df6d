"""Benchmark loading against the real lrb data (en, fr, ja present) and kit's demo dataset."""

from __future__ import annotations

import hashlib
import json
import shutil
import re
from pathlib import Path

import pytest

from kit.config.kinds.lrb.benchmark import DEFAULT_GENERATE_PROMPT, item_id
from kit.config.kinds.lrb.prompts import format_prompt
from kit.config.dataset import whole_set_sha256
from kit.config.kinds import load_benchmark
from kit.demo.dataset import write_demo_benchmark
from kit.errors import ConfigError

LRB = Path(__file__).resolve().parents[3] / "shared/third_party/lrb/data"
# From ../shared/third_party/lrb/NOTICE.md.
LRB_MANIFEST_SHA256 = "f31cca03aba95b31b3619dfd6249744bfe29fa062be0039b233256019164e7b0"
LRB_FR_SHA256 = "6de660af250b4d59ec0bdfa5cb081f27b5c7254808d2e40fa9f6cd7a523f1fab"
LRB_RERANKER_SHA256 = "68480b32ff0c9956431ac2dbe1f87359a440e71a745e1f40966f1f3747598026"

needs_lrb = pytest.mark.skipif(
    not LRB.is_dir(), reason=f"lrb test data not found at {LRB} (shared/ sits beside the repo; CI has it)"
)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): sha256(p) for p in sorted(root.rglob("*")) if p.is_file()}


def rewrite_manifest(manifest_path: Path, **changes: object) -> None:
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    data.update(changes)
    manifest_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def record_file_digest(manifest_path: Path, language: str) -> None:
    """Make the manifest agree with the (edited) file, so a later check is what fails."""
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    data["files"][language]["sha256"] = sha256(manifest_path.parent / data["files"][language]["path"])
    data["whole_set_sha256"] = whole_set_sha256({lang: f["sha256"] for lang, f in data["files"].items()})
    manifest_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@pytest.fixture
def lrb_copy(tmp_path: Path) -> Path:
    if not LRB.is_dir():
        pytest.skip(f"lrb test data not found at {LRB}")
    dest = tmp_path / "lrb"
    shutil.copytree(LRB, dest)
    return dest


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return write_demo_benchmark(tmp_path / "demo")


# --- the real lrb data --------------------------------------------------------------


@needs_lrb
def test_lrb_present_languages_load_and_check():
    bench = load_benchmark(LRB)
    assert bench.manifest_sha256 == LRB_MANIFEST_SHA256
    assert bench.available_languages() == ["en", "fr", "ja"]
    assert bench.resolve_languages(["ja", "fr", "en"]) == ["en", "fr", "ja"]
    for lang in ("en", "fr", "ja"):
        data = bench.load_language(lang)
        assert len(data.items) == 300
        assert data.file_sha256 == bench.manifest.files[lang].sha256
        assert [i.item_id for i in data.items] == bench.item_ids(lang)
        assert [i.source_item_id for i in data.items] == list(bench.manifest.source_item_ids)
        assert {i.label for i in data.items} == {"yes", "no"}
    assert bench.load_language("fr").file_sha256 == LRB_FR_SHA256
    status, detail = bench.whole_set_status()
    assert status == "not checked"
    assert "3 of 85" in detail


@needs_lrb
def test_item_id_rule_by_hand():
    # printf '332917270763f114\0fr' | sha256sum
    assert item_id("332917270763f114", "fr") == "f0723335c2c5359e"
    bench = load_benchmark(LRB)
    first = bench.load_language("fr").items[0]
    assert (first.source_item_id, first.item_id) == ("332917270763f114", "f0723335c2c5359e")
    assert bench.item_ids("en")[0] != bench.item_ids("fr")[0]


@needs_lrb
def test_whole_set_rule_reproduces_lrb_manifest():
    manifest = json.loads((LRB / "translations/manifest.json").read_text(encoding="utf-8"))
    digests = {lang: entry["sha256"] for lang, entry in manifest["files"].items()}
    assert whole_set_sha256(digests) == manifest["whole_set_sha256"]


@needs_lrb
def test_lrb_sentences_kept_exactly():
    import csv

    with open(LRB / "translations/ja/v3-final-ja.csv", encoding="utf-8", newline="") as fh:
        raw = [row["sentence"] for row in csv.DictReader(fh)]
    assert [i.sentence for i in load_benchmark(LRB).load_language("ja").items] == raw


@needs_lrb
def test_lrb_prompts_auto_detected():
    bench = load_benchmark(LRB)
    # the shared copy has no prompt.txt (lrb's generative prompt): no built-in prompt stands in
    with pytest.raises(ConfigError, match=r"no prompt for task 'generate'; fix: add prompt\.txt"):
        bench.prompt("generate")
    assert bench.prompt("score").sha256 == LRB_RERANKER_SHA256
    assert sorted(bench.prompts) == ["masked_lm", "score", "zeroshot"]
    assert bench.prompts["zeroshot"].path.name == "prompt_zeroshot.txt"


@needs_lrb
def test_all_languages_refused_when_files_missing():
    with pytest.raises(ConfigError) as exc:
        load_benchmark(LRB).resolve_languages(None)
    msg = str(exc.value)
    assert "82 of 85" in msg
    assert "--languages" in msg and "en,fr,ja" in msg


@needs_lrb
def test_language_not_in_manifest():
    bench = load_benchmark(LRB)
    with pytest.raises(ConfigError, match="'xx' is not in the manifest"):
        bench.resolve_languages(["en", "xx"])
    with pytest.raises(ConfigError, match="'xx' is not in the manifest"):
        bench.item_ids("xx")


@needs_lrb
def test_selected_language_without_file():
    with pytest.raises(ConfigError, match=r"v3-final-de\.csv.*--languages with those present: en,fr,ja"):
        load_benchmark(LRB).resolve_languages(["en", "de"])


def test_changed_byte_refused_naming_both_digests(lrb_copy: Path):
    path = lrb_copy / "translations/fr/v3-final-fr.csv"
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ConfigError) as exc:
        load_benchmark(lrb_copy).load_language("fr")
    msg = str(exc.value)
    assert str(path) in msg
    assert sha256(path) in msg and LRB_FR_SHA256 in msg
    load_benchmark(lrb_copy).load_language("en")  # the other files still load


def test_swapped_rows_refused_as_id_order(lrb_copy: Path):
    path = lrb_copy / "translations/fr/v3-final-fr.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3], lines[4] = lines[4], lines[3]  # data rows 3 and 4
    path.write_text("".join(lines), encoding="utf-8")
    record_file_digest(lrb_copy / "translations/manifest.json", "fr")
    with pytest.raises(ConfigError, match=r"row 3 .*source_item_ids\[2\].*order"):
        load_benchmark(lrb_copy).load_language("fr")


def test_removed_row_refused_as_row_count(lrb_copy: Path):
    path = lrb_copy / "translations/fr/v3-final-fr.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    del lines[10]
    path.write_text("".join(lines), encoding="utf-8")
    record_file_digest(lrb_copy / "translations/manifest.json", "fr")
    with pytest.raises(ConfigError, match=r"299 rows but the manifest's files\.fr\.rows is 300"):
        load_benchmark(lrb_copy).load_language("fr")


def test_prompt_with_two_placeholders_refused(lrb_copy: Path):
    (lrb_copy / "prompt_generate.txt").write_text("Sentence: {}\nAgain: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"prompt_generate\.txt: prompt for task 'generate' has 2"):
        load_benchmark(lrb_copy)


@pytest.mark.parametrize(("body", "said"), [
    ("Sentence: {{}}\n", "holds '{{}}'"),                       # str.format's literal braces, not a placeholder
    ("\ufeffSentence: {}\n", "begins with a byte order mark"),   # it would begin every prompt
])
def test_a_prompt_that_would_not_read_as_written_is_refused(lrb_copy: Path, body: str, said: str):
    (lrb_copy / "prompt_generate.txt").write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"prompt_generate\.txt: .*{re.escape(said)}"):
        load_benchmark(lrb_copy)


def test_prompt_without_placeholder_refused(lrb_copy: Path):
    (lrb_copy / "prompt_reranker.txt").write_text("No slot here.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"prompt_reranker\.txt: prompt for task 'score' has 0"):
        load_benchmark(lrb_copy)


@pytest.mark.parametrize("name", ["prompt.txt", "prompt_generate.txt"])
def test_generate_prompt_found_by_lrb_or_kit_name(lrb_copy: Path, name: str):
    (lrb_copy / name).write_text("Is it land use? {}\n", encoding="utf-8")
    bench = load_benchmark(lrb_copy)
    assert format_prompt(bench.prompt("generate"), "A farm.") == "Is it land use? A farm.\n"
    assert bench.prompt("generate").path.name == name


def test_lrb_prompt_txt_wins_over_kit_name(lrb_copy: Path):
    (lrb_copy / "prompt.txt").write_text("lrb {}\n", encoding="utf-8")
    (lrb_copy / "prompt_generate.txt").write_text("kit {}\n", encoding="utf-8")
    assert load_benchmark(lrb_copy).prompt("generate").text == "lrb {}\n"


def test_foreign_whole_set_mismatch_is_refused(lrb_copy: Path):
    rewrite_manifest(lrb_copy / "translations/manifest.json", whole_set_sha256="0" * 64)
    with pytest.raises(ConfigError, match=r"manifest\.json: whole_set_sha256 is 0{64} but the files' digests give"):
        load_benchmark(lrb_copy)


# --- folders, benchmark.toml, manifest checks ---------------------------------------


def test_missing_folder(tmp_path: Path):
    with pytest.raises(ConfigError, match="benchmark folder not found"):
        load_benchmark(tmp_path / "nowhere")


def test_folder_without_manifest(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"translations/manifest\.json.*fix: pass the benchmark folder"):
        load_benchmark(tmp_path)


def test_benchmark_toml_unknown_key_refused(demo: Path):
    toml = demo / "benchmark.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + 'metric = "f1"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"benchmark\.toml.*metric.*remove it"):
        load_benchmark(demo)


def test_benchmark_toml_without_score_prompt(demo: Path):
    toml = demo / "benchmark.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('score = "prompt_reranker.txt"\n', ""), encoding="utf-8")
    bench = load_benchmark(demo)
    with pytest.raises(ConfigError, match=r"no prompt for task 'score'.*\[prompts\] score"):
        bench.prompt("score")


def test_benchmark_toml_manifest_not_found(demo: Path):
    toml = demo / "benchmark.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("translations/manifest.json", "nope.json"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"benchmark\.toml: manifest: .*nope\.json not found"):
        load_benchmark(demo)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(row_count=19), "row_count is 19 but source_item_ids has 20"),
        (lambda m: m["source_item_ids"].__setitem__(5, m["source_item_ids"][0]), r"source_item_ids\[5\].*repeats source_item_ids\[0\]"),
        (lambda m: m["files"].pop("fr"), "files has no entry for language 'fr'"),
        (lambda m: m["files"]["de"].update(path="../de.csv"), r"files\.de\.path: must be a relative path"),
        (lambda m: m["files"]["de"].update(rows=19), r"files\.de\.rows is 19 but row_count is 20"),
        (lambda m: m.pop("split"), "split: Field required"),
    ],
)
def test_manifest_checks(demo: Path, change, message):
    path = demo / "translations/manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"manifest\.json: .*{message}"):
        load_benchmark(demo)


def test_manifest_extra_keys_kept(demo: Path):
    rewrite_manifest(demo / "translations/manifest.json", license="CC-BY-4.0")
    assert load_benchmark(demo).manifest.model_extra == {"license": "CC-BY-4.0"}


def test_label_other_than_yes_no_refused(demo: Path):
    path = demo / "translations/de/v3-final-de.csv"
    path.write_text(path.read_text(encoding="utf-8").replace(",yes,Kiefernau,", ",Yes,Kiefernau,"), encoding="utf-8")
    record_file_digest(demo / "translations/manifest.json", "de")
    with pytest.raises(ConfigError, match=r"row 3 \(line 4\) has label 'Yes'; fix: write yes or no"):
        load_benchmark(demo).load_language("de")


def test_language_column_checked(demo: Path):
    manifest = demo / "translations/manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["files"]["de"] = dict(data["files"]["en"])  # de points at the English file
    data["whole_set_sha256"] = whole_set_sha256({lang: f["sha256"] for lang, f in data["files"].items()})
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"row 1 \(line 2\) has language 'en', expected 'de'"):
        load_benchmark(demo).load_language("de")


# --- the demo dataset ---------------------------------------------------------------


def test_demo_loads_and_is_fully_checked(demo: Path):
    bench = load_benchmark(demo)
    assert bench.name == "kit-demo"
    assert bench.manifest.dataset == "kit/demo-landuse"
    assert bench.resolve_languages(None) == ["de", "en", "fr"]
    assert bench.whole_set_status()[0] == "checked"
    for lang in ("de", "en", "fr"):
        items = bench.load_language(lang).items
        assert len(items) == 20
        assert 8 <= sum(i.label == "yes" for i in items) <= 12
    en = bench.load_language("en").items
    assert en[0].source_item_id == hashlib.sha256(en[0].sentence.encode()).hexdigest()[:16]
    assert any('"the Basin"' in i.sentence for i in en)  # CSV quoting round-trips
    assert [i.label for i in en] == [i.label for i in bench.load_language("fr").items]
    manifest = bench.manifest
    assert len(manifest.revision) == 40
    assert manifest.revision == hashlib.sha1(
        b"".join((demo / "translations" / lang / f"v3-final-{lang}.csv").read_bytes() for lang in ("de", "en", "fr"))
    ).hexdigest()
    assert (demo / "prompt_generate.txt").read_bytes() == DEFAULT_GENERATE_PROMPT.read_bytes()


def test_demo_is_byte_identical_and_left_untouched(tmp_path: Path):
    first = write_demo_benchmark(tmp_path / "a")
    before = tree_digests(first)
    mtimes = {p: p.stat().st_mtime_ns for p in first.rglob("*")}
    write_demo_benchmark(first)
    assert tree_digests(first) == before
    assert {p: p.stat().st_mtime_ns for p in first.rglob("*")} == mtimes
    assert tree_digests(write_demo_benchmark(tmp_path / "b")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no temporary folder left


def test_demo_damaged_copy_is_rewritten(demo: Path, tmp_path: Path):
    good = tree_digests(demo)
    (demo / "translations/fr/v3-final-fr.csv").write_text("broken\n", encoding="utf-8")
    write_demo_benchmark(demo)
    assert tree_digests(demo) == good


def test_demo_refuses_foreign_folder(tmp_path: Path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not kit's demo benchmark"):
        write_demo_benchmark(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text(encoding="utf-8") == "keep me\n"


def test_demo_whole_set_mismatch_refused_at_load(demo: Path):
    rewrite_manifest(demo / "translations/manifest.json", whole_set_sha256="f" * 64)
    with pytest.raises(ConfigError, match="whole_set_sha256 is f+ but the files' digests give"):
        load_benchmark(demo)


def test_demo_changed_file_makes_whole_set_mismatch(demo: Path):
    path = demo / "translations/fr/v3-final-fr.csv"
    path.write_bytes(path.read_bytes().replace(b"1998", b"1999"))
    status, detail = load_benchmark(demo).whole_set_status()
    assert status == "mismatch" and "v3-final-fr.csv" in detail


def test_format_prompt_keeps_other_braces(demo: Path):
    (demo / "prompt_generate.txt").write_text('Reply as JSON {"answer": "yes|no"}.\nText: {}\n', encoding="utf-8")
    bench = load_benchmark(demo)
    out = format_prompt(bench.prompt("generate"), "A sentence with {braces} and {}.")
    assert out == 'Reply as JSON {"answer": "yes|no"}.\nText: A sentence with {braces} and {}.\n'


# --- data as users' tools write it --------------------------------------------------


def _edit_rows(demo: Path, language: str, edit) -> Path:
    """Rewrite a language file's rows through `edit(rows)` (a csv module round trip) and record its digest."""
    import csv
    import io

    path = demo / f"translations/{language}/v3-final-{language}.csv"
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    edit(rows)
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8", newline="")
    record_file_digest(demo / "translations/manifest.json", language)
    return path


def test_a_byte_order_mark_from_a_spreadsheet_is_no_part_of_the_header(demo: Path):
    path = demo / "translations/de/v3-final-de.csv"
    before = load_benchmark(demo).load_language("de").items
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    record_file_digest(demo / "translations/manifest.json", "de")
    assert load_benchmark(demo).load_language("de").items == before


@pytest.mark.parametrize("column", ["label", "sentence", "source_item_id"])
def test_a_repeated_column_is_refused_not_read_from_its_last_copy(demo: Path, column: str):
    def repeat(rows):
        at = rows[0].index(column)
        for row in rows:
            row.append(row[at] if row is not rows[0] else column)

    _edit_rows(demo, "de", repeat)
    with pytest.raises(ConfigError, match=rf"header names '{column}' twice \(columns \d+ and \d+\); fix: rename"):
        load_benchmark(demo).load_language("de")


def test_a_header_name_with_spaces_around_it_is_said(demo: Path):
    _edit_rows(demo, "de", lambda rows: rows[0].__setitem__(rows[0].index("label"), " label"))
    with pytest.raises(ConfigError, match=r"lacks column label \(it names ' label', with spaces around\)"):
        load_benchmark(demo).load_language("de")


@pytest.mark.parametrize("sentence,said", [("   ", "an empty sentence"), ("\u00a0\u200b", "an empty sentence"),
                                           ("a\0b", "a NUL character")])
def test_a_sentence_a_model_cannot_be_asked_about_is_refused_with_its_row(demo: Path, sentence: str, said: str):
    def blank(rows):
        rows[2][rows[0].index("sentence")] = sentence

    _edit_rows(demo, "de", blank)
    with pytest.raises(ConfigError, match=rf"row 2 \(line 3\) has {said}"):
        load_benchmark(demo).load_language("de")


def test_a_benchmark_file_outside_its_folder_is_refused_for_a_job_and_read_here(demo: Path, tmp_path: Path):
    """A job is given the benchmark folder alone: a language file or prompt that is a link out of it would be
    missing where the pairs run, so kit run refuses it (job_inputs_outside); on this machine, where it
    reads, status and report read it as it is."""
    from kit.config.dataset import job_inputs_outside
    from kit.config.roster import Run

    outside = tmp_path / "shared-de.csv"
    language = demo / "translations/de/v3-final-de.csv"
    outside.write_bytes(language.read_bytes())
    language.unlink()
    language.symlink_to(outside)
    bench = load_benchmark(demo)
    assert bench.load_language("de").items   # read here
    run = Run(model="org/m", revision="0" * 40, backend="transformers-5.17")
    with pytest.raises(ConfigError, match="file of language 'de' lies outside the benchmark folder"):
        job_inputs_outside(bench, ["en", "de"], [run])
    job_inputs_outside(bench, ["en"], [run])
    prompt = demo / "prompt_generate.txt"   # the one the demo's benchmark.toml names
    (tmp_path / "prompt.txt").write_bytes(prompt.read_bytes())
    prompt.unlink()
    prompt.symlink_to(tmp_path / "prompt.txt")
    with pytest.raises(ConfigError, match="prompt file of run 'org/m' lies outside the benchmark folder"):
        job_inputs_outside(load_benchmark(demo), ["en"], [run])


def test_language_codes_are_matched_as_people_write_them(demo: Path):
    """pt-BR, pt_br, PT-br name one language: --languages and a roster's list pick the benchmark's
    spelling; a manifest listing one code twice in two spellings is refused."""
    from kit.plan import as_benchmark_languages

    bench = load_benchmark(demo)
    assert as_benchmark_languages(bench, ["DE", "en", "xx"]) == ["de", "en", "xx"]
    manifest = demo / "translations/manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    rewrite_manifest(manifest, languages=[*data["languages"], "pt-BR", "pt_br"])
    with pytest.raises(ConfigError, match="'pt-BR' and 'pt_br', one code spelled two ways"):
        load_benchmark(demo)


# --- answers read in bulk give load_language's answers and refusals -------------------


def _swap_rows(rows):
    rows[3], rows[4] = rows[4], rows[3]


def _extra_field(rows):
    rows[5].append("x")


def _relabel(rows):
    rows[3][rows[0].index("label")] = "Yes"


def _other_language(rows):
    rows[2][rows[0].index("language")] = "en"


def _blank_sentence(rows):
    rows[2][rows[0].index("sentence")] = "\u00a0\u200b"


def _nul_in_source(rows):
    rows[2][rows[0].index("source")] = "a\0b"


def _repeat_label(rows):
    at = rows[0].index("label")
    for row in rows:
        row.append(row[at] if row is not rows[0] else "label")


def _blank_lines(rows):
    rows.insert(3, [])
    rows.append([])


def _reorder_columns(rows):
    for row in rows:
        row.reverse()


@pytest.mark.parametrize("edit", [_swap_rows, _extra_field, _relabel, _other_language, _blank_sentence, _nul_in_source,
                                  _repeat_label, lambda rows: rows.pop(7), lambda rows: rows[0].__setitem__(0, " sentence"),
                                  lambda rows: None, _blank_lines, _reorder_columns])
def test_answers_read_in_bulk_are_load_languages_and_so_are_their_refusals(demo: Path, edit):
    """A status of a sweep reads each language's answers on whole columns at once (Benchmark.expected_answers):
    it gives the answers, in the order, that load_language's items give, and for a file load_language
    refuses, its very refusal."""
    _edit_rows(demo, "de", edit)
    try:
        items = load_benchmark(demo).load_language("de").items
    except ConfigError as exc:
        with pytest.raises(ConfigError) as bulk:
            load_benchmark(demo).expected_answers("de")
        assert str(bulk.value) == str(exc)
        return
    answers = load_benchmark(demo).expected_answers("de")
    assert list(answers.items()) == [(item.item_id, item.label) for item in items]
    in_bulk = load_benchmark(demo)._answers_in_bulk("de")   # (a NUL in any column sends it the full way)
    assert in_bulk == answers if edit is not _nul_in_source else in_bulk is None


@pytest.mark.parametrize("damage", ["byte", "folder", "missing", "not utf-8", "quote"])
def test_a_damaged_language_file_is_refused_by_expected_answers_as_by_load_language(demo: Path, damage: str):
    path = demo / "translations/de/v3-final-de.csv"
    if damage == "byte":
        data = bytearray(path.read_bytes())
        data[-5] ^= 0x01
        path.write_bytes(bytes(data))
    elif damage == "folder":
        path.unlink()
        path.mkdir()
    elif damage == "missing":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes().replace(b"yes", b"y\xffs" if damage == "not utf-8" else b'"yes', 1))
        record_file_digest(demo / "translations/manifest.json", "de")
    with pytest.raises(ConfigError) as full:
        load_benchmark(demo).load_language("de")
    with pytest.raises(ConfigError) as bulk:
        load_benchmark(demo).expected_answers("de")
    assert str(bulk.value) == str(full.value)
