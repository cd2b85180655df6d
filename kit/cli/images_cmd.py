"""`kit images`: build, convert, verify and lint the backend images (containers/images.toml)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kit.cli import common as C

files_options = [
    click.option("--images-file", type=click.Path(path_type=Path), default="containers/images.toml",
                 show_default=True, envvar="KIT_IMAGES_FILE", help="Image definitions. Env: KIT_IMAGES_FILE."),
    click.option("--lock-file", type=click.Path(path_type=Path), default="containers/images.lock.json",
                 show_default=True, envvar="KIT_IMAGES_LOCK", help="Lock of built images. Env: KIT_IMAGES_LOCK."),
]
out_option = click.option("--out", "out_dir", type=click.Path(path_type=Path), default="build/images",
                          show_default=True, envvar="KIT_IMAGES_DIR", help="Folder of SIF/sqsh artifacts. Env: KIT_IMAGES_DIR.")
names_arg = click.argument("names", nargs=-1, required=True, metavar="NAME...")


def with_files(f):
    """Add --images-file and --lock-file."""
    for opt in reversed(files_options):
        f = opt(f)
    return f


def _built(names, images_file: Path, lock_file: Path):
    from kit.images import spec
    from kit.images.lockfile import load_lock

    lock = load_lock(lock_file)
    for name in names:
        spec.target(name, None, images_file)  # unknown names fail as bad input first
        built = lock.get(name, lock_file)
        yield spec.target(name, built.variant, images_file), built


@click.group()
def images() -> None:
    """Build, convert, verify and lint the backend images (containers/images.toml).

    \b
    make locks / make image-NAME / make sif-NAME / make sqsh-NAME call these commands.
    """


@images.command("locks")
@click.argument("names", nargs=-1, metavar="[NAME...]")
@click.option("--upgrade", is_flag=True, help="Re-resolve every pin instead of keeping the current ones.")
@with_files
def locks_cmd(names, upgrade, images_file, lock_file) -> None:
    """Regenerate the hashed lock files (uv pip compile --generate-hashes)."""
    from kit.images.locks import lock_jobs, run_jobs
    from kit.images.spec import repo_root

    run_jobs(lock_jobs(images_file, list(names) or None, upgrade=upgrade), repo_root(images_file), C.say)
    click.echo("locks written")


@images.command("build")
@names_arg
@click.option("--variant", default=None, help="A variant from images.toml (e.g. cpu).")
@click.option("--base", default=None, help="BASE_IMAGE override, e.g. kit/base:bookworm (make base-image).")
@click.option("--wheelhouse", type=click.Path(path_type=Path), default=None,
              help="Fill this folder with the locks' files (pip download) and build offline from it.")
@click.option("--ca-bundle", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="PEM bundle pip trusts during the build (TLS-intercepting proxy); absent from the image.")
@click.option("--no-cache", is_flag=True, help="Do not reuse cached build steps.")
@click.option("--quiet", is_flag=True, help="Print build steps only, not their output.")
@with_files
def build_cmd(names, variant, base, wheelhouse, ca_bundle, no_cache, quiet, images_file, lock_file) -> None:
    """Build images with the docker SDK and record them in the lock of built images."""
    from kit.images import spec
    from kit.images.build import BuildOptions, build

    targets = [spec.target(n, variant, images_file) for n in names]
    opts = BuildOptions(ca_bundle=ca_bundle, wheelhouse=wheelhouse, base=base, no_cache=no_cache, quiet=quiet)
    for t in targets:
        r = build(t, opts, lock_file)
        click.echo(f"{t.name}\t{r.tag}\t{r.image_id}")


@images.command("convert")
@names_arg
@click.option("--to", "to", default="all", show_default=True, type=click.Choice(["sif", "sqsh", "all"]),
              help="Artifact form.")
@click.option("--force", is_flag=True, help="Convert again even when the recorded artifact of this image is in place.")
@out_option
@with_files
def convert_cmd(names, to, force, out_dir, images_file, lock_file) -> None:
    """Convert built images to SIF (Apptainer) and/or sqsh (Enroot); record their sha256.

    An artifact already made from the same image id, found in the folder with its recorded sha256,
    is kept (say so with --force to convert anyway).
    """
    from kit.images.convert import convert, forms_of

    for _, built in list(_built(names, images_file, lock_file)):
        for form, art in convert(built, forms_of(to), out_dir, lock_file, force=force).items():
            click.echo(f"{built.backend}\t{form}\t{out_dir / art.file}\t{art.sha256}")


@images.command("save")
@names_arg
@out_option
@with_files
def save_cmd(names, out_dir, images_file, lock_file) -> None:
    """Write built images as docker archives (docker load -i FILE on a host with no registry)."""
    from kit.images.convert import convert

    for _, built in list(_built(names, images_file, lock_file)):
        art = convert(built, ("tar",), out_dir, lock_file)["tar"]
        click.echo(f"{built.backend}\ttar\t{out_dir / art.file}\t{art.sha256}")


@images.command("verify")
@names_arg
@out_option
@with_files
@C.json_option
def verify_cmd(names, out_dir, images_file, lock_file, as_json) -> None:
    """Prove the SIF and sqsh hold the image's files; print every differing path."""
    from kit.images.verify import verify

    data, failed = [], False
    for _, built in list(_built(names, images_file, lock_file)):
        for r in verify(built, out_dir, progress=C.say):
            failed |= bool(r.differences)
            data.append({"image": built.backend, "form": r.form, "file": r.file, "entries": r.entries,
                         "differences": [d.path for d in r.differences], "ignored": dict(r.ignored)})
            if not as_json:
                verdict = "SAME" if not r.differences else f"DIFFERENT ({len(r.differences)} paths)"
                click.echo(f"{built.backend} {r.form}: {verdict}; {r.entries} entries, "
                           f"{sum(r.ignored.values())} runtime-metadata paths ignored")
                for reason, n in sorted(r.ignored.items()):
                    click.echo(f"  ignored {n:3d}: {reason}")
                for d in r.differences:
                    click.echo(f"  differs: /{d.path}: image {d.left.describe() if d.left else 'absent'}"
                               f" | {r.form} {d.right.describe() if d.right else 'absent'}")
    if as_json:
        C.print_json("images verify", "failed" if failed else "ok", data)
    sys.exit(1 if failed else 0)


@images.command("lint")
@names_arg
@with_files
@C.json_option
def lint_cmd(names, images_file, lock_file, as_json) -> None:
    """Check built images: GPU variables, no `native` CUDA arch, kit importable, entry point."""
    from kit.images.lint import lint

    data, failed = [], False
    for t, built in list(_built(names, images_file, lock_file)):
        for f in lint(t, built):
            failed |= not f.ok
            data.append({"image": t.name, "check": f.check, "ok": f.ok, "detail": f.detail})
            if not as_json:
                click.echo(f"{'PASS' if f.ok else 'FAIL'}  {t.name:18} {f.check:16} {f.detail}")
    if as_json:
        C.print_json("images lint", "failed" if failed else "ok", data)
    sys.exit(1 if failed else 0)


@images.command("defs")
@click.option("--check", is_flag=True, help="Fail if a definition file differs from its regeneration.")
@with_files
def defs_cmd(check, images_file, lock_file) -> None:
    """Regenerate apptainer/<NAME>.def from each Dockerfile (spython plus kit's fixes)."""
    from kit.images import spec
    from kit.images.apptainer_def import def_path, render

    stale = []
    for t in spec.all_targets(images_file):
        if t.variant:
            continue
        path, text = def_path(t), render(t)
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            click.echo(f"wrote {path}")
    if stale:
        click.echo(f"stale: {', '.join(stale)} (run: kit images defs)", err=True)
        sys.exit(1)
