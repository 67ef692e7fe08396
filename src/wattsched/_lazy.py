"""PEP 562 lazy re-exports for package ``__init__`` files.

A package lists ``{public name: module that defines it}``; the module is imported the first time the name is
read (``wattsched.simulate``, ``from wattsched import simulate``), so importing a package costs only what is
used. This keeps ``wattsched --help`` and ``wattsched mig run`` from importing pandas, pyarrow, matplotlib,
scipy or plotly when they do not need them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` resolving each name of ``exports`` from its module.

    A resolved name is stored in the package's namespace, so later reads are plain attribute reads. An
    unknown name raises ``AttributeError`` as for any module.
    """

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
