"""One registry per plug-in kind: ``register`` / ``make`` / ``available``.

A registry given an entry-point group (``Registry("scheduling policy", entry_points="wattsched.policies")``)
also holds what installed packages declare in that group: the group is loaded the first time a name is looked
up or listed, once per process (see :mod:`wattsched.plugins`).

``make(name, **options)`` checks the options against the factory's keyword parameters first (and, for a
factory that passes ``**options`` on, those of what it passes them to, given as ``register(name,
options_of=...)``): an unknown or missing one is a one-line :class:`~wattsched.errors.ConfigError` naming the
kind, the name and the valid options, never Python's ``TypeError``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Generic, TypeVar

from wattsched import plugins
from wattsched.errors import ConfigError, UnknownNameError, did_you_mean

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories of one plug-in kind (policies, executors, ...)."""

    def __init__(self, kind: str, *, entry_points: str | None = None) -> None:
        self.kind = kind
        self.entry_point_group = entry_points
        self._factories: dict[str, Callable[..., T]] = {}
        self._options_of: dict[str, Callable[..., Any]] = {}
        self._entry_points_loaded = entry_points is None

    def register(
        self, name: str, *, options_of: Callable[..., Any] | None = None
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Register a factory as ``name``; ``options_of``: what a factory taking ``**options`` passes them
        to (its keyword parameters are the factory's options too)."""

        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            if options_of is not None:
                self._options_of[name] = options_of
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
        self.check_options(name, kwargs)
        return self._factories[name](**kwargs)

    def check_options(self, name: str, options: Mapping[str, object]) -> None:
        """Raise :class:`ConfigError` (one line: the kind, ``name``, the option, a did-you-mean, the valid
        options) for an option the factory ``name`` does not take or a required one ``options`` lacks; the
        options of a factory taking ``**options`` with no ``options_of`` are not checked."""
        factory = self.factory(name)
        found = _keywords(factory)
        if found is None:
            return
        valid, required, open_ended = found
        if open_ended:
            passed_on = _keywords(self._options_of[name]) if name in self._options_of else None
            if passed_on is None:
                return
            valid = list(dict.fromkeys([*valid, *passed_on[0]]))
        listed = f"valid: {', '.join(valid)}" if valid else "it takes no options"
        for key in options:
            if key not in valid:
                raise ConfigError(
                    f"unknown option '{key}' for {self.kind} '{name}'{did_you_mean(key, valid)}; {listed}"
                )
        missing = [key for key in required if key not in options]
        if missing:
            raise ConfigError(f"{self.kind} '{name}' needs the option '{missing[0]}'; {listed}")

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


def _keywords(factory: Callable[..., Any]) -> tuple[list[str], list[str], bool] | None:
    """A callable's keyword parameters (those starting with ``_`` left out), the required ones among them,
    and whether it also takes ``**kwargs``; ``None`` where its signature cannot be read."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    named = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and not p.name.startswith("_")
    ]
    required = [p.name for p in named if p.default is p.empty]
    return [p.name for p in named], required, any(p.kind is p.VAR_KEYWORD for p in parameters)
