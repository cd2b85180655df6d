"""Options and output helpers shared by the commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kit.errors import ConfigError
from kit.results.keys import RESULT_VERSION

if TYPE_CHECKING:
    from kit.config.dataset import Dataset

roster_option = click.option(
    "--roster", type=click.Path(path_type=Path), default="roster.toml", show_default=True, envvar="KIT_ROSTER",
    help="Roster file ([[run]] entries). Env: KIT_ROSTER.",
)
benchmark_option = click.option(
    "--benchmark", type=click.Path(path_type=Path), default=None, envvar="KIT_BENCHMARK",
    help="Benchmark folder (manifest.json or translations/manifest.json, prompt files). "
         "Default: the roster's `benchmark` key. Env: KIT_BENCHMARK.",
)
sites_option = click.option(
    "--sites-file", "sites_file", type=click.Path(path_type=Path), default="sites.toml", show_default=True,
    envvar="KIT_SITES_FILE",
    help="Sites file ([site.NAME] tables). Env: KIT_SITES_FILE.",
)
models_option = click.option(
    "--model", "models", multiple=True, metavar="MODEL",
    help="Only this run (name or model id); repeat for several. Default: every run.",
)
languages_option = click.option(
    "--languages", default=None, metavar="en,fr,...",
    help="Only these languages (comma-separated, any case). Default: every language the runs cover.",
)
unpinned_option = click.option(
    "--allow-unpinned", is_flag=True, help="Accept roster runs without a 40-hex revision (recorded as unpinned).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON envelope instead of tables.")


def roster_given() -> bool:
    """Whether --roster (or KIT_ROSTER) was given, not defaulted to ./roster.toml."""
    source = click.get_current_context().get_parameter_source("roster")
    return source not in (None, click.core.ParameterSource.DEFAULT)


def roster_to_use(roster: Path) -> Path | None:
    """The roster a command that also works without one reads: the one given, or ./roster.toml when
    it is there; None when neither (the command then works on the checkpoints alone)."""
    return roster if roster_given() or roster.exists() else None


def split_names(text: str | None) -> list[str] | None:
    """'a, b' -> ['a', 'b'], as written; None (the option not given) -> None (every one); a ConfigError
    for a text that names nothing ('', ',' or ' , '), which would otherwise silently mean every one."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ConfigError(f"{text!r} names nothing", fix="give names separated by commas, or leave the option "
                                                        "out to mean every one")
    return names


def results_folder(path: Path) -> Path:
    """`path` as a results tree to read: absent (nothing ran yet) or a folder; a ConfigError when it is a
    file, device or other non-folder."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path}: is not a folder of results", fix="point at the folder holding "
                                                                   "<language>/<run>.json checkpoints")
    return path


def split_languages(text: str | None) -> list[str] | None:
    """'en, FR' -> ['en', 'fr']: lower-cased, as lrb reads its language selectors; None or '' -> None."""
    langs = split_names(text)
    return list(dict.fromkeys(lang.lower() for lang in langs)) if langs else None


# The envelope's `status`, a closed set: the command did its job and found nothing wrong (ok), did
# its job and found something wrong (failed: a FAIL verdict, an invalid file, a DIFFERENT rerun, a
# refused merge; exit 1), or could not do it (error: bad input or a missing tool, with `errors`;
# exit 2, or 1 for a refused submission or image). Verdicts and results are in `data`.
OK, FAILED, ERROR = "ok", "failed", "error"
STATUSES = (OK, FAILED, ERROR)


def envelope(command: str, status: str, data: Any, errors: list[str] | None = None) -> dict:
    """The versioned JSON envelope every --json output uses."""
    if status not in STATUSES:
        raise ValueError(f"envelope status {status!r} is not one of {STATUSES}")
    return {"kit_result_version": RESULT_VERSION, "command": command, "status": status,
            "data": data, "errors": list(errors or [])}


def print_json(command: str, status: str, data: Any, errors: list[str] | None = None) -> None:
    """Print the envelope on stdout (status: OK, FAILED or ERROR): UTF-8 JSON, with \\u escapes instead
    when a text UTF-8 cannot hold is in it (a file name's bytes that are not UTF-8, a lone surrogate
    escape read from a checkpoint), so the output is always valid JSON in valid UTF-8."""
    whole = envelope(command, status, data, errors)
    text = json.dumps(whole, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")   # (an ASCII stream takes the escapes)
    except (UnicodeEncodeError, LookupError):
        text = json.dumps(whole, indent=2, sort_keys=True, ensure_ascii=True, default=str)
    sys.stdout.write(text + "\n")
    _PRINTED[0] = sys.stdout


# the stream print_json last wrote an envelope to: a command stopped by a signal after printing its own
# prints no second one (kit.cli.main); each run of the CLI has its own stream (tests run several in one process)
_PRINTED: list[Any] = [None]


def json_printed() -> bool:
    """Whether print_json has written an envelope to the current standard output."""
    return _PRINTED[0] is not None and _PRINTED[0] is sys.stdout


def say(message: str) -> None:
    """A progress line on stderr (stdout stays for results)."""
    click.echo(message, err=True)


def benchmark_or_roster(path: Path | None, roster: Path | None = Path("roster.toml")) -> "Dataset | None":
    """The benchmark given, or the one `roster` names (./roster.toml by default, when it is there;
    a roster given by name must exist); None without either."""
    if path is not None:
        from kit.config.kinds import load_benchmark

        return load_benchmark(path)
    if roster is not None and (roster.is_file() or roster != Path("roster.toml")):
        from kit.config.project import roster_benchmark

        return roster_benchmark(roster)
    return None


def trusted_keys(path: Path | None) -> list | None:
    """The public keys a --trusted-keys (or --public-keys) file holds (kit.signing.load_trusted_keys: one
    key from `kit keys export`, or a JSON list); None when no file was given."""
    if path is None:
        return None
    from kit.signing import load_trusted_keys

    return load_trusted_keys(path)
