"""sites.toml: one [site.NAME] table per cluster (scheduler, runtime, paths, job defaults, policy)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kit.config.loading import invalid, load_model
from kit.errors import ConfigError

G5K_JOB_TYPES = ("night",)
G5K_GPU_FILTER = "gpu_compute_capability_major>=7 AND gpu_mem>=23040"
G5K_POLICY_CHECKS = ("usagepolicycheck -t",)
_WALLTIME = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]?\d)(?::([0-5]?\d))?$")
_SITE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# forward_env names that look like secrets (they would travel in the job's environment)
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY$", re.IGNORECASE)
# the longest walltime kit accepts: beyond any cluster's limit, and far from datetime's
MAX_WALLTIME_S = 366 * 24 * 3600


def walltime_seconds(text: str) -> int:
    """'1:30' (H:MM), '1:30:00' (H:MM:SS) or '2-00:00' (D-H:MM) -> seconds."""
    m = _WALLTIME.match(text.strip())
    if not m:
        raise invalid(f"walltime {text!r} is not H:MM, H:MM:SS or D-H:MM", fix="write e.g. '1:30' for ninety minutes")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if not 0 < total <= MAX_WALLTIME_S:
        raise invalid(f"walltime {text!r} is {'no time at all' if total == 0 else 'more than a year'}",
                      fix="write the job's real limit, e.g. '1:30' for ninety minutes")
    return total


class Site(BaseModel):
    """A cluster entry: where and how jobs run, and where results and images live."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    scheduler: Literal["oar", "slurm", "local"]
    runtime: Literal["apptainer", "pyxis", "enroot", "docker", "host"] = "host"
    frontend: str = Field("local", description="'local' or an ssh host that runs the scheduler commands")
    root: str = Field(".", description="kit's working folder on the frontend (job scripts, logs)")
    results: str = Field("results", description="results tree, as the job sees it")
    images: str = Field("images", description="where SIF/sqsh artifacts live on the cluster")
    scratch: str = Field("/tmp", description="node-local scratch for caches")
    weights: str | None = Field(None, description="staged Hugging Face cache (HF_HOME/hub layout)")
    job_types: tuple[str, ...] = ()
    queue: str | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    gpu_filter: str | None = None
    gres: str | None = None
    gpus_per_node: int = Field(1, ge=0, le=64)
    cpus_per_task: int | None = Field(None, ge=1)
    mem_gb: int | None = Field(None, ge=1)
    walltime: str = "1:00"
    weight: int = Field(1, ge=1)
    policy_checks: tuple[str, ...] = ()
    forward_env: tuple[str, ...] = ()
    hf_token_file: str | None = Field(None, description="file with the HF token, mode 600; jobs get its path as HF_TOKEN_PATH")
    python: str | None = Field(None, description="host runtime: the python that has kit's worker installed")
    docker_image: str | None = Field(None, description="docker runtime: image reference")

    @model_validator(mode="before")
    @classmethod
    def _grid5000_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("scheduler") == "oar":
            data = dict(data)
            data.setdefault("job_types", list(G5K_JOB_TYPES))
            data.setdefault("gpu_filter", G5K_GPU_FILTER)
            data.setdefault("runtime", "apptainer")
            data.setdefault("policy_checks", list(G5K_POLICY_CHECKS))
        return data

    @field_validator("walltime")
    @classmethod
    def _walltime(cls, v: str) -> str:
        walltime_seconds(v)
        return v

    @field_validator("forward_env")
    @classmethod
    def _env_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not _ENV_NAME.match(name):
                raise invalid(f"{name!r} is not an environment variable name", fix="use names like HF_HOME")
            if SECRET_NAME.search(name) and not name.endswith("_PATH"):
                raise invalid(f"{name!r} looks like a secret; kit passes secrets only as files readable by you alone",
                              fix="put the value in a mode-600 file and set hf_token_file (or forward NAME_PATH)")
        return v

    @field_validator("frontend")
    @classmethod
    def _host(cls, v: str) -> str:
        if not v or v.startswith("-") or any(c.isspace() for c in v):
            raise invalid(f"frontend {v!r} is not an ssh host", fix="write 'local' or a host name or alias, e.g. nancy.g5k")
        return v

    @property
    def walltime_s(self) -> int:
        """The default walltime in seconds."""
        return walltime_seconds(self.walltime)

    @property
    def is_remote(self) -> bool:
        """True when scheduler commands run over ssh."""
        return self.frontend != "local"


class SitesFile(BaseModel):
    """The whole sites.toml."""

    model_config = ConfigDict(extra="forbid")

    site: dict[str, Site] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("site"), dict):
            data = dict(data)
            named = {}
            for key, value in data["site"].items():
                if isinstance(value, dict):
                    value = {**value, "name": key}
                named[key] = value
            data["site"] = named
        return data

    @field_validator("site")
    @classmethod
    def _site_names(cls, v: dict[str, Site]) -> dict[str, Site]:
        for key in v:
            if not _SITE_NAME.match(key):
                raise invalid(f"site name {key!r}", fix="use lower-case letters, digits, '-' and '_'")
        return v

    def get(self, name: str) -> Site:
        """The named site, or a ConfigError listing the configured ones."""
        if name not in self.site:
            known = ", ".join(self.site) or "(none)"
            raise ConfigError(f"site {name!r} is not configured", fix=f"use one of: {known}, or add [site.{name}] to sites.toml")
        return self.site[name]


def load_sites(path: Path) -> SitesFile:
    """Load and validate sites.toml."""
    return load_model(SitesFile, Path(path), "sites")
