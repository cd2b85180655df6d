"""Entry point: the `kit` group with lazily loaded subcommands and one error printer."""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys
from typing import Any

import click

import kit
from kit.errors import CheckpointError, KitError, MissingExtraError, disk_error, error_line, shortened, visible
from kit.settings import SETTING_VARIABLES

# command -> "module:attribute"; modules load only when their command runs (fast --help).
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("kit.cli.demo_cmd:demo", "Run the embedded tiny sweep end to end (no files, no network)."),
    "plan": ("kit.cli.plan_cmd:plan", "Show runs, languages, prompts, pairs, shards and checkpoint states."),
    "pull": ("kit.cli.pull_cmd:pull", "Copy a site's checkpoints here (over its ssh) and check every one."),
    "run": ("kit.cli.run_cmd:run", "Submit the pending pairs of a sweep to a site (or several)."),
    "shard": ("kit.cli.shard_cmd:shard", "Worker: run one shard's pairs and write checkpoints (inside the image)."),
    "status": ("kit.cli.status_cmd:status", "Say where every pair stands: complete, pending, invalid."),
    "verify": ("kit.cli.verify_cmd:verify", "Recompute checkpoint metrics from predictions; fail on any mismatch."),
    "report": ("kit.cli.report_cmd:report", "Write leaderboard, aggregates, summary and F1 heatmap."),
    "compare": ("kit.cli.compare_cmd:compare", "Is run A different from run B? Paired intervals, McNemar tests, flipped items."),
    "images": ("kit.cli.images_cmd:images", "Build, convert (SIF, sqsh), verify and lint the backend images."),
    "collect": ("kit.cli.collect_cmd:collect", "Merge sites' results trees into one, or refuse listing every problem."),
    "reproduce": ("kit.cli.reproduce_cmd:reproduce", "Rerun one result in its pinned image: REPRODUCED, WITHIN TOLERANCE or DIFFERENT."),
    "check": ("kit.cli.check_cmd:check", "Compliance check of a results tree (MLPerf-style): PASS or FAIL."),
    "cancel": ("kit.cli.cancel_cmd:cancel", "Cancel a site's queued and running jobs that still own pending pairs."),
    "export": ("kit.cli.export_cmd:export", "Write checkpoints as another tool's result files (lrb), which its loader reads."),
    "weights": ("kit.cli.weights_cmd:weights", "Stage model weights from the Hub, push them to a site, verify them."),
    "release": ("kit.cli.release_cmd:release", "Write a release folder as lrb publishes one: card, report, items, run files, status."),
    "publish": ("kit.cli.publish_cmd:publish", "Upload a release folder to a Hugging Face dataset repo (--dry-run lists the files)."),
    "keys": ("kit.cli.keys_cmd:keys", "Make and export the Ed25519 key results are signed with."),
    "sign": ("kit.cli.sign_cmd:sign", "Sign each complete checkpoint (in-toto statement, DSSE envelope) with your key."),
}
GROUPS = ("images", "weights", "keys")   # commands with subcommands: the envelope names both words


class OutputClosed(Exception):
    """The reader of kit's standard output went away (`kit status | head`): not an OSError, so that click
    does not turn it into exit 1, the code of a finding."""


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is invoked."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise OutputClosed() from None

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:   # (kit's own --help and --version print here)
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            raise OutputClosed() from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        target, _ = COMMANDS[name]
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "KIT"})
@click.version_option(kit.__version__, prog_name="kit")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """kit: pinned images, deterministic shards and provenance for LLM benchmark sweeps.

    \b
    Start here:
      kit demo                       tiny end-to-end sweep on this machine
      kit plan --roster roster.toml  what would run, and what is already done
      kit run --site lyon --model M  submit the pending pairs of model M to a site
      kit status RESULTS             where every pair stands

    The files a sweep reads can also be named by environment variables: KIT_ROSTER,
    KIT_BENCHMARK, KIT_SITES_FILE, KIT_IMAGES_LOCK, KIT_WEIGHTS_CACHE (each option's
    --help says which it reads, as "Env: ...").
    """
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose


def command_path(args: list[str]) -> str:
    """The command an argument list runs, as the JSON envelope names it ("plan", "images lint")."""
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] not in COMMANDS:
        return "kit"
    if words[0] in GROUPS and len(words) > 1:
        return f"{words[0]} {words[1]}"
    return words[0]


def main(argv: list[str] | None = None) -> None:
    """Run the CLI. This is the one place errors are printed: a KitError becomes one stderr line
    (and, under --json, the error envelope on stdout) and its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = bool({"-v", "--verbose"} & set(_root_options(args)))   # kit's own flag, before the command
    # kit's config models use no pydantic plugin, and looking for them reads the entry points of every
    # installed distribution when the first model is built (20 ms here, more in an image's venv).
    # Set the variable yourself to load them.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if not _a_terminal(sys.stderr):   # a log or a pipe: the Hub's and transformers' progress bars would fill
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")   # it with carriage returns (jobs set it too)
    if sys.stdout is None:   # started with its standard output closed: what it prints would be lost
        if sys.stderr is not None:
            print("kit: error: standard output is closed, so kit's answer would be lost; fix: give the command "
                  "an output (a terminal, a file, a pipe)", file=sys.stderr)
        sys.exit(2)
    stops = _stop_signals_as_interrupts()
    try:
        _run(args, verbose)
    finally:
        stops.restore()
        _last_flush()
        if argv is None:
            # kit is this process's program and it is ending: the interpreter's exit would walk everything
            # the command held once more for cycles (tens of ms after a tree of 20,000 pairs), and the
            # system takes the memory back anyway. A caller that passes argv (tests) keeps its collector.
            gc.freeze()


def _a_terminal(stream: object) -> bool:
    """Whether a standard stream is a terminal (False when it is closed or cannot say)."""
    try:
        return bool(stream is not None and stream.isatty())   # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


def _run(args: list[str], verbose: bool) -> None:
    """The command, each error turned into its line and exit code."""
    try:
        cli.main(args=args, prog_name="kit", standalone_mode=False)
    except KitError as exc:
        if verbose:
            raise
        _exit_with(exc, args)
    except OSError as exc:   # a full, read-only or missing disk under any command: one line, never a traceback
        found = disk_error(exc)
        if verbose or found is None:
            raise
        _exit_with(found, args)
    except ModuleNotFoundError as exc:   # an optional library a command needs, not a kit bug
        if verbose or not exc.name or exc.name.split(".")[0] == "kit":
            raise
        missing = MissingExtraError(f"kit {command_path(args)}", exc.name.split(".")[0], "worker")
        click.echo(error_line(missing), err=True)
        sys.exit(missing.exit_code)
    except click.exceptions.Abort as exc:
        stopped = exc.__cause__ if isinstance(exc.__cause__, Stopped) else None   # (click's wrapping of it)
        if stopped is not None:
            _stop_said(args, signal.Signals(stopped.signum).name, f"stopped by {signal.Signals(stopped.signum).name}")
            sys.exit(128 + stopped.signum)
        _stop_said(args, "SIGINT", "aborted")
        sys.exit(130)
    except click.exceptions.NoArgsIsHelpError as exc:   # `kit`, `kit images` alone: the help, as --help gives it
        if json_asked(args):
            from kit.cli.common import ERROR, print_json

            print_json(command_path(args), ERROR, None, [f"no command given; fix: see `{exc.ctx.command_path} --help`"])
        click.echo(exc.ctx.get_help(), err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        line = _click_line(exc, args)
        if json_asked(args):
            from kit.cli.common import ERROR, print_json

            print_json(command_path(args), ERROR, None, [line])
        click.echo(f"kit: error: {line}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Stopped as exc:   # SIGTERM or SIGHUP, as Ctrl-C: what was being written is cleaned up on the way
        _stop_said(args, signal.Signals(exc.signum).name, f"stopped by {signal.Signals(exc.signum).name}")
        sys.exit(128 + exc.signum)
    except KeyboardInterrupt:
        _stop_said(args, "SIGINT", "interrupted")
        sys.exit(130)
    except (BrokenPipeError, OutputClosed):   # the reader of its output went away (`| head`): as a program
        _silence_stdout()                      # killed by SIGPIPE exits
        sys.exit(128 + signal.SIGPIPE)


def _stop_said(args: list[str], signame: str, line: str) -> None:
    """Say that the command was stopped: its line on stderr, and under --json the failed envelope on stdout
    (with `stopped_by`) unless the command had printed its own, so that a script always reads one document."""
    if json_asked(args):
        from kit.cli.common import FAILED, json_printed, print_json

        if not json_printed():
            try:
                print_json(command_path(args), FAILED, {"stopped_by": signame}, [line])
            except (OSError, ValueError):   # (an output gone too: the line below still says it)
                pass
    click.echo(f"kit: {line}", err=True)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP received by kit's own process: unwinds as Ctrl-C does (staging folders removed,
    nothing half-written), then kit says so and exits 128 + the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _StopHandlers:
    """The stop signals' handlers as they were before kit installed its own."""

    def __init__(self, previous: dict[int, object]) -> None:
        self.previous = previous

    def restore(self) -> None:
        """Put the handlers back (a caller that runs main in its own process, as tests do)."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)   # type: ignore[arg-type]


# kit's own stop handlers while they are installed (signal number -> handler), for _default_in_child,
# which is registered once per process
_INSTALLED: dict[int, object] = {}
_CHILD_HOOK: list[bool] = []


def _default_in_child() -> None:
    """In a process just forked from kit's (a pool's worker, the plot process): the stop signals' default
    action again. A handler written in Python runs only between bytecodes: a signal that comes just before
    the worker blocks in C (a pool's worker waiting for its next task when the pool terminates it) would
    be held for a handler that never runs, and the pool would wait for that worker forever."""
    for signum, handler in _INSTALLED.items():
        try:
            if signal.getsignal(signum) is handler:
                signal.signal(signum, signal.SIG_DFL)
        except ValueError:   # (forked from a thread of a process that is not Python's main one)
            pass


def _stop_signals_as_interrupts() -> _StopHandlers:
    """SIGTERM and SIGHUP raise Stopped in kit's own process (a command that runs jobs installs its own
    handlers over these); a process forked from it (a pool's worker) takes the default action, as before."""
    main_pid = os.getpid()
    if not _CHILD_HOOK:
        os.register_at_fork(after_in_child=_default_in_child)
        _CHILD_HOOK.append(True)

    def stop(signum: int, _frame: object) -> None:
        if os.getpid() != main_pid:   # a forked helper: end as the signal ends it
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Stopped(signum)

    previous: dict[int, object] = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(signum) is signal.SIG_DFL:   # (one ignored, as nohup does SIGHUP, stays so)
                previous[signum] = signal.signal(signum, stop)
                _INSTALLED[signum] = stop
        except ValueError:   # not the main thread
            break
    return _StopHandlers(previous)


def _last_flush() -> None:
    """Flush what kit printed; a reader gone by then is the exit of a program killed by SIGPIPE, not the
    interpreter's "Exception ignored" and exit 120."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(128 + signal.SIGPIPE)
    except (OSError, ValueError):   # (a full disk was said by the command; a closed stream has nothing left)
        _silence_stdout()


def _silence_stdout() -> None:
    """Point the standard output at /dev/null, so that the interpreter's last flush of what could not be
    written raises nothing more."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, AttributeError, ValueError):
        pass


def _click_line(exc: click.ClickException, args: list[str]) -> str:
    """click's refusal of the command line as kit's one error line: its message, the environment
    variable the bad value came from (KIT_<OPTION>), and where the usage is told."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    param = getattr(exc, "param", None)
    if ctx is not None and param is not None and param.name:
        from click.core import ParameterSource

        if ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT:
            names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or [])
            if not names and ctx.auto_envvar_prefix:
                names = [f"{ctx.auto_envvar_prefix}_{param.name.upper()}"]
            set_names = [n for n in names if n in os.environ] or names
            if set_names:
                message += f" (from the environment variable {set_names[0]})"
    where = ctx.command_path if ctx is not None else "kit"
    return shortened(visible(f"{message}; fix: see `{where} --help`"))


def _exit_with(exc: KitError, args: list[str]) -> None:
    """Print `exc` as kit's one error line (and, under --json, the error envelope) and exit with its code."""
    variables = environment_sources(exc.message, args)
    if variables:
        exc.message = f"{exc.message} (from the environment variable {', '.join(variables)})"
    if json_asked(args):
        from kit.cli.common import ERROR, FAILED, print_json

        # an invalid checkpoint the command refuses is a finding (failed, exit 1), as verify's FAIL is
        status = FAILED if isinstance(exc, CheckpointError) else ERROR
        try:
            print_json(command_path(args), status, None, [exc.one_line()])
        except OSError:   # the output is what failed (a full disk, a closed pipe): the line below says why
            _silence_stdout()
    click.echo(error_line(exc), err=True)
    sys.exit(exc.exit_code)


def environment_sources(message: str, args: list[str]) -> list[str]:
    """The environment variables the command reads (its options' KIT_* variables and kit's settings) whose
    value an error message names, leaving out options given on the command line (which win over their
    variable): where a value the user never typed came from."""
    given = {a.split("=", 1)[0] for a in args if a.startswith("-")}
    names = set(SETTING_VARIABLES)
    for prefix, command in _invoked(args):
        for param in command.params:
            if not isinstance(param, click.Option) or given & {*param.opts, *param.secondary_opts}:
                continue
            if param.envvar:
                names.update([param.envvar] if isinstance(param.envvar, str) else param.envvar)
            if param.name and param.allow_from_autoenv:   # click reads it when the named one is unset
                names.add(f"{prefix}_{param.name.upper()}")
    return sorted(name for name in names if len(os.environ.get(name, "").strip()) >= 3
                  and _names_whole(message, os.environ[name])
                  and name not in message)   # a message that names the variable says it already


def _names_whole(message: str, value: str) -> bool:
    """Whether `message` names `value` itself, not a longer name it begins or ends (a file under the folder
    a variable names is not the variable's value)."""
    import re

    return re.search(r"(?<![\w./-])" + re.escape(value) + r"(?![\w./-])", message) is not None


def _root_options(args: list[str]) -> list[str]:
    """The options given to kit itself: those before the command's name (none of kit's own takes a value)."""
    out = []
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            break
        out.append(arg)
    return out


def json_asked(args: list[str]) -> bool:
    """Whether the command was asked for its JSON envelope: --json (before a `--` that ends the options), or
    its variable (KIT_<COMMAND>_AS_JSON when --json is not on the command line), so that an error comes
    back in the form success would."""
    if "--json" in (args[:args.index("--")] if "--" in args else args):
        return True
    for prefix, command in _invoked(args):
        for param in command.params:
            if param.name != "as_json" or not isinstance(param, click.Option):
                continue
            names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or [])
            names.append(f"{prefix}_{param.name.upper()}")
            for name in names:
                if os.environ.get(name, "").strip():
                    try:
                        return bool(click.BOOL.convert(os.environ[name], param, None))
                    except click.BadParameter:
                        return False
    return False


def _invoked(args: list[str]) -> list[tuple[str, click.Command]]:
    """(click's automatic KIT_... prefix, command) of the command an argument list runs, and of its group."""
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] not in COMMANDS:
        return []
    try:
        command = cli.get_command(click.Context(cli), words[0])
    except Exception:   # noqa: BLE001 - only an error message's extra words hang on it
        return []
    out = [(f"KIT_{words[0].upper()}", command)] if command is not None else []
    if isinstance(command, click.Group) and len(words) > 1:
        sub = command.get_command(click.Context(command), words[1])
        if sub is not None:
            out.append((f"KIT_{words[0].upper()}_{words[1].upper()}", sub))
    return out
