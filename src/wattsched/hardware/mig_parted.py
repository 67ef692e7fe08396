"""NVIDIA's MIG Partition Editor format (``nvidia-mig-parted``, also the GPU Operator's mig-manager).

A mig-parted file is YAML::

    version: v1
    mig-configs:
      wattsched-a100-40gb-3:
        - devices: all
          mig-enabled: true
          mig-devices:
            "4g.20gb": 1
            "2g.10gb": 1
            "1g.10gb": 1

Each config is a list of device filters with the MIG state they should get; ``mig-devices`` counts
instances per profile and says nothing about placements: mig-parted (through the driver) places them.
:func:`export_document` writes our configurations in that form, one config per configuration named
``wattsched-<gpu>-<id>`` (docs/howto/nvml.md); :func:`parse_document` reads such a file back, checked, and
:func:`import_layouts` places each config's counts by the GPU's placement rules (or says it cannot).
Pure functions: no NVML, YAML through PyYAML's safe loader and dumper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from wattsched.errors import ConfigError, InputError
from wattsched.hardware.mig_plan import Layout, MigGeometry, layout_counts

__all__ = [
    "DeviceSpec",
    "ImportedConfig",
    "config_name",
    "dump_document",
    "export_document",
    "import_layouts",
    "parse_document",
]

_MAX_BYTES = 16 * 1024 * 1024


def config_name(gpu: str, ident: int | str) -> str:
    """The mig-parted config name of configuration ``ident`` of catalogue GPU ``gpu``."""
    return f"wattsched-{gpu}-{ident}"


def export_document(gpu: str, configurations: Sequence[tuple[int | str, Layout | None]]) -> dict[str, Any]:
    """The mig-parted document for ``(id, layout)`` pairs; a ``None`` layout is MIG disabled (``no-mig``)."""
    configs: dict[str, Any] = {}
    for ident, layout in configurations:
        if layout is None:
            entry: dict[str, Any] = {"devices": "all", "mig-enabled": False}
        else:
            entry = {"devices": "all", "mig-enabled": True, "mig-devices": layout_counts(layout)}
        configs[config_name(gpu, ident)] = [entry]
    return {"version": "v1", "mig-configs": configs}


def dump_document(document: Mapping[str, Any]) -> str:
    """YAML text of a document, keys in the order given (as mig-parted's own examples read)."""
    return str(yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False))


@dataclass(frozen=True)
class DeviceSpec:
    """One entry of a config: which devices (``"all"`` or indices), MIG on or off, and instance counts."""

    devices: str | tuple[int, ...]
    mig_enabled: bool
    counts: dict[str, int]


def parse_document(text: str, where: str) -> dict[str, tuple[DeviceSpec, ...]]:
    """The configs of a mig-parted YAML text, each checked; one InputError naming the file and the config."""
    if len(text) > _MAX_BYTES:
        raise InputError(f"file is larger than {_MAX_BYTES:,} bytes", path=where)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"not valid YAML{at}: {problem}", path=where) from None
    except RecursionError:
        raise InputError("YAML is nested too deeply", path=where) from None
    if not isinstance(data, dict):
        raise InputError(
            "expected a mig-parted document (a mapping with 'version' and 'mig-configs')", path=where
        )
    if data.get("version") != "v1":
        raise InputError(
            f"unsupported mig-parted version {data.get('version')!r} (expected 'v1')", path=where
        )
    configs = data.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise InputError("'mig-configs' must be a non-empty mapping of config names", path=where)
    return {str(name): _config(str(name), entries, where) for name, entries in configs.items()}


def _config(name: str, entries: object, where: str) -> tuple[DeviceSpec, ...]:
    if not isinstance(entries, list) or not entries:
        raise InputError(f"config '{name}' must be a non-empty list of device entries", path=where)
    specs = []
    for number, entry in enumerate(entries, start=1):
        at = f"config '{name}' entry {number}"
        if not isinstance(entry, dict):
            raise InputError(f"{at} must be a mapping", path=where)
        unknown = sorted(set(map(str, entry)) - {"devices", "device-filter", "mig-enabled", "mig-devices"})
        if unknown:
            raise InputError(f"{at}: unknown key(s) {', '.join(unknown)}", path=where)
        devices = entry.get("devices")
        if devices == "all":
            chosen: str | tuple[int, ...] = "all"
        elif (
            isinstance(devices, list)
            and devices
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices)
        ):
            chosen = tuple(devices)
        else:
            raise InputError(
                f"{at}: 'devices' must be 'all' or a list of GPU indices, got {devices!r}", path=where
            )
        enabled = entry.get("mig-enabled")
        if not isinstance(enabled, bool):
            raise InputError(f"{at}: 'mig-enabled' must be true or false, got {enabled!r}", path=where)
        raw = entry.get("mig-devices", {}) or {}
        if not isinstance(raw, dict) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in raw.values()
        ):
            raise InputError(f"{at}: 'mig-devices' must map profile names to counts >= 0", path=where)
        if raw and not enabled:
            raise InputError(f"{at}: 'mig-devices' given with 'mig-enabled: false'", path=where)
        specs.append(DeviceSpec(chosen, enabled, {str(k): int(v) for k, v in raw.items() if v}))
    return tuple(specs)


@dataclass(frozen=True)
class ImportedConfig:
    """A config read back: its name, the device filter, and the placed layout (``None``: MIG disabled)."""

    name: str
    devices: str | tuple[int, ...]
    layout: Layout | None


def import_layouts(
    configs: Mapping[str, Sequence[DeviceSpec]], geometry: MigGeometry, only: str | None = None
) -> list[ImportedConfig]:
    """Place every config (or only the one named ``only``) on ``geometry``; ConfigError if one does not fit.

    A config's entries for different devices each become one :class:`ImportedConfig`.
    """
    if only is not None and only not in configs:
        raise ConfigError(f"no config '{only}' in the file; it has: {', '.join(configs)}")
    out = []
    for name, specs in configs.items():
        if only is not None and name != only:
            continue
        for spec in specs:
            if not spec.mig_enabled:
                out.append(ImportedConfig(name, spec.devices, None))
                continue
            try:
                layout = geometry.place(spec.counts)
            except ConfigError as exc:
                raise ConfigError(f"config '{name}': {exc}") from None
            if layout is None:
                counts = ", ".join(f"{count} x {profile}" for profile, count in spec.counts.items())
                raise ConfigError(
                    f"config '{name}': {counts or 'nothing'} cannot be placed on {geometry.name} "
                    f"({geometry.compute_slices} compute slices, {geometry.memory_slots} memory "
                    "slots, by NVML's placements)"
                )
            out.append(ImportedConfig(name, spec.devices, layout))
    return out
