"""Named implementations, one module each in one package, imported when first asked for: the
schedulers, the runtimes, the backend engines and each layer's part of the benchmark kinds use it. A name outside the known list is a
ConfigError listing them; a known one whose module needs a library that is not installed is an
error naming that library (an import bug inside the module is never read as "not available")."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from kit.errors import ConfigError, MissingExtraError

T = TypeVar("T")


class Registry(Generic[T]):
    """Classes (or one object each) registered by name; `package.<name>` defines what is registered
    as `name`."""

    def __init__(self, what: str, package: str, names: Iterable[str], extra: str | None = None) -> None:
        self.what = what
        self.package = package
        self.names = tuple(names)
        self.extra = extra   # the pip extra that brings the modules' libraries, named in errors
        self._classes: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator (or call on an object): `name` now gives this class or object (a second one under
        one name is refused)."""

        def decorate(cls: T) -> T:
            other = self._classes.get(name)
            if other is not None and other is not cls:
                kind = other if isinstance(other, type) else type(other)
                raise ValueError(f"{self.what} {name!r} is already registered by {kind.__module__}.{kind.__qualname__}")
            cls.name = name
            self._classes[name] = cls
            return cls

        return decorate

    def get(self, name: str) -> T:
        """What is registered as `name`, importing its module the first time."""
        if name not in self.names:
            raise ConfigError(f"{self.what} {name!r} is not one kit knows", fix=f"use one of: {', '.join(self.names)}")
        if name not in self._classes:
            module = f"{self.package}.{name}"
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name == module:
                    raise ConfigError(f"{self.what} {name!r} is not implemented in this kit version",
                                      fix=f"use one of: {', '.join(self.implemented())}") from None
                if exc.name and not exc.name.startswith("kit."):
                    raise MissingExtraError(f"the {name} {self.what}", exc.name, self.extra or "worker") from None
                raise
        if name not in self._classes:
            raise ConfigError(f"module {self.package}.{name} registers no {self.what} named {name!r}")
        return self._classes[name]

    def implemented(self) -> list[str]:
        """The known names whose module exists in this installation."""
        import importlib.util

        return [n for n in self.names if importlib.util.find_spec(f"{self.package}.{n}") is not None]
