"""Resolve site paths: relative paths of a local-frontend site are relative to sites.toml."""

from __future__ import annotations

from pathlib import Path

from kit.config.sites import Site


def site_path(site: Site, value: str, sites_dir: Path) -> Path:
    """An absolute path for a local site; remote paths are returned as written (resolved on the cluster)."""
    p = Path(value).expanduser()
    if site.is_remote or p.is_absolute():
        return p
    return (sites_dir / p).resolve()
