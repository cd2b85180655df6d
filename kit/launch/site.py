"""A site resolved once for one command: its sites.toml entry (with the run's overrides, GPU facts
included), its folders, its scheduler and frontend, and the folder kit reads its checkpoints from
on this machine. Every launcher function that needs a site takes this one object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kit.config.sites import Site
from kit.launch.frontend import Frontend
from kit.launch.paths import SitePaths, site_path, site_paths
from kit.launch.schedulers.base import Scheduler


@dataclass(frozen=True)
class ResolvedSite:
    """One site as a command sees it, every fact worked out once (resolve_site), so no caller comes back
    here for one. `config` is the sites.toml entry after the run's overrides (--job-type, a grown GPU
    filter); `sites_dir` is the folder of sites.toml, where kit keeps its records (`state_dir`, .kit/)
    and against which a local site's relative folders were resolved; `checkpoints` is where kit reads
    the site's checkpoints on this machine: its results tree, or for a remote site the local `mirror`
    (kit.launch.remote.sync_mirror)."""

    config: Site
    sites_dir: Path
    paths: SitePaths
    name: str
    is_remote: bool             # reached over ssh: its folders are paths on the cluster
    scheduler: Scheduler        # kit.launch.schedulers
    frontend: Frontend          # the machine kit runs the site's commands on (ssh, or this one)
    state_dir: Path
    mirror: Path
    checkpoints: Path

    def local_path(self, value: str) -> Path:
        """A path written in the site's entry, resolved as its folders are (relative to sites.toml locally)."""
        return site_path(self.config, value, self.sites_dir)

    def with_config(self, **update) -> ResolvedSite:
        """The same site with these sites.toml values replaced (resolved anew, its scheduler too)."""
        return resolve_site(self.config.model_copy(update=update), self.sites_dir)


def resolve_site(site: Site, sites_dir: Path) -> ResolvedSite:
    """The site with its folders resolved against the sites.toml folder `sites_dir`, its scheduler and
    frontend made (neither connects before it is used), and where kit keeps and reads its records."""
    from kit.launch.schedulers.base import get_scheduler

    sites_dir = Path(sites_dir).resolve()
    paths = site_paths(site, sites_dir)
    scheduler = get_scheduler(site.scheduler)(site)
    state_dir = sites_dir / ".kit"
    mirror = state_dir / "mirror" / site.name / "results"
    return ResolvedSite(site, sites_dir, paths, site.name, site.is_remote, scheduler, scheduler.frontend, state_dir,
                        mirror, mirror if site.is_remote else paths.results)


def load_site(sites_file: Path, name: str) -> ResolvedSite:
    """One site of a sites file, resolved; a ConfigError names the known sites when it is not there."""
    from kit.config.sites import load_sites

    return resolve_site(load_sites(sites_file).get(name), Path(sites_file).resolve().parent)


def load_named_sites(sites_file: Path, names: list[str] | None) -> list[ResolvedSite]:
    """The named sites of a sites file (every one when `names` is None), resolved, in that order."""
    from kit.config.sites import load_sites

    cfg = load_sites(sites_file)
    folder = Path(sites_file).resolve().parent
    return [resolve_site(cfg.get(name), folder) for name in (list(cfg.site) if names is None else names)]
