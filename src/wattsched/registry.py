"""One registry per plug-in kind: ``register`` / ``make`` / ``available``.

A registry given an entry-point group (``Registry("scheduling policy", entry_points="wattsched.policies")``)
also holds what installed packages declare in that group: the group is loaded the first time a name is looked
up or listed, once per process (see :mod:`wattsched.plugins`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Generic, TypeVar

from wattsched import plugins
from wattsched.errors import UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories of one plug-in kind (policies, executors, ...)."""

    def __init__(self, kind: str, *, entry_points: str | None = None) -> None:
        self.kind = kind
        self.entry_point_group = entry_points
        self._factories: dict[str, Callable[..., T]] = {}
        self._entry_points_loaded = entry_points is None

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            plugins.count_registration()
            return factory

        return decorate

    def load_entry_points(self) -> None:
        """Load this registry's entry-point group now (done once, on the first look-up otherwise)."""
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True  # first: a plug-in that looks names up while importing must not loop
        group = self.entry_point_group
        assert group is not None
        for entry_point in plugins.entry_points(group):
            loaded = plugins.load_entry_point(entry_point, group)
            if isinstance(loaded, ModuleType) or entry_point.name in self._factories:
                continue  # a module registers its names itself when imported
            factory = loaded if callable(loaded) else (lambda value=loaded: value)
            self.register(entry_point.name)(factory)

    def make(self, name: str, **kwargs: object) -> T:
        self.load_entry_points()
        try:
            factory = self._factories[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, list(self._factories)) from None
        return factory(**kwargs)

    def factory(self, name: str) -> Callable[..., T]:
        """The factory registered as ``name`` (an unknown name raises an error listing the valid ones)."""
        self.load_entry_points()
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, list(self._factories)) from None

    def available(self) -> list[str]:
        self.load_entry_points()
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        self.load_entry_points()
        return name in self._factories
