"""A site resolved once for one command: its sites.toml entry (with the run's overrides, GPU facts
included), its folders, its scheduler and frontend, and the folder kit reads its checkpoints from
on this machine. Every launcher function that needs a site takes this one object."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from kit.config.sites import Site
from kit.launch.frontend import Frontend
from kit.launch.paths import SitePaths, site_path, site_paths
from kit.launch.schedulers.base import Scheduler


@dataclass(frozen=True)
class ResolvedSite:
    """One site as a command sees it. `config` is the sites.toml entry after the run's overrides
    (--job-type, a grown GPU filter); `sites_dir` is the folder of sites.toml, where kit keeps its
    records (.kit/) and against which a local site's relative folders were resolved."""

    config: Site
    sites_dir: Path
    paths: SitePaths

    @property
    def name(self) -> str:
        """The site's name in sites.toml."""
        return self.config.name

    @property
    def is_remote(self) -> bool:
        """Whether the site is reached over ssh (its folders are paths on the cluster)."""
        return self.config.is_remote

    @cached_property
    def scheduler(self) -> Scheduler:
        """The site's scheduler, made on first use (kit.launch.schedulers)."""
        from kit.launch.schedulers.base import get_scheduler

        return get_scheduler(self.config.scheduler)(self.config)

    @property
    def frontend(self) -> Frontend:
        """The machine kit runs the site's commands on (its ssh connection, or this machine)."""
        return self.scheduler.frontend

    @property
    def state_dir(self) -> Path:
        """Where kit keeps its submission records and mirrors: .kit/ beside sites.toml."""
        return self.sites_dir / ".kit"

    @property
    def mirror(self) -> Path:
        """The local copy of a remote site's results tree (kit.launch.remote.sync_mirror)."""
        return self.state_dir / "mirror" / self.name / "results"

    @property
    def checkpoints(self) -> Path:
        """Where kit reads the site's checkpoints on this machine: its results tree, or for a remote
        site the local mirror."""
        return self.mirror if self.is_remote else self.paths.results

    def local_path(self, value: str) -> Path:
        """A path written in the site's entry, resolved as its folders are (relative to sites.toml locally)."""
        return site_path(self.config, value, self.sites_dir)

    def with_config(self, **update) -> ResolvedSite:
        """The same site with these sites.toml values replaced (its scheduler made anew)."""
        config = self.config.model_copy(update=update)
        return replace(self, config=config, paths=site_paths(config, self.sites_dir))


def resolve_site(site: Site, sites_dir: Path) -> ResolvedSite:
    """The site with its folders resolved against the sites.toml folder `sites_dir`."""
    sites_dir = Path(sites_dir).resolve()
    return ResolvedSite(site, sites_dir, site_paths(site, sites_dir))


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
