"""The programs a test session starts, and whether a brand-new machine has each of them when the
fast tier runs.

The fast tier starts while the set-up of the services is still installing Debian packages in the
background (scripts/test.sh). A program the fast tier runs must therefore come from a Debian 12 base
machine (dpkg Priority `required`, plus what scripts/dev/packages.sh names as BASE) or from the
packages that `scripts/dev/packages.sh --fast-tier` installs before the fast tier starts. Every
program this Python process starts (subprocess, os.exec*, os.posix_spawn*, os.system) is recorded
through an audit hook; at the end of a fast-tier session (KIT_TEST_TIER=fast) each one is resolved
to its Debian package, and one that a brand-new machine would lack at that moment fails the run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES_SH = REPO / "scripts" / "dev" / "packages.sh"


class Recorder:
    """Records the programs this process starts while it is active: each name or path as given, with
    the file the child's PATH (at the moment of the call) resolves it to, or None where none."""

    def __init__(self) -> None:
        self.started: dict[str, set[Path | None]] = {}

    def __enter__(self) -> "Recorder":
        _hook()
        _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove(self)

    def add(self, program: str, path: str | None) -> None:
        """Record PROGRAM as looked up in PATH (None: this process's PATH now)."""
        self.started.setdefault(program, set()).add(resolve(program, path))


_active: list[Recorder] = []
_hooked = False


def _hook() -> None:
    """Add the audit hook once (an audit hook cannot be removed; with no recorder active it does nothing)."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True


def _env_path(env: object) -> str | None:
    """The PATH of a child's environment mapping (None: the child inherits this process's)."""
    if not isinstance(env, dict):
        return None
    value = env.get("PATH", env.get(b"PATH"))
    return os.fsdecode(value) if value is not None else os.defpath


def _argv(event: str, args: tuple) -> tuple[list[str], str | None]:
    """The program and its arguments that an audit event starts, and the PATH it is looked up in."""
    if event == "subprocess.Popen":
        executable, argv, _cwd, env = args
        argv = [argv] if isinstance(argv, (str, bytes, os.PathLike)) else list(argv or [])
        if executable is not None:
            argv = [executable, *argv[1:]]
    elif event in ("os.exec", "os.posix_spawn"):
        executable, argv, env = args
        argv = [executable, *list(argv)[1:]]
    else:   # os.system: the shell's first word that is not an assignment
        words = shlex.split(os.fsdecode(args[0])) if args and args[0] else []
        argv, env = [w for w in words if "=" not in w][:1], None
    return [os.fsdecode(a) for a in argv], _env_path(env)


# Programs that start the program named after their own options (and, for env, VAR=value words).
WITH_VALUE = {"timeout": {"-s", "--signal", "-k", "--kill-after"}, "env": {"-u", "--unset", "-C", "--chdir"},
              "nice": {"-n", "--adjustment"}, "stdbuf": {"-i", "-o", "-e"}, "setsid": set(), "nohup": set()}


def _wrapped(argv: list[str], path: str | None) -> tuple[int, str | None] | None:
    """Where in ARGV the program that a wrapper (`env -i PATH=... squeue`, `timeout 5 sinfo`) starts
    in turn is, and the PATH it is looked up in; None when ARGV is no wrapper or starts nothing."""
    wrapper = os.path.basename(argv[0]) if argv else ""
    if wrapper not in WITH_VALUE:
        return None
    positional = 1 if wrapper == "timeout" else 0   # timeout's duration comes before the program
    i = 1
    while i < len(argv):
        word = argv[i]
        if wrapper == "env" and word in ("-i", "--ignore-environment"):
            path = os.defpath
        elif wrapper == "env" and word.startswith("PATH="):
            path = word[len("PATH="):]
        elif word in WITH_VALUE[wrapper]:
            i += 1
        elif word.startswith("-") or (wrapper == "env" and "=" in word):
            pass
        elif positional:
            positional -= 1
        else:
            return i, path
        i += 1
    return None


EVENTS = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.system"})


def _audit(event: str, args: tuple) -> None:
    if not _active or event not in EVENTS:
        return
    try:
        argv, path = _argv(event, args)
        path = path if path is not None else os.environ.get("PATH", os.defpath)
        while argv:
            for recorder in _active:
                recorder.add(argv[0], path)
            inner = _wrapped(argv, path)
            if inner is None:
                break
            argv, path = argv[inner[0]:], inner[1]
    except Exception:   # an audit hook must never break the call it watches
        return


def resolve(program: str, path: str | None) -> Path | None:
    """The absolute file a program name or path starts, as the child's PATH finds it; None if none."""
    found = shutil.which(program, path=path) if os.sep not in program else program
    return Path(found).absolute() if found and os.path.exists(found) else None


def ours(file: Path) -> bool:
    """True for a program of this checkout, of a Python environment, or made by a test (a fake
    `oarsub` in a temporary folder): none of these comes from a Debian package."""
    roots = {REPO, Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(tempfile.gettempdir())}
    for f in {file, Path(os.path.realpath(file))}:
        if any(f.is_relative_to(r) for r in roots):
            return True
    return False


def dpkg_package(file: Path) -> str | None:
    """The Debian package that installed FILE (itself, or the file a link leads to); None if none."""
    names = [str(file), os.path.realpath(file)]
    # merged /usr: dpkg knows /bin/bash, the lookup finds /usr/bin/bash (and the other way round)
    for name in list(names):
        for a, b in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/")):
            if name.startswith(a):
                names.append(b + name[len(a):])
            elif name.startswith(b):
                names.append(a + name[len(b):])
    for f in dict.fromkeys(names):
        r = subprocess.run(["dpkg-query", "-S", f], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout:
            # "pkg[:arch][, pkg2]: /path" (diversions print extra lines first)
            line = [ln for ln in r.stdout.splitlines() if not ln.startswith("diversion ")][-1]
            return line.rsplit(": ", 1)[0].split(",")[0].split(":")[0].strip()
    return None


def required_priority(package: str) -> bool:
    """True when PACKAGE is of Priority `required` (debootstrap's minimal base has all of them)."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Priority}", package], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "required"


def packages_sh_list(which: str) -> set[str]:
    """The packages `scripts/dev/packages.sh --list WHICH` names (base, fast-tier or all)."""
    r = subprocess.run(["bash", str(PACKAGES_SH), "--list", which], capture_output=True, text=True, check=True)
    return set(r.stdout.split())


@dataclass(frozen=True)
class Missing:
    """A program the fast tier ran that a brand-new machine may not have yet."""

    program: str
    file: Path | None
    package: str | None

    def __str__(self) -> str:
        if self.file is None:
            return f"{self.program}: not found on this machine"
        if self.package is None:
            return f"{self.program} ({self.file}): no Debian package installed it, so a brand-new machine lacks it"
        return (f"{self.program} ({self.file}, Debian package {self.package}): neither a Debian 12 base machine "
                f"has it nor does `scripts/dev/packages.sh --fast-tier` install it; add it to FAST_TIER there")


def missing_on_a_new_machine(started: dict[str, set[Path | None]], allowed: Iterable[str],
                             package_of: Callable[[Path], str | None] = dpkg_package,
                             in_base: Callable[[str], bool] = required_priority) -> list[Missing]:
    """The programs started (name or path -> the files it resolved to) that come from no allowed
    Debian package."""
    allowed = set(allowed)
    missing = []
    for program, files in sorted(started.items()):
        for file in sorted(files, key=str):
            if file is not None and ours(file):
                continue
            if file is None and os.sep in program and ours(Path(program).absolute()):
                continue   # a path of ours that a test starts knowing it is missing
            package = package_of(file) if file is not None else None
            if package is not None and (package in allowed or in_base(package)):
                continue
            missing.append(Missing(program, file, package))
    return missing


def check_fast_tier(started: dict[str, set[Path | None]], report: Callable[[str], None]) -> bool:
    """Check the programs a fast-tier session started against a brand-new machine's at that moment;
    report each one it lacks. True when none is missing."""
    allowed = packages_sh_list("base") | packages_sh_list("fast-tier")
    missing = missing_on_a_new_machine(started, allowed)
    for m in missing:
        report(f"fast tier: {m}")
    logs = os.environ.get("KIT_TEST_LOGS")
    if logs:
        Path(logs).mkdir(parents=True, exist_ok=True)
        rows = sorted(f"{program}\t{file or '(not found)'}\n" for program, files in started.items() for file in files)
        Path(logs, "fast-tier-programs.txt").write_text("".join(rows), encoding="utf-8")
    return not missing
