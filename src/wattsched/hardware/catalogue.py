"""The hardware catalogue: one loader family for every kind of hardware fact (STYLE: one loader per kind).

* ``available(kind)`` — the packaged entries of a kind, e.g. ``available("gpu")`` →
  ``["a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb"]``;
* ``load(kind, name_or_path)`` — a packaged entry by name, or any ``*.toml`` file by path, parsed and
validated.

Kinds: ``"gpu"`` (MIG GPUs, :class:`~wattsched.hardware.mig.MigGpu`, files in ``data/gpus/``) and ``"dvfs"``
(DVFS GPU models of P2, :class:`~wattsched.hardware.dvfs.DvfsGpu`, files in ``data/dvfs/``). Every failure is
one
:class:`~wattsched.hardware._toml.CatalogueError` naming the file and the field; an unknown name lists the
catalogue. Packaged entries are parsed once per process.

Plug-in GPUs join the ``"gpu"`` kind by name: :func:`register_gpu` (from a ``--plugin`` module or a sweep
file's ``plugins``), or an installed package's entry point in the group ``wattsched.gpus`` whose object is a
:class:`~wattsched.hardware.mig.MigGpu`, the path of a catalogue ``.toml``, or a function returning either.
A packaged name cannot be taken by a plug-in.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from wattsched.errors import ConfigError, did_you_mean
from wattsched.hardware._toml import CatalogueError, read_toml
from wattsched.registry import Registry

__all__ = [
    "DEFAULT_GPU",
    "KINDS",
    "PLUGIN_GPUS",
    "CatalogueError",
    "available",
    "load",
    "load_gpu",
    "register_gpu",
]

#: The GPU every MIG command, study and API uses when none is given: P1's A100-40GB.
DEFAULT_GPU = "a100-40gb"

if TYPE_CHECKING:  # typing only: no import cycles at run time
    from wattsched.hardware.dvfs import DvfsGpu
    from wattsched.hardware.mig import MigGpu


def _parse_gpu(data: dict[str, Any], where: str) -> Any:
    from wattsched.hardware._gpu_toml import parse_gpu

    return parse_gpu(data, where)


def _parse_dvfs(data: dict[str, Any], where: str) -> Any:
    from wattsched.hardware.dvfs import parse_dvfs

    return parse_dvfs(data, where)


#: kind -> (package data folder, parser)
KINDS: dict[str, tuple[str, Callable[[dict[str, Any], str], Any]]] = {
    "gpu": ("gpus", _parse_gpu),
    "dvfs": ("dvfs", _parse_dvfs),
}


#: GPUs of plug-ins, by name: factories returning a MigGpu or the path of a catalogue ``.toml``.
PLUGIN_GPUS: Registry[Any] = Registry("GPU", entry_points="wattsched.gpus")
_PLUGIN_CACHE: dict[str, Any] = {}


def register_gpu(name: str, gpu: Any) -> None:
    """Add a MIG GPU to the catalogue under ``name``: a :class:`~wattsched.hardware.mig.MigGpu`, the path of
    a catalogue ``.toml`` (``wattsched gpu snapshot`` writes one), or a function returning either. It is
    parsed when first loaded. A packaged name or a name registered before raises a ConfigError."""
    if name in _packaged_names("gpu"):
        raise ConfigError(
            f"GPU '{name}' is a packaged catalogue entry; register the plug-in under another name"
        )
    if name in PLUGIN_GPUS:
        raise ConfigError(f"GPU '{name}' is registered twice")
    PLUGIN_GPUS.register(name)(gpu if callable(gpu) else (lambda: gpu))


def _load_plugin_gpu(name: str) -> Any:
    from wattsched.hardware.mig import MigGpu

    if name not in _PLUGIN_CACHE:
        value = PLUGIN_GPUS.make(name)
        if isinstance(value, str | Path):
            value = load("gpu", Path(value))
        if not isinstance(value, MigGpu):
            raise ConfigError(
                f"plug-in GPU '{name}' gave a {type(value).__name__}, expected a MigGpu or a .toml path"
            )
        _PLUGIN_CACHE[name] = value
    return _PLUGIN_CACHE[name]


def _kind(kind: str) -> tuple[str, Callable[[dict[str, Any], str], Any]]:
    try:
        return KINDS[kind]
    except KeyError:
        raise ConfigError(f"unknown hardware kind '{kind}'; valid: {', '.join(sorted(KINDS))}") from None


def available(kind: str) -> list[str]:
    """Names of the packaged entries of ``kind``: ``"gpu"`` (MIG GPUs: a100-40gb, a100-80gb, h100-80gb,
    h200-141gb, and any plug-in GPUs) or ``"dvfs"`` (DVFS GPUs of P2); sorted file stems of
    ``data/<folder>/*.toml``, plug-in GPUs after them."""
    names = list(_packaged_names(kind))
    if kind == "gpu":
        names += [name for name in PLUGIN_GPUS.available() if name not in names]
    return names


@cache
def _packaged_names(kind: str) -> tuple[str, ...]:
    # Cached: the packaged files do not change while the process runs (and every simulate() resolves a name).
    folder, _ = _kind(kind)
    root = resources.files("wattsched.hardware") / "data" / folder
    return tuple(sorted(p.name[: -len(".toml")] for p in root.iterdir() if p.name.endswith(".toml")))


@cache
def _load_packaged(kind: str, name: str) -> Any:
    folder, parse = _kind(kind)
    resource = resources.files("wattsched.hardware") / "data" / folder / f"{name}.toml"
    where = f"{name}.toml"
    return parse(read_toml(resource.read_text(encoding="utf-8"), where=where, is_text=True), where)


@overload
def load(kind: Literal["gpu"], name_or_path: str | Path) -> MigGpu: ...
@overload
def load(kind: Literal["dvfs"], name_or_path: str | Path) -> DvfsGpu: ...
@overload
def load(kind: str, name_or_path: str | Path) -> Any: ...


def load(kind: str, name_or_path: str | Path) -> Any:
    """A packaged entry by name or a ``*.toml`` file by path (see the module docstring).

    ``kind``: ``"gpu"`` (returns a :class:`~wattsched.hardware.mig.MigGpu`) or ``"dvfs"`` (a DVFS GPU).
    ``name_or_path``: a name of :func:`available` or a path (a :class:`~pathlib.Path`, or text ending in
    ``.toml`` or containing ``/``). An unknown name raises a ConfigError listing the valid ones."""
    _, parse = _kind(kind)
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith(".toml") or "/" in text:
        where = text
        data = read_toml(Path(text))
        try:
            return parse(data, where)
        except CatalogueError:
            raise
        except ConfigError as exc:
            raise CatalogueError(str(exc), path=where) from None
        except (AttributeError, TypeError, ValueError, OverflowError, KeyError) as exc:
            message = " ".join(str(exc).split())
            raise CatalogueError(
                f"invalid {kind} entry ({type(exc).__name__}: {message})", path=where
            ) from None
    names = _packaged_names(kind)
    if kind == "gpu" and text not in names and text in PLUGIN_GPUS:
        return _load_plugin_gpu(text)
    if text not in names:
        names = tuple(available(kind))
        label = "GPU" if kind == "gpu" else f"{kind} GPU"
        raise ConfigError(
            f"unknown {label} '{text}'{did_you_mean(text, names)}; the catalogue has: {', '.join(names)} "
            f"(or give a path to a .toml entry)"
        )
    return _load_packaged(kind, text)


def load_gpu(name_or_path: str | Path | MigGpu | None = None) -> MigGpu:
    """A MIG GPU by catalogue name or path (default ``a100-40gb``); a :class:`MigGpu` passes through.

    Names: ``a100-40gb`` (P1's GPU), ``a100-80gb``, ``h100-80gb``, ``h200-141gb`` (:func:`available`
    ``("gpu")``); a path is a catalogue ``.toml`` (``wattsched gpu snapshot`` writes one). An unknown name
    raises a ConfigError listing the catalogue."""
    from wattsched.hardware.mig import MigGpu

    if isinstance(name_or_path, MigGpu):
        return name_or_path
    gpu = load("gpu", DEFAULT_GPU if name_or_path is None else name_or_path)
    assert isinstance(gpu, MigGpu)
    return gpu
