"""The one registry helper behind schedulers, runtimes and backend engines: unknown names list the
known ones; a missing library is named, not read as "not available"; an import bug is not hidden."""

from __future__ import annotations

import sys

import pytest

from kit.errors import ConfigError, MissingExtraError
from kit.launch.runtimes.base import RUNTIMES
from kit.launch.schedulers.base import SCHEDULERS
from kit.registry import Registry
from kit.worker.backends.base import ENGINES


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """A package `kitplug` with: good (registers itself), needslib (imports a library that is not
    installed), buggy (imports a kit module that does not exist), silent (registers nothing)."""
    pkg = tmp_path / "kitplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from kit.registry import Registry\n"
                                     "REG = Registry('widget', 'kitplug', ('good', 'needslib', 'buggy', 'silent', 'absent'))\n")
    (pkg / "good.py").write_text("from kitplug import REG\n@REG.register('good')\nclass Good: pass\n")
    (pkg / "needslib.py").write_text("import surely_not_installed_lib\n")
    (pkg / "buggy.py").write_text("import kit.no_such_module\n")
    (pkg / "silent.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__("kitplug").REG
    for name in [m for m in sys.modules if m.startswith("kitplug")]:
        del sys.modules[name]


def test_a_known_name_imports_its_module_once(plugins):
    cls = plugins.get("good")
    assert cls.__name__ == "Good" and cls.name == "good" and plugins.get("good") is cls


def test_an_unknown_name_lists_the_known_ones(plugins):
    with pytest.raises(ConfigError, match="widget 'gizmo' is not one kit knows") as err:
        plugins.get("gizmo")
    assert "good, needslib" in err.value.fix


def test_a_missing_library_is_named(plugins):
    with pytest.raises(MissingExtraError, match="surely_not_installed_lib"):
        plugins.get("needslib")


def test_an_import_bug_is_not_read_as_not_available(plugins):
    with pytest.raises(ModuleNotFoundError, match="kit.no_such_module"):
        plugins.get("buggy")


def test_a_module_that_is_absent_or_registers_nothing_is_said_so(plugins):
    with pytest.raises(ConfigError, match="not implemented in this kit version"):
        plugins.get("absent")
    with pytest.raises(ConfigError, match="registers no widget named 'silent'"):
        plugins.get("silent")


def test_one_name_one_class():
    reg: Registry = Registry("thing", "nowhere", ("a",))

    @reg.register("a")
    class A:
        pass

    with pytest.raises(ValueError, match="already registered"):
        @reg.register("a")
        class B:
            pass


@pytest.mark.parametrize("registry", [SCHEDULERS, RUNTIMES, ENGINES], ids=lambda r: r.what)
def test_every_known_name_of_kits_registries_is_implemented(registry):
    missing = sorted(set(registry.names) - set(registry.implemented()))
    assert missing == [], f"{registry.what}s with no module: {missing}"
