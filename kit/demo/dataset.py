"""The demo benchmark: 20 sentences in de, en and fr, in the lrb layout, written byte-identically.

The sentences and translations are kit's own. Source item ids are the first 16 hex
of the sha256 of the English sentence; h3 cells are the resolution-3 cells of the
coordinates; place names are invented.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import secrets
import shutil
from pathlib import Path

from kit.config.kinds.lrb.benchmark import CSV_COLUMNS, DEFAULT_GENERATE_PROMPT
from kit.config.dataset import whole_set_sha256
from kit.errors import ConfigError
from kit.files import replace_folder, write_bytes_atomic

DATASET = "kit/demo-landuse"
LANGUAGES = ("de", "en", "fr")
SOURCE = "kit-demo"

# label, polygon_name, h3_cell, latitude, longitude, region, en, fr, de
_ROWS = (
    ("yes", "Montclar", "833968fffffffff", 43.6512, 5.2673, "france",
     "The village is surrounded by vineyards and olive groves.",
     "Le village est entouré de vignes et d'oliveraies.",
     "Das Dorf ist von Weinbergen und Olivenhainen umgeben."),
    ("no", "Valdoria", "831e84fffffffff", 42.4167, 12.1050, "italy",
     "The mayor was elected in 1998.",
     "Le maire a été élu en 1998.",
     "Der Bürgermeister wurde 1998 gewählt."),
    ("yes", "Kiefernau", "831f18fffffffff", 52.3906, 13.0645, "germany",
     "A dense pine forest covers the hills north of the town.",
     "Une forêt de pins dense couvre les collines au nord de la ville.",
     "Ein dichter Kiefernwald bedeckt die Hügel nördlich der Stadt."),
    ("no", "Porto Lindo", "833933fffffffff", 38.7223, -9.1393, "portugal",
     "The town hosts a jazz festival every July.",
     "La ville accueille un festival de jazz chaque année en juillet.",
     "Die Stadt veranstaltet jeden Juli ein Jazzfestival."),
    ("yes", "Sulina Marsh", "831e5afffffffff", 45.1561, 29.6536, "romania",
     "The river delta is a wide marsh of reeds and shallow lagoons.",
     "Le delta du fleuve est un vaste marais de roseaux et de lagunes peu profondes.",
     "Das Flussdelta ist ein weites Sumpfgebiet aus Schilf und flachen Lagunen."),
    ("no", "Rothwick", "831942fffffffff", 53.4808, -2.2426, "england",
     "Its football club was founded by railway workers.",
     "Son club de football a été fondé par des cheminots.",
     "Ihr Fußballverein wurde von Eisenbahnarbeitern gegründet."),
    ("yes", "Plaine de Vrigny", "831fb6fffffffff", 48.3000, 1.6000, "france",
     "Wheat fields stretch across the plain as far as the motorway.",
     "Des champs de blé s'étendent sur la plaine jusqu'à l'autoroute.",
     "Weizenfelder erstrecken sich über die Ebene bis zur Autobahn."),
    ("no", "Ashby Parva", "83195cfffffffff", 52.4500, -1.2000, "england",
     "The parish belonged to the county until the reform of 1974.",
     "La paroisse a appartenu au comté jusqu'à la réforme de 1974.",
     "Die Gemeinde gehörte bis zur Reform von 1974 zur Grafschaft."),
    ("yes", "Cerro Rojo", "83b30bfffffffff", -22.3000, -68.9000, "chile",
     "An open-pit copper mine has replaced most of the former grazing land.",
     "Une mine de cuivre à ciel ouvert a remplacé la plupart des anciens pâturages.",
     "Ein Kupfertagebau hat den größten Teil des früheren Weidelands verdrängt."),
    ("no", "Vila Nova", "833922fffffffff", 41.1579, -8.6291, "portugal",
     "A famous poet was born here in the nineteenth century.",
     "Un poète célèbre est né ici au XIXe siècle.",
     "Ein berühmter Dichter wurde hier im neunzehnten Jahrhundert geboren."),
    ("yes", "Noordhaven", "83196bfffffffff", 51.9500, 4.1400, "netherlands",
     'The old harbour, known locally as "the Basin", was filled in and is now a container terminal.',
     "L'ancien port, que les habitants appellent « le Bassin », a été remblayé et accueille "
     "aujourd'hui un terminal à conteneurs.",
     "Der alte Hafen, im Ort „das Becken“ genannt, wurde aufgeschüttet und ist heute ein Containerterminal."),
    ("no", "Kallio", "831126fffffffff", 60.1841, 24.9500, "finland",
     "The population grew by four percent between the last two censuses.",
     "La population a augmenté de quatre pour cent entre les deux derniers recensements.",
     "Die Bevölkerung wuchs zwischen den letzten beiden Volkszählungen um vier Prozent."),
    ("yes", "Hapao", "83696afffffffff", 16.9300, 121.0600, "philippines",
     "Rice terraces climb the steep slopes above the valley floor.",
     "Des rizières en terrasses gravissent les pentes raides au-dessus du fond de la vallée.",
     "Reisterrassen ziehen sich die steilen Hänge über dem Talboden hinauf."),
    ("no", "Café am Markt", "831f8dfffffffff", 48.1372, 11.5756, "germany",
     "Opening hours are Monday to Friday, nine to five.",
     "Ouvert du lundi au vendredi, de neuf heures à dix-sept heures.",
     "Geöffnet von Montag bis Freitag, von neun bis siebzehn Uhr."),
    ("yes", "Isla Ceniza", "833469fffffffff", 28.5000, -13.8600, "spain",
     "Most of the island is bare volcanic rock with little vegetation.",
     "La majeure partie de l'île est faite de roche volcanique nue, avec peu de végétation.",
     "Der größte Teil der Insel besteht aus nacktem Vulkangestein mit wenig Vegetation."),
    ("no", "Val Sura", "831f8afffffffff", 46.6000, 10.3000, "switzerland",
     "The local dialect has its own words for kinship.",
     "Le dialecte local a ses propres mots pour désigner la parenté.",
     "Der örtliche Dialekt hat eigene Wörter für Verwandtschaft."),
    ("yes", "Tempelfeld", "831f18fffffffff", 52.4730, 13.4039, "germany",
     "A new housing estate was built on the former airfield.",
     "Un nouveau lotissement a été construit sur l'ancien aérodrome.",
     "Auf dem ehemaligen Flugplatz wurde eine neue Wohnsiedlung gebaut."),
    ("no", "Little Hadham", "83194efffffffff", 51.9200, 0.1000, "england",
     "The council meets on the first Tuesday of each month.",
     "Le conseil se réunit le premier mardi de chaque mois.",
     "Der Rat tritt am ersten Dienstag jedes Monats zusammen."),
    ("yes", "Koivujärvi", "831125fffffffff", 62.2426, 25.7473, "finland",
     "The lake freezes every winter and is ringed by birch woods.",
     "Le lac gèle chaque hiver et est entouré de bois de bouleaux.",
     "Der See friert jeden Winter zu und ist von Birkenwäldern umgeben."),
    ("no", "Castell Vell", "833944fffffffff", 41.3851, 2.1734, "spain",
     "Guided tours are available in three languages.",
     "Des visites guidées sont proposées en trois langues.",
     "Führungen werden in drei Sprachen angeboten."),
)

_RERANKER_PROMPT = (
    "<Instruct>: Decide whether the Document says something about its place that would be visible "
    "from above and helps map land use or land cover: crops, forest, water, bare ground, terrain, "
    "buildings, roads or other infrastructure. History, people, events and services do not count.\n"
    "<Query>: Does this sentence carry a land-use or land-cover signal?\n"
    "<Document>: {}\n"
)

# zero-shot classifiers (gliner2, gliclass: score_kind nli): the premise, then the hypothesis line
ZEROSHOT_PROMPT = (
    "Zero-shot input: the premise is the target sentence, the hypothesis the line after HYPOTHESIS.\n\n"
    "TARGET SENTENCE: {}\n\n"
    "HYPOTHESIS: This sentence tells something about the land use or land cover of its place.\n"
)

_BENCHMARK_TOML = """\
# kit's demo benchmark, written by `kit demo`; the data is in the lrb layout.
name = "kit-demo"
manifest = "translations/manifest.json"

[prompts]
generate = "prompt_generate.txt"
score = "prompt_reranker.txt"
zeroshot = "prompt_zeroshot.txt"
"""


def source_item_id(english: str) -> str:
    """The demo's source item id of a sentence: first 16 hex of the sha256 of its English text."""
    return hashlib.sha256(english.encode("utf-8")).hexdigest()[:16]


def labelled_sentences() -> list[tuple[str, int, str, str]]:
    """Every demo item as (language, row index, sentence, label yes/no), languages in LANGUAGES order."""
    column = {"en": 6, "fr": 7, "de": 8}
    return [(lang, i, row[column[lang]], row[0]) for lang in LANGUAGES for i, row in enumerate(_ROWS)]


def demo_prompt(task: str) -> str:
    """The demo benchmark's prompt text for `task` (generate or score), with its one `{}`."""
    return DEFAULT_GENERATE_PROMPT.read_text(encoding="utf-8") if task == "generate" else _RERANKER_PROMPT


def _language_csv(language: str) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    column = {"en": 6, "fr": 7, "de": 8}[language]
    for row in _ROWS:
        label, polygon, cell, lat, lon, region = row[:6]
        writer.writerow([
            row[column], label, polygon, cell, f"{lat:.6f}", f"{lon:.6f}",
            SOURCE, region, "", source_item_id(row[6]), language,
        ])
    return out.getvalue().encode("utf-8")


def demo_files() -> dict[str, bytes]:
    """Every file of the demo benchmark: path relative to the benchmark folder -> bytes."""
    csvs = {lang: _language_csv(lang) for lang in LANGUAGES}
    digests = {lang: hashlib.sha256(data).hexdigest() for lang, data in csvs.items()}
    manifest = {
        "dataset": DATASET,
        "revision": hashlib.sha1(b"".join(csvs[lang] for lang in LANGUAGES)).hexdigest(),
        "split": "train",
        "languages": list(LANGUAGES),
        "row_count": len(_ROWS),
        "source_item_ids": [source_item_id(row[6]) for row in _ROWS],
        "files": {
            lang: {"path": f"{lang}/v3-final-{lang}.csv", "rows": len(_ROWS), "sha256": digests[lang]}
            for lang in LANGUAGES
        },
        "whole_set_sha256": whole_set_sha256(digests),
    }
    files = {
        f"translations/{lang}/v3-final-{lang}.csv": data for lang, data in csvs.items()
    }
    files["translations/manifest.json"] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    files["prompt_generate.txt"] = DEFAULT_GENERATE_PROMPT.read_bytes()
    files["prompt_reranker.txt"] = _RERANKER_PROMPT.encode("utf-8")
    files["prompt_zeroshot.txt"] = ZEROSHOT_PROMPT.encode("utf-8")
    files["benchmark.toml"] = _BENCHMARK_TOML.encode("utf-8")
    return files


def write_demo_benchmark(dest: Path) -> Path:
    """Write the demo benchmark into folder `dest` and return `dest`.

    A complete, byte-identical copy already there is left untouched (its digests stay
    stable); an older demo is replaced; any other existing folder is refused.
    """
    dest = Path(dest)
    files = demo_files()
    if _holds(dest, files):
        return dest
    if dest.exists() and not _replaceable(dest):
        raise ConfigError(
            f"{dest}: exists and is not kit's demo benchmark", fix="remove it or choose another folder for the demo"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Built beside dest and renamed in, so no reader ever sees half a dataset.
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        for rel, data in files.items():
            write_bytes_atomic(tmp / rel, data, durable=False)   # replace_folder makes them durable
        if not _holds(dest, files):   # a concurrent writer may have finished the same demo first
            replace_folder(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _holds(dest: Path, files: dict[str, bytes]) -> bool:
    """True when every demo file is in `dest` with exactly these bytes."""
    try:
        return all((dest / rel).read_bytes() == data for rel, data in files.items())
    except OSError:
        return False


def _replaceable(dest: Path) -> bool:
    """An empty folder, or one holding some version of kit's demo dataset."""
    if not dest.is_dir():
        return False
    if not any(dest.iterdir()):
        return True
    try:
        manifest = json.loads((dest / "translations" / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("dataset") == DATASET
