"""Images end to end on the real engine: the CPU variant of transformers-5.17 built from its real
Dockerfile (offline, from a cached wheelhouse), converted to SIF (Apptainer 1.4 in the helper
image) and sqsh, verified content-equal, linted, and a tiny-model shard run in all three forms
with the image facts the launcher passes. One built image per session.

Measured on 2 cores (cold image cache; ranges: idle to loaded machine): build 100-170 s, SIF
110-290 s (gzip), sqsh 11-17 s each, verify 22-45 s, three shards 20-60 s, CA-bundle probe
15 s, Apptainer definition build 50-110 s, docker archive ~25 s; about 6 min in all when idle.
Needs root on Debian with Docker; the session runs scripts/images/tools.sh first (squashfs
tools, bases, helper image). The step times are printed in the terminal summary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from timings import StepTimes

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
NAME, VARIANT = "transformers-5.17", "cpu"
WHEELHOUSE = Path(os.environ.get("KIT_WHEELHOUSE") or Path.home() / ".cache" / "kit" / "wheelhouse")
TIMES = StepTimes("images")
timed = TIMES.timed


def kit(*args: str, env: dict | None = None, check: bool = True, timeout: float = 1800) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "kit", *args], cwd=REPO, capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, **(env or {})})
    if check and r.returncode != 0:
        pytest.fail(f"kit {' '.join(args)} exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}", pytrace=False)
    return r


@pytest.fixture(scope="session")
def work(request) -> Path:
    """A session folder under /var/tmp (world-traversable: the containers run as uid 1000)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: dockerd, the squashfs tools, unshare and chroot")
    if not Path("/etc/debian_version").is_file():
        pytest.skip("needs Debian: scripts/images/tools.sh installs Debian packages")
    r = timed("tools", subprocess.run, ["bash", str(REPO / "scripts/images/tools.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"scripts/images/tools.sh failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}", pytrace=False)
    path = Path(tempfile.mkdtemp(prefix="kit-images-test-", dir="/var/tmp"))
    os.chmod(path, 0o755)

    request.addfinalizer(lambda: shutil.rmtree(path, ignore_errors=True))
    TIMES.report_at_end(request.config)
    return path


@pytest.fixture(scope="session")
def lock_env(work, cpu_image_env) -> dict[str, str]:
    """The session's lock of built images (tests/conftest.py): one build and one conversion per session,
    shared with the REPRODUCE.md and Slurm docker-runtime tests."""
    return cpu_image_env


@pytest.fixture(scope="session")
def built(work, lock_env):
    """The CPU variant, built offline from the wheelhouse, as recorded in the session's lock."""
    from kit.images.built import load_lock

    timed("build", kit, "images", "build", NAME, "--variant", VARIANT, "--wheelhouse", str(WHEELHOUSE), "--quiet",
          env=lock_env)
    return load_lock(Path(lock_env["KIT_IMAGES_LOCK"])).get(NAME)


@pytest.fixture(scope="session")
def converted(built, lock_env):
    from kit.images.built import load_lock

    t0 = time.monotonic()
    kit("images", "convert", NAME, "--to", "sif", env=lock_env)
    TIMES.since("sif", t0)
    timed("sqsh", kit, "images", "convert", NAME, "--to", "sqsh", env=lock_env)
    return load_lock(Path(lock_env["KIT_IMAGES_LOCK"])).get(NAME)


def test_build_is_recorded_with_its_inputs(built):
    from kit.images import engine, spec

    t = spec.target(NAME, VARIANT, REPO / "containers/images.toml")
    assert built.image_id == engine.image_attrs(t.tag)["Id"]
    assert built.lock_sha256 == t.lock_sha256() and built.dockerfile_sha256 == t.dockerfile_sha256()
    assert built.build_args == {"TORCH_VARIANT": "cpu"} and built.base == "kit/base:bookworm"
    assert built.base_image_id and built.offline and built.variant == "cpu" and built.built_at
    assert built.kit_commit and built.kit_commit != "unknown"


def test_the_worker_answers_in_its_image_and_the_container_is_removed(built, demo):
    from containers import container_exists, exec_in, image_container

    roster, _, cache = demo
    with image_container(built.tag, volumes=[(str(roster.parent), str(roster.parent), "ro"),
                                             (str(cache), str(cache), "ro")], env={"HF_HUB_OFFLINE": "1"}) as box:
        cid = box.get_wrapped_container().id
        assert exec_in(box, ["kit", "--version"]) == (0, "kit, version 0.1.0\n")
        code, out = exec_in(box, ["python", "-c", "import transformers; print(transformers.__version__)"])
        assert code == 0 and out.strip() == "5.17.0", out   # the pin of this image's lock, not the host's
        code, out = exec_in(box, ["kit", "plan", "--roster", str(roster), "--json"])
        assert code == 0 and json.loads(out)["status"] == "ok", out
    assert not container_exists(cid)


def test_lint_passes(built, lock_env):
    r = timed("lint", kit, "images", "lint", NAME, "--json", env=lock_env)
    checks = {c["check"]: c for c in json.loads(r.stdout)["data"]}
    assert set(checks) >= {"gpu-env", "cuda-arch", "kit-import", "entry-point", "kit-commit", "lock", "engine",
                           "libraries", "torch-cuda", "cuda-runtime"}
    assert all(c["ok"] and c["state"] == "PASS" for c in checks.values()), checks   # a CPU image needs no driver


def test_sif_and_sqsh_are_content_equal_to_the_image(converted, lock_env):
    r = timed("verify", kit, "images", "verify", NAME, env=lock_env)
    assert "sif: SAME" in r.stdout and "sqsh: SAME" in r.stdout, r.stdout
    assert converted.artifacts["sif"].image_id == converted.image_id == converted.artifacts["sqsh"].image_id


def test_converting_again_keeps_the_recorded_artifacts(converted, lock_env):
    r = kit("images", "convert", NAME, "--to", "all", env=lock_env)
    assert r.stderr.count("is up to date") == 2, r.stderr
    from kit.images.built import load_lock

    again = load_lock(Path(lock_env["KIT_IMAGES_LOCK"])).get(NAME)
    assert again.artifacts == converted.artifacts   # same files, same sha256, same made_at: nothing was redone


def test_two_sqsh_conversions_are_byte_identical(converted, lock_env, work):
    first = Path(lock_env["KIT_IMAGES_DIR"]) / converted.artifacts["sqsh"].file
    lock2 = work / "again.lock.json"
    shutil.copy(lock_env["KIT_IMAGES_LOCK"], lock2)
    kit("images", "convert", NAME, "--to", "sqsh", "--out", str(work / "again"), "--lock-file", str(lock2))
    second = work / "again" / first.name
    assert second.read_bytes() == first.read_bytes()


def test_verify_names_a_tampered_file(converted, lock_env, work):
    from kit.files import file_sha256
    from kit.images.built import load_lock, save_lock

    folder, lock2 = work / "tampered", work / "tampered.lock.json"
    folder.mkdir()
    images = Path(lock_env["KIT_IMAGES_DIR"])
    sif, sqsh = converted.artifacts["sif"].file, converted.artifacts["sqsh"].file
    (folder / sif).symlink_to(images / sif)
    shutil.copy(images / sqsh, folder / sqsh)
    extra = work / "extra"
    extra.mkdir()
    (extra / "kit-tampered.txt").write_text("not in the image\n")
    subprocess.run(["mksquashfs", str(extra), str(folder / sqsh), "-quiet", "-no-progress"], check=True)
    shutil.copy(lock_env["KIT_IMAGES_LOCK"], lock2)
    r = kit("images", "verify", NAME, "--out", str(folder), "--lock-file", str(lock2), check=False)
    assert r.returncode == 1 and "sha256 differs" in r.stderr  # a changed file is caught by its digest first
    lock = load_lock(lock2)
    lock.images[NAME].artifacts["sqsh"].sha256 = file_sha256(folder / sqsh)
    save_lock(lock, lock2)
    r = kit("images", "verify", NAME, "--out", str(folder), "--lock-file", str(lock2), check=False)
    assert r.returncode == 1 and "sif: SAME" in r.stdout
    assert "sqsh: DIFFERENT (1 paths)" in r.stdout and "differs: /kit-tampered.txt" in r.stdout


def test_sif_reader_agrees_with_apptainer(converted, lock_env):
    from kit.images import helper
    from kit.images.sif import primary_partition

    sif = Path(lock_env["KIT_IMAGES_DIR"]) / converted.artifacts["sif"].file
    r = helper.run(["apptainer", "sif", "list", f"/w/{sif.name}"], [helper.Mount(str(sif.parent), "/w")])
    line = next(x for x in r.stdout.splitlines() if "FS (Squashfs/*System" in x)
    start, end = (int(n) for n in line.split("|")[3].strip().split("-"))
    part = primary_partition(sif)
    assert (part.offset, part.offset + part.size) == (start, end)


@pytest.fixture(scope="session")
def demo(work) -> tuple[Path, Path, Path]:
    """Tiny models in a hub cache, the tiny benchmark and the demo roster (readable by uid 1000)."""
    from kit.demo.run import prepare_demo

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KIT_CACHE_DIR", str(work / "cache"))
        files = prepare_demo(work / "demo")
    subprocess.run(["chmod", "-R", "a+rX", str(work / "demo"), str(files.cache)], check=True)
    return files.roster, files.hub, files.cache


@pytest.fixture(scope="session")
def shards(converted, demo, lock_env, work) -> dict[str, tuple[Path, object]]:
    """One shard per artifact form, with the image facts kit.launch.siteplan passes to a job."""
    from kit.config.sites import Site
    from kit.images import execute
    from kit.launch.site import resolve_site
    from kit.launch.siteplan import resolve_image

    roster, hub, cache = demo
    out = {}
    for form, runtime in (("oci", "docker"), ("sif", "apptainer"), ("sqsh", "enroot")):
        site = Site(name="ci", scheduler="local", runtime=runtime, images=lock_env["KIT_IMAGES_DIR"])
        chosen = resolve_image(resolve_site(site, work), NAME, Path(lock_env["KIT_IMAGES_LOCK"]))
        image, image_env = chosen.ref, chosen.env
        results = work / f"results-{form}"
        results.mkdir()
        os.chmod(results, 0o777)
        env = {**image_env, "KIT_RUNTIME": runtime, "KIT_SITE": "ci", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        argv = ["kit", "shard", "--roster", str(roster), "--results", str(results), "--cache-dir", str(hub)]
        binds = [str(roster.parent), str(cache), str(results)]
        run = {"oci": execute.run_oci, "sif": execute.run_sif, "sqsh": execute.run_sqsh}[form]
        outcome = timed(f"shard-{form}", run, image if form == "oci" else Path(image), argv, binds, env)
        assert outcome.status == 0, f"{form}: {outcome.stdout[-1500:]}\n{outcome.stderr[-3000:]}"
        out[form] = (results, outcome)
    return out


def test_shards_in_all_three_forms_write_identical_predictions(shards, converted):
    sets = {}
    for form, (results, _) in shards.items():
        files = sorted(p for p in results.glob("*/*.json") if p.parent.name != "systems")
        assert len(files) == 6, form
        sets[form] = {p.relative_to(results).as_posix(): json.loads(p.read_text()) for p in files}
    assert sets["oci"].keys() == sets["sif"].keys() == sets["sqsh"].keys()
    for rel in sets["oci"]:
        preds = [sets[f][rel]["predictions"] for f in ("oci", "sif", "sqsh")]
        assert preds[0] == preds[1] == preds[2], rel


def test_checkpoints_name_the_image_they_ran_in(shards, converted):
    for form, (results, _) in shards.items():
        for p in results.glob("*/*.json"):
            if p.parent.name == "systems":
                continue
            prov = json.loads(p.read_text())["provenance"]
            assert prov["image"]["digest"] == converted.image_id, (form, p)
            assert prov["image"]["artifact"] == form and prov["image"]["lock_sha256"] == converted.lock_sha256
            if form != "oci":
                assert prov["image"]["artifact_sha256"] == converted.artifacts[form].sha256
            assert prov["kit_commit"] == converted.kit_commit  # baked into kit/_commit.txt in the image
            assert prov["packages"]["torch"].endswith("+cpu") and prov["packages"]["transformers"] == "5.17.0"
        r = kit("verify", str(results), check=False)
        assert r.returncode == 0, (form, r.stdout, r.stderr)


def _cert_blocks(text: str) -> set[str]:
    return {"-----BEGIN CERTIFICATE-----" + b.split("-----END CERTIFICATE-----")[0]
            for b in text.split("-----BEGIN CERTIFICATE-----")[1:]}


def test_ca_bundle_reaches_pip_and_never_the_image(work, built, lock_env):
    """A networked build of the real Dockerfile (with a small lock: kit's own dependencies) whose
    pip trusts only the given bundle; the bundle's proxy and marker certificates appear in no
    layer, nor in the config or history, of the final image."""
    from kit.images import engine, spec
    from kit.images.build import BuildOptions, build
    from kit.images.compile_locks import uv_command

    host_bundle = Path("/etc/ssl/certs/ca-certificates.crt")
    repo = work / "ca-probe"
    for rel in ("pyproject.toml", "README.md", "containers/transformers-5.17/Dockerfile"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, repo / rel)
    shutil.copytree(REPO / "kit", repo / "kit", ignore=shutil.ignore_patterns("__pycache__", "_commit.txt"))
    (repo / "containers/images.toml").write_text(
        '[image."transformers-5.17"]\ndockerfile = "containers/transformers-5.17/Dockerfile"\n'
        'lock = "containers/transformers-5.17/requirements-cpu.lock"\nbase = "kit/base:bookworm"\n'
        'tag = "kit/ca-probe:test"\nbuild_args = { TORCH_VARIANT = "cpu" }\n')
    (repo / "small.in").write_text("setuptools>=68\n")
    r = subprocess.run([*uv_command(), "pip", "compile", "pyproject.toml", "small.in", "--generate-hashes",
                        "--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28", "-q",
                        "-o", "containers/transformers-5.17/requirements-cpu.lock"], cwd=repo, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"PyPI is not reachable from here: {r.stderr.strip()[-200:]}")
    marker = work / "marker.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kit-ca-probe", "-days",
                    "1", "-keyout", str(work / "marker.key"), "-out", str(marker)], check=True, capture_output=True)
    bundle = work / "bundle.pem"
    bundle.write_text(host_bundle.read_text() + marker.read_text())
    # the machine's own CAs (a TLS-intercepting proxy's) are the local additions to Debian's bundle
    local = {b for f in Path("/usr/local/share/ca-certificates").rglob("*.crt") for b in _cert_blocks(f.read_text())}
    secret = _cert_blocks(marker.read_text()) | local
    t = spec.target(NAME, None, repo / "containers/images.toml")
    lock = work / "ca.lock.json"
    try:
        if local:
            # behind a TLS-intercepting proxy: pip fails without the bundle, so it is really used. The
            # probe's own lock makes pip's step run anyway; --no-cache would also remake the shared
            # first steps, and Docker's cache would then lead the next builds down those new layers.
            with pytest.raises(Exception) as exc:
                build(t, BuildOptions(quiet=True), lock)
            assert "failed" in str(exc.value)
        probe = timed("ca-probe-build", build, t, BuildOptions(ca_bundle=bundle, quiet=True), lock)
        assert probe.ca_bundle and not probe.offline
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            archive = engine.save(probe.image_id, Path(tmp) / "probe.tar")
            data = archive.read_bytes()
        lines = {ln for block in secret for ln in block.splitlines()[1:] if len(ln) >= 40}
        assert lines and not [ln for ln in lines if ln.encode() in data], "a CA certificate line is in the image"
        meta = json.dumps(engine.image_attrs(probe.image_id)) + json.dumps(engine.client().api.history(probe.image_id))
        assert "BEGIN CERTIFICATE" not in meta and not [ln for ln in lines if ln in meta]
        from containers import exec_in, image_container

        with image_container(probe.image_id) as box:
            assert exec_in(box, ["kit", "--version"])[0] == 0
    finally:
        subprocess.run(["docker", "rmi", "-f", "kit/ca-probe:test"], capture_output=True)
    # dropping the probe's build stages left the other images' build cache alone: the session's
    # image rebuilds to the very same id (it once rebuilt from scratch, a new id and new conversions)
    again = kit("images", "build", NAME, "--variant", VARIANT, "--wheelhouse", str(WHEELHOUSE), "--quiet", "--json",
                env=lock_env)
    assert json.loads(again.stdout)["data"]["built"][0]["image_id"] == built.image_id


def test_apptainer_definition_builds_offline_and_runs(built, work):
    """apptainer/transformers-5.17.def, built by Apptainer itself (CPU variant, the bootstrapped
    base as a docker-archive, pip's wheelhouse lent through --bind FOLDER:/mnt)."""
    from kit.images import engine, execute, helper, spec, wheelhouse

    folder = work / "defbuild"
    (folder / "inputs" / "wheels").mkdir(parents=True)
    engine.save("kit/base:bookworm", folder / "base.tar")
    t = spec.target(NAME, VARIANT, REPO / "containers/images.toml")
    for f in wheelhouse.select(t, WHEELHOUSE):
        shutil.copy(f, folder / "inputs" / "wheels" / f.name)
    argv = ["apptainer", "build", "--build-arg", "BOOTSTRAP=docker-archive", "--build-arg", "BASE_IMAGE=/w/base.tar",
            "--build-arg", "TORCH_VARIANT=cpu", "--build-arg", "KIT_COMMIT=from-def", "--bind", "/w/inputs:/mnt",
            "--mksquashfs-args", "-comp zstd -Xcompression-level 3", "/w/def.sif", f"apptainer/{NAME}.def"]
    r = timed("def-build", helper.run, argv, [helper.Mount(str(REPO), "/repo"), helper.Mount(str(folder), "/w", False)],
              unconfined=True, workdir="/repo")
    assert r.status == 0, r.stderr[-3000:]
    probe = "kit --version; cat /opt/venv/lib/python3.11/site-packages/kit/_commit.txt; ls /opt"
    out = execute.run_sif(folder / "def.sif", ["sh", "-c", probe], [], {})
    assert out.status == 0 and out.stdout.split() == ["kit,", "version", "0.1.0", "from-def", "venv"], out


def test_saved_archive_loads_as_the_recorded_image(converted, lock_env, work):
    from kit.files import file_sha256
    from kit.images import engine
    from kit.images.built import load_lock

    lock2 = work / "save.lock.json"
    shutil.copy(lock_env["KIT_IMAGES_LOCK"], lock2)
    kit("images", "save", NAME, "--out", str(work / "saved"), "--lock-file", str(lock2))
    art = load_lock(lock2).get(NAME).artifacts["tar"]
    path = work / "saved" / art.file
    assert file_sha256(path) == art.sha256 and art.image_id == converted.image_id
    r = subprocess.run(["docker", "load", "-i", str(path)], capture_output=True, text=True)
    assert r.returncode == 0 and f"Loaded image: {converted.tag}" in r.stdout, r.stdout + r.stderr
    assert engine.image_attrs(converted.tag)["Id"] == converted.image_id


def test_run_preflight_asks_the_docker_engine_for_the_recorded_image_id(built, lock_env, work):
    """A docker-runtime site: the image the jobs run must be in the engine of the host that runs them
    (this one, a local site) with the lock's id; another build under the tag, or no such tag, is missing."""
    from kit.config.sites import Site
    from kit.images.built import load_lock
    from kit.launch.images_check import check_site_images
    from kit.launch.site import resolve_site

    lock = load_lock(Path(lock_env["KIT_IMAGES_LOCK"]))
    site = resolve_site(Site(name="ci", scheduler="local", runtime="docker"), work)
    (ok,) = check_site_images(site, {NAME: built.tag}, lock, dry_run=False)
    assert (ok.state, ok.detail) == ("ok", f"{built.tag} is image {built.image_id[:19]}")
    other = lock.model_copy(deep=True)
    other.images[NAME].image_id = "sha256:" + "9" * 64
    (stale,) = check_site_images(site, {NAME: built.tag}, other, dry_run=False)
    assert stale.state == "missing" and "another build under that tag" in stale.detail
    (gone,) = check_site_images(site, {NAME: "kit/no-such-image:never"}, lock, dry_run=False)
    assert gone.state == "missing" and "is not in the docker engine of local" in gone.detail


def test_the_sif_is_traced_to_its_lock_by_its_attestations(converted, lock_env):
    """kit images build and convert wrote SLSA provenance statements: the SIF's names its sha256 and the
    image, the build's names the image and the lock file and Dockerfile the lock records."""
    from kit.images.attest import artifact_attestation_path, build_attestation_path, trace_artifact

    lock = Path(lock_env["KIT_IMAGES_LOCK"])
    sif = Path(lock_env["KIT_IMAGES_DIR"]) / converted.artifacts["sif"].file
    assert artifact_attestation_path(sif).is_file() and build_attestation_path(lock, NAME).is_file()
    trace = trace_artifact(sif, converted, lock)
    assert trace.broken == () and trace.missing is None, trace
    assert sum("as the lock records" in line for line in trace.held) == 2 and len(trace.held) == 5
