"""apptainer/<image>.def: an Apptainer definition derived from each Dockerfile with spython,
for clusters that run `apptainer build` themselves.

spython (0.3.14) parses the Dockerfile; kit writes the definition, fixing where spython is
lossy: a FROM without `AS` does not start a new stage (spython merges it into the previous
one), ARGs become fixed shell assignments (here: Apptainer build arguments `{{ NAME }}` with a
`%arguments` section per stage, Bootstrap included, so a local Docker base works through
`--build-arg BOOTSTRAP=docker-daemon`), USER becomes a broken `su -` (here: a comment, since
Apptainer runs as the calling user), and CMD gets appended arguments (here: Docker's
semantics, arguments replace the command). kit's `.kit-build/` context (CA bundle, wheelhouse)
exists only in kit's own builds: it is left out, and a %setup links its place to /mnt instead, so
`apptainer build --bind FOLDER:/mnt` lends pip a CA bundle or a wheelhouse that never enters the
image. Docker's RUN instructions each start afresh; Apptainer's %post is one script, so the
Dockerfiles keep to absolute paths after a `cd`."""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

from kit.errors import MissingExtraError
from kit.files import read_regular_file
from kit.images.spec import Target

_ARG = re.compile(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?\s*$", re.I)
_FROM = re.compile(r"^\s*FROM\s+(\S+)(\s+AS\s+\S+)?\s*$", re.I)
_USER = re.compile(r"^\s*USER\s+(.+)$", re.I)
KIT_BUILD_SOURCE = ".kit-buil[d]"


def preprocess(text: str) -> tuple[str, str, dict[str, str], list[str], dict[str, str]]:
    """(header comments, Dockerfile for spython, ARG defaults, USER values, and for each stage
    that reads kit's build inputs, the folder they go to) of a Dockerfile."""
    header, body, args, users, inputs = [], [], {}, [], {}
    seen_from, stage = False, ""
    for line in text.splitlines():
        if not seen_from and line.startswith("#"):
            header.append(line)
            continue
        m = _ARG.match(line)
        if m:
            args.setdefault(m.group(1), (m.group(2) or "").strip().strip('"'))
            continue
        m = _USER.match(line)
        if m:
            users.append(m.group(1).strip())
            continue
        m = _FROM.match(line)
        if m:
            seen_from, stage = True, m.group(2).split()[-1] if m.group(2) else "final"
            line = f"FROM {m.group(1)} AS {stage}"
        if line.lstrip().upper().startswith("COPY") and f" {KIT_BUILD_SOURCE}" in line:
            line = line.replace(f" {KIT_BUILD_SOURCE}", "")
            inputs[stage] = line.split()[-1].rstrip("/")
        body.append(line)
    out = "\n".join(body) + "\n"
    for name in sorted(args, key=len, reverse=True):
        out = re.sub(r"\$\{%s\}|\$%s\b" % (name, name), f"@@{name}@@", out)
    return "\n".join(header), out, args, users, inputs


def setup_lines(folder: str) -> list[str]:
    """%setup pointing pip's optional inputs at /mnt: `apptainer build --bind DIR:/mnt` lends a
    folder with ca.pem and/or wheels/ to every stage's %post (a bind needs a target that exists
    in each stage, and /mnt does), and only this stage's links lead pip there."""
    return ["%setup", f'mkdir -p "${{APPTAINER_ROOTFS}}{folder}"',
            f'ln -sfn /mnt/wheels "${{APPTAINER_ROOTFS}}{folder}/wheels"',
            f'ln -sfn /mnt/ca.pem "${{APPTAINER_ROOTFS}}{folder}/ca.pem"']


def _files(root: Path, pairs: list[list[str]]) -> list[str]:
    # Docker copies a file into a destination folder ending in "/", and a folder's contents into
    # it; Apptainer's %files copies like `cp -r`: a file needs its full destination path, and a
    # folder copied onto "dest/" would land inside it as dest/<name>
    out = []
    for src, dest in pairs:
        if dest.endswith("/") and ((root / src).is_dir() or src.endswith("/")):
            dest = dest.rstrip("/")
        elif dest.endswith("/"):
            dest += Path(src).name
        out.append(f"{src} {dest}")
    return out


def _template(text: str) -> str:
    return re.sub(r"@@([A-Za-z_][A-Za-z0-9_]*)@@", r"{{ \1 }}", text)


def runscript(entrypoint: list[str] | None, cmd: list[str] | None) -> list[str]:
    """A %runscript with Docker's semantics: arguments replace CMD, ENTRYPOINT stays."""
    import shlex

    ep = " ".join(shlex.quote(a) for a in entrypoint or [])
    default = " ".join(shlex.quote(a) for a in [*(entrypoint or []), *(cmd or [])]) or "/bin/sh"
    return ["if [ $# -gt 0 ]; then", f"    exec {ep + ' ' if ep else ''}\"$@\"", "else", f"    exec {default}", "fi"]


def render(t: Target) -> str:
    """The definition file text for one image (its default variant)."""
    try:
        import spython
        from spython.main.parse.parsers import DockerParser
    except ImportError:
        raise MissingExtraError("kit images defs", "spython", "images") from None
    dockerfile = t.path(t.spec.dockerfile)
    text = read_regular_file(dockerfile, f"the Dockerfile of image {t.name}", 1 << 20,
                             fix=f"restore it from git, or run from the repository root (images.toml's containers/ "
                                 f"folder is in {t.root})").decode("utf-8", "replace")
    header, body, args, users, inputs = preprocess(text)
    args = {"BOOTSTRAP": "docker", **args, "BASE_IMAGE": t.spec.base, **t.spec.build_args}
    from spython.logger import bot

    streams = bot.errorStream, bot.outputStream
    bot.errorStream = bot.outputStream = io.StringIO()  # it warns about every COPY source it cannot see
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".Dockerfile") as tmp:
            tmp.write(body)
            tmp.flush()
            stages = DockerParser(tmp.name).recipe
    finally:
        bot.errorStream, bot.outputStream = streams
    out = [f"# Generated from {t.spec.dockerfile} by `kit images defs` (spython {spython.__version__} plus kit's",
           "# fixes, see kit/images/apptainer_def.py). Do not edit: change the Dockerfile and regenerate.",
           "# Build from the repository root, with network:",
           f"#   apptainer build kit-{t.name}.sif apptainer/{t.name}.def",
           "# On a Docker base present locally: --build-arg BOOTSTRAP=docker-daemon --build-arg BASE_IMAGE=TAG",
           "# Behind a TLS-intercepting proxy or offline, lend pip a folder holding ca.pem and/or wheels/",
           "# (a wheelhouse) for %post only; it never enters the image:  --bind FOLDER:/mnt",
           *(f"# USER {u}: not applied; Apptainer runs as the calling user." for u in users),
           "#", *header.splitlines(), ""]
    names = list(stages)
    for i, (name, r) in enumerate(stages.items()):
        from_ref = r.fromHeader.strip()
        out += ["Bootstrap: {{ BOOTSTRAP }}", f"From: {from_ref}", f"Stage: {name}", "", "%arguments",
                *(f"{k}={v}" for k, v in sorted(args.items())), ""]
        if name in inputs:
            out += [*setup_lines(inputs[name]), ""]
        if r.files:
            out += ["%files", *_files(t.root, r.files), ""]
        for layer, pairs in r.layer_files.items():
            out += [f"%files from {layer}", *_files(t.root, pairs), ""]
        post = [ln.rstrip("\n") for ln in r.install if ln.strip()]
        if post:
            out += ["%post", *post, ""]
        if r.environ:
            out += ["%environment", *(f"export {e}" for e in r.environ), ""]
        if i == len(names) - 1:
            out += ["%runscript", *runscript(r.entrypoint, r.cmd), ""]
    return _template("\n".join(out).rstrip() + "\n")


def def_path(t: Target) -> Path:
    """apptainer/<name>.def under the repository root."""
    return t.root / "apptainer" / f"{t.name}.def"
