"""Plug-ins from outside the package: modules a user names, and installed packages' entry points.

A plug-in is an ordinary Python module that registers its things when imported, through the registries'
own decorators (``@POLICIES.register("sjf")``, ``PARTITIONERS``, ``PLACEMENTS``,
:func:`wattsched.hardware.catalogue.register_gpu`). It reaches wattsched in one of three ways:

* ``wattsched --plugin MODULE ...`` (any command, repeatable) and ``plugins = ["MODULE", ...]`` in a sweep
  file: :func:`load_plugins` imports each module. ``MODULE`` is a module name on the Python path, else one
  found in the current folder (the sweep file's folder for a sweep file), or the path of a ``.py`` file;
* an installed package's entry points in the groups of :data:`ENTRY_POINT_GROUPS`: each registry loads its
  group the first time a name is looked up or listed (once per process). An entry point names a module
  (``sjf = "mypkg.sjf"``: importing it registers) or an object (``sjf = "mypkg.sjf:ShortestJobFirst"``:
  registered under the entry point's name unless importing its module already did).

Every failure is one :class:`~wattsched.errors.ConfigError` line naming the module (or the entry point and
its package) and the reason. A module that imports but registers nothing is refused as well: it was most
likely the wrong module.

The source of every plug-in loaded (its file, or its top-level package's files) is digested when it is
imported: :func:`plugins_digest` is part of every stored result's fingerprint, so an edited plug-in never
reuses rows its old code computed. Worker processes of a sweep import the same modules
(:func:`import_references`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from wattsched.errors import ConfigError

if TYPE_CHECKING:  # typing only: the registry module imports this one
    from wattsched.registry import Registry

__all__ = [
    "ENTRY_POINT_GROUPS",
    "PluginReference",
    "factory_source_digest",
    "import_references",
    "load_entry_points",
    "load_plugin",
    "load_plugins",
    "loaded_plugins",
    "plugin_digests",
    "plugin_references",
    "plugins_digest",
    "registrations",
]

#: The entry-point group of each plug-in kind.
ENTRY_POINT_GROUPS = {
    "policies": "wattsched.policies",
    "partitioners": "wattsched.partitioners",
    "placements": "wattsched.placements",
    "gpus": "wattsched.gpus",
}


@dataclass(frozen=True)
class PluginReference:
    """How a worker process imports a plug-in again: the module name and the folder added to the Python
    path to find it (``""``: found on the path as it was)."""

    module: str
    folder: str = ""


#: Plug-in modules loaded in this process (by name, or by entry point): reference, source digest, origin.
_LOADED: dict[str, tuple[PluginReference, str, str]] = {}
#: Registrations made by any registry so far (a plug-in that adds none is refused).
_REGISTRATIONS = [0]


def registrations() -> int:
    """How many names every registry has registered so far in this process."""
    return _REGISTRATIONS[0]


def count_registration() -> None:
    """Called by :meth:`wattsched.registry.Registry.register` for every name it adds."""
    _REGISTRATIONS[0] += 1


def _source_digest(module: ModuleType) -> str:
    """A digest of the module's source: its top-level package's files (``*.py`` and data, no caches), or the
    module's own file."""
    top = sys.modules.get(module.__name__.partition(".")[0], module)
    digest = hashlib.sha256()
    paths: list[Path] = []
    package_dirs = [Path(p) for p in getattr(top, "__path__", [])]
    if package_dirs:
        for folder in package_dirs:
            paths += [
                p
                for p in folder.rglob("*")
                if p.is_file()
                and "__pycache__" not in p.parts
                and p.suffix not in (".pyc", ".pyo")
                and not p.name.startswith(".")
            ]
    elif getattr(module, "__file__", None):
        paths.append(Path(str(module.__file__)))
    for path in sorted(paths):
        digest.update(path.as_posix().encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _note(module: ModuleType, reference: PluginReference, origin: str) -> None:
    if module.__name__ not in _LOADED:
        _LOADED[module.__name__] = (reference, _source_digest(module), origin)


def loaded_plugins() -> dict[str, str]:
    """Every plug-in module loaded in this process and how (``--plugin``, a sweep file, an entry point)."""
    return {name: origin for name, (_, _, origin) in sorted(_LOADED.items())}


def plugin_digests() -> dict[str, str]:
    """The source digest of every plug-in module loaded in this process, by module name."""
    return {name: digest for name, (_, digest, _) in sorted(_LOADED.items())}


def plugin_references() -> tuple[PluginReference, ...]:
    """The modules :func:`load_plugin` loaded, in load order (not entry points: a worker loads those
    itself)."""
    return tuple(ref for ref, _, origin in _LOADED.values() if not origin.startswith("entry point"))


def factory_source_digest(factory: object) -> str:
    """The source digest of the module that defines a registered ``factory`` when that module is outside
    wattsched (a plug-in, or a module the caller imported itself); ``""`` for wattsched's own."""
    name = getattr(factory, "__module__", None)
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None or name == "wattsched" or str(name).startswith("wattsched."):
        return ""
    loaded = _LOADED.get(str(name))
    return loaded[1] if loaded is not None else _source_digest(module)


def plugins_digest() -> str:
    """A digest of the source of every plug-in loaded in this process (``""`` when none is). Every installed
    entry point is loaded first, so the digest does not depend on which registries were looked up."""
    load_entry_points()
    if not _LOADED:
        return ""
    text = "\n".join(f"{name}={digest}" for name, (_, digest, _) in sorted(_LOADED.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _resolve(reference: str, base: Path | None) -> tuple[str, str]:
    """(module name, folder to add to the path or "") of a module name or a ``.py`` path."""
    if reference.endswith(".py") or "/" in reference or "\\" in reference:
        path = Path(reference).expanduser()
        path = path if path.is_absolute() or base is None else base / path
        if not path.is_file():
            raise ConfigError(f"no such plug-in file '{reference}'" + (f" (in {base})" if base else ""))
        return path.stem, str(path.resolve().parent)
    name = reference
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ConfigError(f"'{reference}' is not a module name (e.g. mypolicies or mypkg.sjf) nor a .py file")
    if name in sys.modules:
        return name, ""
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found and base is not None:
        top = name.partition(".")[0]
        if (base / f"{top}.py").is_file() or (base / top / "__init__.py").is_file():
            return name, str(base.resolve())
    return name, ""


def load_plugin(reference: str, *, base: Path | None = None, where: str = "--plugin") -> str:
    """Import the plug-in ``reference`` (see the module docstring); returns its module name.

    ``base``: the folder a bare module name is also looked for in, and relative ``.py`` paths start at.
    ``where``: what names the module in messages (``--plugin`` or ``FILE: key 'plugins'``). A module that
    was imported before is not imported again (and need not register anything)."""
    try:
        name, folder = _resolve(reference, base)
    except ConfigError as exc:
        raise ConfigError(f"{where} {reference}: {exc}") from None
    return _import(PluginReference(name, folder), where, reference, origin=where)


def _import(ref: PluginReference, where: str, shown: str, *, origin: str) -> str:
    name = ref.module
    if name in sys.modules:
        _check_origin(sys.modules[name], ref, where, shown)
        _note(sys.modules[name], ref, origin)
        return name
    if ref.folder and ref.folder not in sys.path:
        sys.path.append(ref.folder)
    before = registrations()
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(
            f"{where} {shown}: cannot import module '{name}': {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    except Exception as exc:  # the plug-in's own code failed while importing: name it, in one line
        raise ConfigError(
            f"{where} {shown}: importing module '{name}' failed: {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    _check_origin(module, ref, where, shown)
    if registrations() == before:
        raise ConfigError(
            f"{where} {shown}: module '{name}' registered nothing (a plug-in registers policies, "
            'partitioners, placements or GPUs when imported, e.g. with @POLICIES.register("name"))'
        )
    _note(module, ref, origin)
    return name


def _check_origin(module: ModuleType, ref: PluginReference, where: str, shown: str) -> None:
    """A plug-in found in a folder must be the module that folder holds, not another of the same name."""
    if ref.folder and getattr(module, "__file__", None):
        origin_file = Path(str(module.__file__)).resolve()
        if Path(ref.folder).resolve() not in origin_file.parents:
            raise ConfigError(
                f"{where} {shown}: module name '{ref.module}' is taken by {origin_file}; rename the plug-in"
            )


def load_plugins(
    references: Iterable[str], *, base: Path | None = None, where: str = "--plugin"
) -> list[str]:
    """:func:`load_plugin` for each reference, in order; returns the module names."""
    return [load_plugin(reference, base=base, where=where) for reference in references]


def import_references(references: Iterable[PluginReference]) -> None:
    """Import the plug-ins of ``references`` in this process (a sweep's worker; no-op for loaded ones)."""
    for ref in references:
        if ref.module not in sys.modules:
            _import(ref, "plug-in", ref.module, origin="worker")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0]


def entry_points(group: str) -> list[Any]:
    """The installed entry points of ``group`` (importlib.metadata), sorted by name then value."""
    from importlib import metadata  # only when a registry is first looked up: it costs start-up

    return sorted(metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))


def load_entry_point(entry_point: Any, group: str) -> Any:
    """Load one entry point, noting its module as a plug-in; a failure is one line naming the entry point
    and its package."""
    before = set(sys.modules)
    try:
        loaded = entry_point.load()
    except Exception as exc:
        dist = getattr(entry_point, "dist", None)
        package = f"{dist.name} {dist.version}" if dist is not None else "an unknown package"
        raise ConfigError(
            f"entry point '{entry_point.name} = {entry_point.value}' (group {group}) of package {package} "
            f"does not load: {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    module_name = entry_point.value.partition(":")[0].strip()
    module = sys.modules.get(module_name)
    if module is not None:
        dist = getattr(entry_point, "dist", None)
        package = dist.name if dist is not None else "?"
        origin = f"entry point {group}:{entry_point.name} ({package})"
        if module_name in before and module_name not in _LOADED:
            origin += ", imported earlier"
        _note(module, PluginReference(module_name), origin)
    return loaded


def load_entry_points() -> tuple[Registry[Any], ...]:
    """Load every plug-in group's entry points now (each registry otherwise loads its own when first used);
    returns the plug-in registries."""
    from wattsched.cluster.placement import PLACEMENTS
    from wattsched.hardware.catalogue import PLUGIN_GPUS
    from wattsched.mig.partition.base import PARTITIONERS
    from wattsched.mig.policies.base import POLICIES

    registries: tuple[Registry[Any], ...] = (POLICIES, PARTITIONERS, PLACEMENTS, PLUGIN_GPUS)
    for registry in registries:
        registry.load_entry_points()
    return registries
