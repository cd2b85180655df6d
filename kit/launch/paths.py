"""Resolve site paths: relative paths of a local-frontend site are relative to sites.toml.

`SitePaths` resolves every folder of a site once; the launcher reads its job scripts, plan files,
shard sidecars and logs from it instead of composing them where they are used."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kit.config.loading import path_from
from kit.config.sites import Site


def site_path(site: Site, value: str, sites_dir: Path) -> Path:
    """An absolute path for a local site; remote paths are returned as written (resolved on the cluster)."""
    if site.is_remote:
        return Path(value).expanduser()
    return path_from(sites_dir, value).resolve()


@dataclass(frozen=True)
class SitePaths:
    """A site's folders as its jobs see them (on the cluster for a remote site)."""

    root: Path          # kit's working folder: jobs/, plans/, logs/
    results: Path       # the results tree the jobs write
    scratch: Path       # node-local caches
    images: Path        # SIF / sqsh artifacts
    weights: Path | None  # the staged Hugging Face cache, when the site has one

    @property
    def jobs(self) -> Path:
        """Job scripts and their shard sidecars."""
        return self.root / "jobs"

    @property
    def logs(self) -> Path:
        """The scheduler's stdout/stderr files."""
        return self.root / "logs"

    def plan_file(self, digest: str) -> Path:
        """Where the jobs of a plan read its pair list."""
        return self.root / "plans" / f"plan-{digest}.json"

    def script(self, job: str) -> Path:
        """A job's script."""
        return self.jobs / f"{job}.sh"

    def shards_file(self, job: str) -> Path:
        """A job's shard sidecar, beside its script: which shard each array task runs."""
        return self.jobs / f"{job}.json"


def site_paths(site: Site, sites_dir: Path) -> SitePaths:
    """Every folder of a site, resolved once (relative ones against the sites.toml folder, locally)."""
    weights = site_path(site, site.weights, sites_dir) if site.weights else None
    return SitePaths(site_path(site, site.root, sites_dir), site_path(site, site.results, sites_dir),
                     site_path(site, site.scratch, sites_dir), site_path(site, site.images, sites_dir), weights)
