"""One registry per plug-in kind: ``register`` / ``make`` / ``available``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from wattsched.errors import UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories of one plug-in kind (policies, executors, ...)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            return factory

        return decorate

    def make(self, name: str, **kwargs: object) -> T:
        try:
            factory = self._factories[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, list(self._factories)) from None
        return factory(**kwargs)

    def available(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories
