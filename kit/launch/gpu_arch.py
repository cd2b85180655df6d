"""The GPUs a job may land on, held to the GPUs its image can run on (kit.gpus).

An image's CUDA code runs on some compute capabilities only (the torch images: Turing, 7.5, and
newer; gguf: Volta, 7.0, and newer). Per job, at its site:
- OAR: the site's GPU filter gains the term that selects those GPUs (Grid'5000's properties
  gpu_compute_capability and gpu_compute_capability_major), unless the filter already guarantees it;
- Slurm with `gpu_features` (node feature -> the GPUs of the nodes that have it): `--constraint`
  asks for the features whose GPUs run the image, joined to the site's own constraint;
- a site that states its GPUs (`gpu_model`, `gpu_compute_capability`, the GPUs of `gpu_features`)
  none of which runs the image is refused before anything is submitted, with the fix; one whose
  GPUs are only partly fit, with nothing kit can ask the scheduler, gets a warning, and so does a
  site that states nothing while the image leaves out GPUs clusters still have (Volta)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kit.config.sites import Site
from kit.errors import ConfigError
from kit.gpus import KNOWN, Capability, GpuArchs, cc_text, oar_capability_term
from kit.launch.jobsize import conjunction_text

_MAJOR_FLOOR = re.compile(r"\bgpu_compute_capability_major\s*(>=|>|=)\s*(\d+)(?![\d.])")
VOLTA = (7, 0)


@dataclass(frozen=True)
class ArchFit:
    """How a job's GPUs were held to its image: what the image runs on, the request's narrowed OAR
    filter or Slurm constraint (None: the site's), what kit asked, and a warning when kit could not
    make sure."""

    runs_on: str = ""          # "compute capability 7.5 and newer" ("" for a CPU image or a CPU job)
    asked: str = ""            # what the request gained, or why it needed nothing
    warning: str | None = None
    gpu_filter: str | None = None
    constraint: str | None = None

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"image_runs_on": self.runs_on or None, "request": self.asked or None}


def fit_image_gpus(site: Site, backend: str, archs: GpuArchs | None, gpus: int) -> ArchFit:
    """A job's GPU request at `site` narrowed to the GPUs `archs` runs on, and how (see the module doc);
    a ConfigError when none of the GPUs the site states can run it."""
    if archs is None or gpus <= 0:
        return ArchFit()
    runs_on = archs.describe()
    stated = site.stated_gpus()
    able = {name: cc for name, cc in stated.items() if archs.runs_on(cc)}
    if stated and not able:
        raise ConfigError(
            f"site {site.name}'s GPUs ({_listing(stated)}) cannot run image {backend}, built for {runs_on}: "
            "its CUDA code would fail to start there",
            fix=f"run {backend} at a site with newer GPUs, or a backend whose image these GPUs run (gguf's CUDA "
                "12.8 build runs on Volta and newer); if the GPUs are stated wrongly, correct gpu_model, "
                "gpu_compute_capability or gpu_features in sites.toml")
    if site.scheduler == "oar":
        return _oar(site, archs, runs_on)
    if site.scheduler == "slurm" and site.gpu_features:
        return _slurm_features(site, archs, runs_on)
    unfit = {name: cc for name, cc in stated.items() if name not in able}
    if unfit:
        return ArchFit(runs_on, "nothing (the scheduler cannot be told)",
                       f"site {site.name}: its GPUs {_listing(unfit)} cannot run image {backend} (built for "
                       f"{runs_on}), and kit cannot ask the scheduler to avoid them; fix: state gpu_features "
                       "(node feature -> GPU) so kit asks for the others with --constraint")
    if stated:
        return ArchFit(runs_on, f"nothing: the site's GPUs ({_listing(stated)}) run it")
    if archs.runs_on(VOLTA):
        return ArchFit(runs_on, "nothing: the site states no GPU model, and the image runs on every GPU from "
                                "Volta on")
    return ArchFit(runs_on, "nothing: the site states no GPU model",
                   f"site {site.name} states no GPU model, and image {backend} runs on {runs_on} only (not on a "
                   "V100): kit cannot check that the site's GPUs run it; fix: set gpu_model (or "
                   "gpu_compute_capability, or gpu_features) in its sites.toml entry")


def _listing(stated: dict[str, Capability]) -> str:
    return ", ".join(f"{name} ({cc_text(cc)})" if name != cc_text(cc) else name for name, cc in stated.items())


def _oar(site: Site, archs: GpuArchs, runs_on: str) -> ArchFit:
    """The OAR filter with the image's capability term, unless it already selects only such GPUs."""
    term = oar_capability_term(archs)
    if site.gpu_filter and filter_guarantees(site.gpu_filter, archs):
        return ArchFit(runs_on, f"nothing: gpu_filter {site.gpu_filter!r} already selects only such GPUs")
    new = term if not site.gpu_filter else (
        f"{site.gpu_filter} AND {term}" if conjunction_text(site.gpu_filter) is not None
        else f"({site.gpu_filter}) AND {term}")
    return ArchFit(runs_on, f"-p gained {term}", gpu_filter=new)


def filter_guarantees(gpu_filter: str, archs: GpuArchs) -> bool:
    """Whether an OAR filter (a plain conjunction) selects only GPUs that run `archs`: one of its terms
    bounds gpu_compute_capability_major from below at a major all of whose GPUs run it."""
    bare = conjunction_text(gpu_filter)
    if bare is None:
        return False
    for op, value in _MAJOR_FLOOR.findall(bare):
        floor = int(value) + (op == ">")
        selected = [cc for cc in KNOWN if (cc[0] == int(value) if op == "=" else cc[0] >= floor)]
        if selected and all(archs.runs_on(cc) for cc in selected):
            return True
    return False


def _slurm_features(site: Site, archs: GpuArchs, runs_on: str) -> ArchFit:
    """--constraint for the site's features whose GPUs run the image (all of them: nothing to ask)."""
    features = site.feature_capabilities()
    able = [f for f, cc in features.items() if archs.runs_on(cc)]
    if len(able) == len(features):
        return ArchFit(runs_on, "nothing: every GPU of gpu_features runs it")
    wanted = "|".join(able)
    expression = f"({site.constraint})&({wanted})" if site.constraint else (f"({wanted})" if len(able) > 1 else wanted)
    return ArchFit(runs_on, f"--constraint={expression}", constraint=expression)
