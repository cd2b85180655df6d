"""`kit images`: build, convert, verify and lint the backend images (containers/images.toml), and
put their SIF/sqsh artifacts at the sites (push, status, prune)."""

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


def with_images_file(f):
    """Add --images-file only (a command that reads no lock of built images)."""
    return files_options[0](f)


def with_files(f):
    """Add --images-file and --lock-file."""
    for opt in reversed(files_options):
        f = opt(f)
    return f


def _built(names, images_file: Path, lock_file: Path):
    """Each named image's target (at its built variant) and its entry in the lock of built images."""
    from kit.images import spec
    from kit.images.built import load_lock

    from kit.errors import ConfigError

    lock = load_lock(lock_file)
    for name in names:
        spec.target(name, None, images_file)  # unknown names fail as bad input first
        built = lock.get(name, lock_file)
        try:
            target = spec.target(name, built.variant, images_file)
        except ConfigError as exc:   # the variant is the lock's record, not an option the user gave
            raise ConfigError(f"{lock_file}: image {name!r} was recorded as variant {built.variant!r}, which "
                              f"{images_file} does not define ({exc.message})",
                              fix=f"rebuild it (kit images build {name} --variant <one images.toml defines>), or "
                                  "restore the images lock kit wrote") from None
        yield target, built


@click.group()
def images() -> None:
    """Build, convert, verify and lint the backend images (containers/images.toml); copy their
    SIF/sqsh to the sites and keep the sites' images folders tidy.

    \b
    make locks / make image-NAME / make sif-NAME / make sqsh-NAME call these commands.

    \b
    Examples:
      kit images build gguf                      make image-gguf
      kit images convert gguf --to all           its SIF and Enroot sqsh, sha256 recorded
      kit images verify gguf                     the SIF and sqsh hold the image's files
      kit images push --site lyon gguf           copy the SIF lyon's apptainer reads, checked there
      kit images status --site lyon              what lyon's images folder holds, against the lock
      kit images prune --site lyon               list what no lock entry or result needs (--yes removes)
      kit images pull me/lrb-results --form sif  a published release's SIF, checked, for kit reproduce
    """


@images.command("locks")
@click.argument("names", nargs=-1, metavar="[NAME...]")
@click.option("--upgrade", is_flag=True, help="Re-resolve every pin instead of keeping the current ones.")
@with_images_file
@common.json_option
def locks_cmd(names, upgrade, images_file, as_json) -> None:
    """Regenerate the hashed lock files (uv pip compile --generate-hashes).

    Rewrites each named image's runtime and build-stage locks, the files images.toml names (`lock`,
    `build_locks`), with every pin's sha256. It resolves pins from the package index, so it needs the
    network (or an index mirror uv is pointed at); the builds then install from the locks alone.

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
    from kit.images.built import load_lock
    from kit.images.context import check_ca_bundle

    targets = [spec.target(n, variant, images_file) for n in names]
    # what a build ends by reading is checked before it starts (a build takes minutes to an hour)
    load_lock(lock_file)
    if ca_bundle is not None:
        check_ca_bundle(ca_bundle)
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
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default="build/images", show_default=True,
              envvar="KIT_IMAGES_DIR", help="Folder the docker archives (.tar) are written to. Env: KIT_IMAGES_DIR.")
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
@click.option("--to", "to", default="recorded", show_default=True, type=click.Choice(["sif", "sqsh", "all", "recorded"]),
              help="Artifact forms to check: recorded is every one the images lock records for the image.")
@out_option
@with_files
@common.json_option
def verify_cmd(names, to, out_dir, images_file, lock_file, as_json) -> None:
    """Prove the SIF and sqsh hold the image's files; print every differing path.

    \b
    Examples:
      kit images verify gguf            sif: SAME, sqsh: SAME (or each differing path)
      kit images verify gguf --to sif   the SIF only, and refuse when it was never made
    """
    from kit.images.verify import forms_to_verify, verify

    checked = [(built.backend, r) for _, built in list(_built(names, images_file, lock_file))
               for r in verify(built, out_dir, forms_to_verify(built, to), progress=common.say)]
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
@with_images_file
@common.json_option
def defs_cmd(check, images_file, as_json) -> None:
    """Regenerate apptainer/<NAME>.def from each Dockerfile (spython plus kit's fixes).

    \b
    Examples:
      kit images defs            rewrite apptainer/*.def
      kit images defs --check    fail if one is stale (what the tests run)
    """
    from kit.images import spec
    from kit.images.apptainer_def import def_path, render as render_def

    from kit.files import write_text_atomic

    stale, written = [], []
    # every definition rendered before any is written: a Dockerfile that cannot be read leaves the others as they were
    rendered = [(def_path(t), render_def(t)) for t in spec.all_targets(images_file) if not t.variant]
    for path, text in rendered:
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(exist_ok=True)
            write_text_atomic(path, text)
            written.append(str(path))
    render(Outcome("images defs", {"check": check, "stale": stale, "written": written},
                   partial(_print_defs, written, stale), failed=bool(stale)), as_json)


def _print_defs(written: list[str], stale: list[str]) -> None:
    """The definition files written, on stdout; the stale ones, with the command that regenerates them, on stderr."""
    for path in written:
        click.echo(f"wrote {path}")
    if stale:
        click.echo(f"stale: {', '.join(stale)} (run: kit images defs)", err=True)


site_names_options = [
    click.option("--site", "site_names", multiple=True, metavar="NAME", help="The site (repeatable)."),
    click.option("--sites", "sites_csv", default=None, metavar="a,b", help="Several sites, comma-separated."),
]


def _site_names(site_names: tuple[str, ...], sites_csv: str | None) -> list[str]:
    from kit.errors import ConfigError

    names = list(dict.fromkeys([*site_names, *(common.split_names(sites_csv) or [])]))
    if not names:
        raise ConfigError("no site given", fix="pass --site NAME (or --sites a,b)")
    return names


def _roster_backends(roster: Path) -> list[str]:
    """The backends the roster's runs use, in roster order (a ConfigError when there is no roster)."""
    from kit.config.roster import load_roster
    from kit.errors import ConfigError

    chosen = common.roster_to_use(roster)
    if chosen is None:
        raise ConfigError(f"no image named and no roster at {roster} to take the runs' backends from",
                          fix="name the images (kit images push --site S gguf) or pass --roster FILE")
    return list(dict.fromkeys(run.backend for run in load_roster(chosen)[0].run))


@images.command("push")
@click.argument("names", nargs=-1, metavar="[NAME...]")
@site_names_options[0]
@site_names_options[1]
@common.sites_option
@common.roster_option
@out_option
@with_files
@click.option("--dry-run", is_flag=True, help="Say what would be copied where; connect to nothing.")
@common.json_option
def push_cmd(names, site_names, sites_csv, sites_file, roster, out_dir, images_file, lock_file, dry_run,
             as_json) -> None:
    """Copy the SIF or sqsh each site's runtime reads into the site's `images` folder.

    NAME... are images of containers/images.lock.json (default: every backend the roster's
    runs use). Through the site's frontend (its one ssh connection; nothing of kit runs there):
    a file already there with the lock's sha256 is left alone; otherwise the artifact of --out
    is streamed onto images/.kit-parts/<file> (a copy that stopped continues from its partial
    file), hashed there with sha256sum against the lock, and renamed into place last, so a file
    in the images folder is a whole, checked file. Before any byte moves, what is left to send is
    checked against the folder's free space and the user's quota there (`quota`, where the
    frontend has it: Grid'5000 homes are per-user quotas); a shortfall is refused with the
    numbers. apptainer sites get the SIF, pyxis and enroot sites the sqsh.

    \b
    Examples:
      kit images push --site lyon gguf
      kit images push --sites nancy,lyon               every backend of roster.toml's runs
      kit images push --site cluster --out /scratch/kit-images --json
    """
    from kit.images.built import load_lock
    from kit.launch.images_site import artifact_form, images_root, lock_artifact, push_command, push_images
    from kit.launch.site import load_named_sites

    from kit.images import spec

    sites = load_named_sites(sites_file, _site_names(site_names, sites_csv))
    backends = list(dict.fromkeys(names)) or _roster_backends(roster)
    if Path(images_file).is_file():  # an unknown name is bad input before any lock lookup
        for name in backends:
            spec.target(name, None, images_file)
    lock = load_lock(lock_file)
    plans = []
    for site in sites:  # every site's artifacts and folder are checked before anything is copied
        form = artifact_form(site.config)
        plans.append((site, images_root(site), [(b, lock_artifact(lock, b, form, lock_file)) for b in backends]))
    if dry_run:
        rows = [{"site": s.name, "backend": b, "file": a.file, "bytes": a.bytes, "sha256": a.sha256,
                 "from": str(out_dir / a.file), "to": f"{s.frontend.where}:{root}/{a.file}"}
                for s, root, wanted in plans for b, a in wanted]
        render(Outcome("images push", {"dry_run": True, "copies": rows},
                       (f"would copy {r['from']} ({_mb(r['bytes'])}) to {r['to']} unless there with sha256 "
                        f"{r['sha256'][:12]}" for r in rows)), as_json)
        return
    pushed = []
    for site, root, wanted in plans:
        again = push_command(site.name, [b for b, _ in wanted], sites_file=sites_file, lock_file=lock_file)
        again += "" if str(out_dir) == "build/images" else f" --out {out_dir}"
        pushed += push_images(site, wanted, out_dir, common.say, again)
    rows = [p.as_dict() for p in pushed]
    lines = [f"{r['site']}: {r['file']}: {r['state']}" + (f", {_mb(r['sent_bytes'])} sent"
                                                           + (f" (resumed at {_mb(r['resumed_bytes'])})"
                                                              if r["resumed_bytes"] else "")
                                                           + (", replaced a file with another sha256"
                                                              if r["replaced"] else "")
                                                           if r["state"] == "pushed" else "") for r in rows]
    render(Outcome("images push", {"dry_run": False, "pushed": rows}, lines), as_json)


def _mb(size: int | None) -> str:
    from kit.launch.remote_copy import size_text

    return "size unrecorded" if size is None else size_text(size)


def _site_entries(site, lock, sync: bool):
    """(images folder, what it holds, entries judged against the lock and the site's results)."""
    from kit.launch.images_site import artifact_form, image_entries, images_root, probe_images, result_image_ids

    form = artifact_form(site.config)
    root = images_root(site)
    if sync and site.is_remote:  # which results the site holds: refresh its local mirror (ssh)
        from kit.launch.remote import sync_mirror

        sync_mirror(site)
    there = probe_images(site.frontend, root)
    ids = result_image_ids(site.checkpoints) if Path(site.checkpoints).is_dir() else {}
    return root, there, image_entries(there, lock, form, ids)


@images.command("status")
@site_names_options[0]
@site_names_options[1]
@common.sites_option
@with_files
@click.option("--no-sync", is_flag=True, help="Judge against the local mirror of a remote site's results as it is.")
@common.json_option
def status_cmd(site_names, sites_csv, sites_file, images_file, lock_file, no_sync, as_json) -> None:
    """What each site's `images` folder holds, judged against the lock, and the room left there.

    Each file is current (the artifact the lock names for the site's runtime), mismatch (that
    name with another size: a half copy or another build; push replaces it), stale (another
    build of a backend the lock has), other (the other form, or a backend the lock has not),
    foreign (not named as kit names its artifacts), partial (an unfinished push), or missing
    (named by the lock, not there); with how many of the site's results ran in it. Sizes are
    compared; `kit images push` hashes.

    \b
    Examples:
      kit images status --site lyon
      kit images status --sites nancy,lyon --json
    """
    from kit.images.built import load_lock
    from kit.launch.site import load_named_sites

    lock = load_lock(lock_file)
    rows, lines = [], []
    for site in load_named_sites(sites_file, _site_names(site_names, sites_csv)):
        root, there, entries = _site_entries(site, lock, sync=not no_sync)
        rows.append({"site": site.name, "images": root, "free_bytes": there.free_bytes,
                     "quota_bytes_left": there.quota_bytes, "room": there.room_text(),
                     "entries": [e.as_dict() for e in entries]})
        lines.append(f"site {site.name}: {root} ({there.room_text()})")
        lines += [f"  {e.state:8} {e.file}  {_mb(e.bytes)}" + (f"  {e.backend}" if e.backend else "")
                  + (f"  ({e.needed_by_results} result(s) ran in it)" if e.needed_by_results else "")
                  for e in entries] or ["  (empty)"]
    render(Outcome("images status", {"sites": rows}, lines), as_json)


@images.command("prune")
@site_names_options[0]
@site_names_options[1]
@common.sites_option
@with_files
@click.option("--yes", is_flag=True, help="Remove the files listed (without it, only list them).")
@click.option("--no-sync", is_flag=True, help="Judge against the local mirror of a remote site's results as it is.")
@common.json_option
def prune_cmd(site_names, sites_csv, sites_file, images_file, lock_file, yes, no_sync, as_json) -> None:
    """List (and with --yes remove) the site's image files nothing needs.

    A file goes when it is one of kit's artifacts that no lock entry names and no checkpoint
    in the site's results ran in (a remote site's results are read from its mirror, refreshed
    first), or an unfinished push of a file the lock no longer names. Files kit did not name
    are never removed. Without --yes nothing is removed: the list is what would go.

    \b
    Examples:
      kit images prune --site lyon                 what would go, and the bytes freed
      kit images prune --site lyon --yes
    """
    from kit.images.built import load_lock
    from kit.launch.images_site import prunable, remove_images
    from kit.launch.site import load_named_sites

    lock = load_lock(lock_file)
    rows, lines = [], []
    for site in load_named_sites(sites_file, _site_names(site_names, sites_csv)):
        root, _, entries = _site_entries(site, lock, sync=not no_sync)
        going = prunable(entries, lock)
        if yes:
            remove_images(site.frontend, root, [e.file for e in going])
        freed = sum(e.bytes or 0 for e in going)
        rows.append({"site": site.name, "images": root, "removed": yes, "files": [e.as_dict() for e in going],
                     "bytes": freed})
        verb = "removed" if yes else "would remove"
        lines += [f"{site.name}: {verb} {e.file} ({e.state}, {_mb(e.bytes)})" for e in going]
        lines.append(f"{site.name}: {len(going)} file(s), {_mb(freed)} {verb.replace('would remove', 'to free')}"
                     + ("" if yes or not going else " (run again with --yes to remove them)"))
    render(Outcome("images prune", {"sites": rows}, lines), as_json)


@images.command("pull")
@click.argument("repo_id")
@click.argument("names", nargs=-1, metavar="[NAME...]")
@click.option("--form", default="sif", show_default=True, type=click.Choice(["sif", "sqsh", "tar"]),
              help="The form your runtime reads: sif (Apptainer), sqsh (Enroot), tar (docker load).")
@out_option
@click.option("--lock-file", type=click.Path(path_type=Path), default="containers/images.lock.json",
              show_default=True, envvar="KIT_IMAGES_LOCK",
              help="The images lock that records what was pulled (kit reproduce --images-lock). Env: KIT_IMAGES_LOCK.")
@click.option("--revision", default=None, help="A branch, tag or commit of the dataset repo (default: main).")
@click.option("--token-file", type=click.Path(path_type=Path), default=None, envvar="KIT_HF_TOKEN_FILE",
              help="A mode-600 file holding a Hub token, for a private repo. Env: KIT_HF_TOKEN_FILE.")
@click.option("--endpoint", default=None, envvar="HF_ENDPOINT", help="The Hub's URL (default: huggingface_hub's).")
@common.json_option
def pull_cmd(repo_id, names, form, out_dir, lock_file, revision, token_file, endpoint, as_json) -> None:
    """Download the image files a published release carries (kit publish --with-images).

    REPO is the release's dataset repo; NAME... its backends (default: every one it carries).
    Each file is checked before it is used: images/manifest.json must name it with the sha256
    the dataset card lists, the download is hashed against both (and removed when it differs),
    and a SIF or sqsh is recorded in the images lock under the image id the results name, so
    that `kit reproduce` finds it by sha256. A lock that already holds another build of that
    backend is not changed: pull into a lock of its own (--lock-file). A docker archive is
    loaded with `docker load -i FILE`.

    \b
    Examples:
      kit images pull me/lrb-results --form sif
      kit images pull me/lrb-results gguf --form sif --out ~/kit-images --lock-file pulled.lock.json
      kit reproduce checkpoints/fr/org__model.json --runtime apptainer --images ~/kit-images \\
          --images-lock pulled.lock.json
    """
    from kit.results.publish import check_repo_id
    from kit.results.release_images import pull_images

    check_repo_id(repo_id)
    token = None
    if token_file is not None:
        from kit.weights.token import read_token_file

        token = read_token_file(token_file)
    pulled = pull_images(repo_id, list(dict.fromkeys(names)), form, out_dir, lock_file, revision=revision,
                         endpoint=endpoint, token=token, say=common.say)
    rows = [p.as_dict() for p in pulled]
    render(Outcome("images pull", {"repo_id": repo_id, "form": form, "pulled": rows},
                   (f"{r['backend']}\t{r['form']}\t{r['file']}\t{r['sha256']}" for r in rows)), as_json)
