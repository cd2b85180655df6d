"""`kit images`: build, convert, verify and lint the backend images (containers/images.toml)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render

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
    """Each named image's target (at its built variant) and its entry in the lock of built images."""
    from kit.images import spec
    from kit.images.built import load_lock

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

    \b
    Examples:
      kit images build gguf                      make image-gguf
      kit images convert gguf --to all           its SIF and Enroot sqsh, sha256 recorded
      kit images verify gguf                     the SIF and sqsh hold the image's files
    """


@images.command("locks")
@click.argument("names", nargs=-1, metavar="[NAME...]")
@click.option("--upgrade", is_flag=True, help="Re-resolve every pin instead of keeping the current ones.")
@with_files
@common.json_option
def locks_cmd(names, upgrade, images_file, lock_file, as_json) -> None:
    """Regenerate the hashed lock files (uv pip compile --generate-hashes).

    \b
    Examples:
      kit images locks                     every image's locks, keeping current pins
      kit images locks vllm --upgrade      re-resolve vllm's pins
    """
    from kit.images.compile_locks import lock_jobs, run_jobs
    from kit.images.spec import repo_root

    jobs = lock_jobs(images_file, list(names) or None, upgrade=upgrade)
    run_jobs(jobs, repo_root(images_file), common.say)
    render(Outcome("images locks", {"locks": len(jobs), "upgrade": upgrade}, ["locks written"]), as_json)


@images.command("build")
@names_arg
@click.option("--variant", default=None, help="A variant from images.toml (e.g. cpu).")
@click.option("--base", default=None, help="BASE_IMAGE override, e.g. kit/base:bookworm (make base-image).")
@click.option("--wheelhouse", type=click.Path(path_type=Path), default=None,
              help="Fill this folder with the locks' files (pip download) and build offline from it.")
@click.option("--ca-bundle", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="PEM bundle pip trusts during the build (TLS-intercepting proxy); absent from the image.")
@click.option("--no-cache", is_flag=True, help="Do not reuse cached build steps.")
@click.option("--drop-build-stages", is_flag=True,
              help="Remove the build stage's images afterwards (always done with --ca-bundle). They are the "
                   "cache of the next build; a CUDA image's hold 9 to 15 GB.")
@click.option("--quiet", is_flag=True, help="Print build steps only, not their output.")
@with_files
@common.json_option
def build_cmd(names, variant, base, wheelhouse, ca_bundle, no_cache, drop_build_stages, quiet, images_file, lock_file,
              as_json) -> None:
    """Build images with the docker SDK and record them in the lock of built images.

    \b
    Examples:
      kit images build gguf                            the CUDA llama.cpp image
      kit images build transformers-5.17 --variant cpu --wheelhouse ~/.cache/kit/wheelhouse
      kit images build vllm --ca-bundle /etc/ssl/certs/ca-certificates.crt   behind a TLS proxy
    """
    from kit.images import spec
    from kit.images.build import BuildOptions, build

    targets = [spec.target(n, variant, images_file) for n in names]
    opts = BuildOptions(ca_bundle=ca_bundle, wheelhouse=wheelhouse, base=base, no_cache=no_cache, quiet=quiet,
                        drop_build_stages=drop_build_stages)
    built = []
    for t in targets:
        r = build(t, opts, lock_file)
        built.append({"image": t.name, "tag": r.tag, "image_id": r.image_id, "variant": r.variant})
    render(Outcome("images build", {"lock": str(lock_file), "built": built},
                   (f"{b['image']}\t{b['tag']}\t{b['image_id']}" for b in built)), as_json)


@images.command("convert")
@names_arg
@click.option("--to", "to", default="all", show_default=True, type=click.Choice(["sif", "sqsh", "all"]),
              help="Artifact form.")
@click.option("--force", is_flag=True, help="Convert again even when the recorded artifact of this image is in place.")
@out_option
@with_files
@common.json_option
def convert_cmd(names, to, force, out_dir, images_file, lock_file, as_json) -> None:
    """Convert built images to SIF (Apptainer) and/or sqsh (Enroot); record their sha256.

    An artifact already made from the same image id, found in the folder with its recorded sha256,
    is kept (say so with --force to convert anyway).

    \b
    Examples:
      kit images convert gguf --to all              build/images/kit-gguf-<id>.sif and .sqsh
      kit images convert vllm --to sqsh --out /lustre/me/kit-images
    """
    from kit.images.convert import convert, forms_of

    made = []
    for _, built in list(_built(names, images_file, lock_file)):
        for form, art in convert(built, forms_of(to), out_dir, lock_file, force=force).items():
            made.append({"image": built.backend, "form": form, "file": str(out_dir / art.file), "sha256": art.sha256})
    render(Outcome("images convert", {"artifacts": made},
                   (f"{m['image']}\t{m['form']}\t{m['file']}\t{m['sha256']}" for m in made)), as_json)


@images.command("save")
@names_arg
@out_option
@with_files
@common.json_option
def save_cmd(names, out_dir, images_file, lock_file, as_json) -> None:
    """Write built images as docker archives (docker load -i FILE on a host with no registry).

    \b
    Example:
      kit images save transformers-5.17 --out /media/usb     then, elsewhere: docker load -i FILE
    """
    from kit.images.convert import convert

    saved = []
    for _, built in list(_built(names, images_file, lock_file)):
        art = convert(built, ("tar",), out_dir, lock_file)["tar"]
        saved.append({"image": built.backend, "file": str(out_dir / art.file), "sha256": art.sha256})
    render(Outcome("images save", {"archives": saved},
                   (f"{s['image']}\ttar\t{s['file']}\t{s['sha256']}" for s in saved)), as_json)


@images.command("verify")
@names_arg
@out_option
@with_files
@common.json_option
def verify_cmd(names, out_dir, images_file, lock_file, as_json) -> None:
    """Prove the SIF and sqsh hold the image's files; print every differing path.

    \b
    Example:
      kit images verify gguf            sif: SAME, sqsh: SAME (or each differing path)
    """
    from kit.images.verify import verify

    checked = [(built.backend, r) for _, built in list(_built(names, images_file, lock_file))
               for r in verify(built, out_dir, progress=common.say)]
    data = [{"image": image, "form": r.form, "file": r.file, "entries": r.entries,
             "differences": [d.path for d in r.differences], "ignored": dict(r.ignored)} for image, r in checked]
    render(Outcome("images verify", data, _verify_lines(checked), failed=any(r.differences for _, r in checked)),
           as_json)


def _verify_lines(checked):
    """Each artifact's verdict, the runtime-metadata paths it ignored, and every differing path."""
    for image, r in checked:
        verdict = "SAME" if not r.differences else f"DIFFERENT ({len(r.differences)} paths)"
        yield (f"{image} {r.form}: {verdict}; {r.entries} entries, "
               f"{sum(r.ignored.values())} runtime-metadata paths ignored")
        for reason, n in sorted(r.ignored.items()):
            yield f"  ignored {n:3d}: {reason}"
        for d in r.differences:
            yield (f"  differs: /{d.path}: image {d.left.describe() if d.left else 'absent'}"
                   f" | {r.form} {d.right.describe() if d.right else 'absent'}")


@images.command("lint")
@names_arg
@with_files
@common.json_option
def lint_cmd(names, images_file, lock_file, as_json) -> None:
    """Check built images: GPU variables, no `native` CUDA arch, kit importable, entry point, every
    shared library of the Python environment resolves (the driver's own excepted), torch's CUDA,
    and the engine's compiled CUDA code as far as it loads without a GPU.

    \b
    Each check says PASS, FAIL, or NO-DRIVER: not broken, and the rest needs a GPU host's NVIDIA
    driver (lint runs where there is none). Exit 1 on any FAIL.

    \b
    Example:
      kit images lint gguf vllm --json
    """
    from kit.images.lint import lint

    data = [{"image": t.name, "check": f.check, "ok": f.ok, "state": f.state, "detail": f.detail}
            for t, built in list(_built(names, images_file, lock_file)) for f in lint(t, built)]
    lines = (f"{d['state']:9}  {d['image']:18} {d['check']:16} {d['detail']}" for d in data)
    render(Outcome("images lint", data, lines, failed=not all(d["ok"] for d in data)), as_json)


@images.command("defs")
@click.option("--check", is_flag=True, help="Fail if a definition file differs from its regeneration.")
@with_files
@common.json_option
def defs_cmd(check, images_file, lock_file, as_json) -> None:
    """Regenerate apptainer/<NAME>.def from each Dockerfile (spython plus kit's fixes).

    \b
    Examples:
      kit images defs            rewrite apptainer/*.def
      kit images defs --check    fail if one is stale (what the tests run)
    """
    from kit.images import spec
    from kit.images.apptainer_def import def_path, render as render_def

    stale, written = [], []
    for t in spec.all_targets(images_file):
        if t.variant:
            continue
        path, text = def_path(t), render_def(t)
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(str(path))
    render(Outcome("images defs", {"check": check, "stale": stale, "written": written},
                   partial(_print_defs, written, stale), failed=bool(stale)), as_json)


def _print_defs(written: list[str], stale: list[str]) -> None:
    """The definition files written, on stdout; the stale ones, with the command that regenerates them, on stderr."""
    for path in written:
        click.echo(f"wrote {path}")
    if stale:
        click.echo(f"stale: {', '.join(stale)} (run: kit images defs)", err=True)
