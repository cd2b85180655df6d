"""The site walk (issue 28): following one resolved site through `kit run`'s planning, each module
that receives it is visited once, and no function comes back to kit/launch/site.py for a fact the
resolution already worked out. A profile hook records every call of a kit function that is handed
the site."""

from __future__ import annotations

import sys
from collections import Counter

from sites import plan_kit_run

from kit.config.sites import Site
from kit.demo.dataset import write_demo_benchmark
from kit.launch.site import ResolvedSite

REV = "0123456789abcdef0123456789abcdef01234567"


def stays_of(calls: list[str]) -> list[str]:
    """Runs of consecutive calls in one module, as that module's name."""
    return [m for i, m in enumerate(calls) if i == 0 or calls[i - 1] != m]


def test_one_site_through_kit_run_visits_each_module_once(tmp_path):
    write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(f'benchmark = "data"\n\n[[run]]\nmodel = "org/model-a"\nrevision = "{REV}"\n'
                                          'backend = "transformers-5.17"\nparams = "1B"\n')
    lyon = Site(name="lyon", scheduler="oar", runtime="apptainer", frontend="flyon.lyon.grid5000.fr",
                root="/home/u/kit", results="/home/u/results", images="/home/u/kit-images", weights="/home/u/hub")
    calls: list[str] = []

    def hook(frame, event, arg):
        if event != "call" or not frame.f_globals.get("__name__", "").startswith("kit."):
            return
        code = frame.f_code
        handed = list(frame.f_locals.values())[:code.co_argcount + code.co_kwonlyargcount]
        if any(isinstance(v, ResolvedSite) for v in handed):
            calls.append(frame.f_globals["__name__"])

    sys.setprofile(hook)
    try:
        plan = plan_kit_run(tmp_path, ["lyon"], sites=[lyon])
    finally:
        sys.setprofile(None)
    assert plan is not None
    stays = stays_of(calls)
    assert {"kit.launch.run", "kit.launch.siteplan"} <= set(stays), stays
    # once each, kit/launch/site.py included: its one visit is the site's making, every fact worked out then
    assert [m for m, n in Counter(stays).items() if n > 1] == [], stays
