"""Snapshots of a GPU: NVML read-outs as JSON (``gpu record``), a catalogue entry as TOML (``gpu snapshot``).

:func:`record_facts` writes the keys of ``data/hardware/h200/nvml_facts.json`` (NVML's own units: mW,
mJ, MHz, bytes), so a recording replays through ``--backend fake:FILE``. :func:`catalogue_toml` turns one
recording into a catalogue entry of schema 1 (docs/howto/add-gpu.md): the MIG profiles and placements as NVML
reports them, the clocks and power limits, and a power model that is either *estimated* (linear from the idle
power to the enforced power limit, said in the entry) or read from a ``gpu calibrate`` CSV.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wattsched.hardware.fit_power import fit_curve
from wattsched.hardware.gpu.backend import GpuBackend, GpuError
from wattsched.hardware.gpu.fake import parse_profiles

__all__ = ["MeasuredCurve", "catalogue_id", "catalogue_toml", "record_facts", "record_machine"]

#: Seconds a repartition takes, the value P1 uses (docs/concepts/mig-model.md); NVML gives no figure for it.
REPARTITION_S = 4.0


def record_facts(backend: GpuBackend, index: int, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """Everything the fake needs to replay GPU ``index`` (read-only; the power read now is the 'idle' one)."""
    identity = backend.identity(index)
    limits = backend.power_limits(index)
    clocks = backend.clocks(index)
    supported = backend.supported_clocks_mhz(index)
    energy_j = backend.energy_j(index)
    current, pending = backend.mig_mode(index)
    profiles = backend.profiles(index)
    stamp = (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds")
    return {
        "recorded_by": f"wattsched gpu record ({backend.name})",
        "recorded_at": stamp,
        "errors": {},
        "driver": identity.driver,
        "name": identity.name,
        "architecture": identity.architecture,
        "compute_capability": list(identity.compute_capability) if identity.compute_capability else None,
        "memory_total_bytes": identity.memory_total_bytes,
        "multiprocessor_count": identity.multiprocessor_count,
        "mig_mode_current_pending": [int(current), int(pending)],
        "power_limit_constraints_mw": [round(limits.min_w * 1000), round(limits.max_w * 1000)],
        "power_limit_default_mw": round(limits.default_w * 1000),
        "power_limit_enforced_mw": round(limits.enforced_w * 1000),
        "power_usage_idle_mw": round(backend.power_w(index) * 1000),
        "energy_counter_mj_start": None if energy_j is None else round(energy_j * 1000),
        "clock_sm_now_mhz": clocks.sm_now_mhz,
        "clock_mem_now_mhz": clocks.mem_now_mhz,
        "clock_sm_max_mhz": clocks.sm_max_mhz,
        "clock_mem_max_mhz": clocks.mem_max_mhz,
        "clock_sm_default_app_mhz": clocks.sm_default_mhz,
        "clock_mem_default_app_mhz": clocks.mem_default_mhz,
        "supported_mem_clocks_mhz": sorted(supported, reverse=True),
        "supported_graphics_clocks_mhz": {
            str(mem): list(graphics) for mem, graphics in sorted(supported.items(), reverse=True)
        },
        "gpu_instance_profiles": {
            str(p.profile_index): {
                "id": p.nvml_id,
                "sliceCount": p.compute,
                "instanceCount": p.instance_count,
                "multiprocessorCount": p.sms,
                "memorySizeMB": p.memory_mb,
                "name": f"MIG {p.name}",
                "placements": [list(pair) for pair in p.placements],
            }
            for p in profiles
        },
        "mig_instances": [
            {
                "id": i.instance_id,
                "profile_id": i.profile_id,
                "start": i.start,
                "size": i.size,
                "compute_instance_ids": list(i.compute_instance_ids),
            }
            for i in backend.gpu_instances(index)
        ],
    }


def record_machine(backend: GpuBackend) -> dict[str, Any]:
    """One GPU: its facts object (the H200 file's form); several: ``{"devices": [facts, ...]}``."""
    devices = [record_facts(backend, index) for index in range(backend.device_count())]
    if not devices:
        raise GpuError(f"{backend.name}: no GPU to record")
    return devices[0] if len(devices) == 1 else {"devices": devices}


def catalogue_id(name: str, memory_total_bytes: int) -> str:
    """A short catalogue id from the NVML name and memory: ``NVIDIA H200`` + 140.4 GiB → ``h200-141gb``.

    The model is the first word after ``NVIDIA`` up to a dash (``A100-SXM4-40GB`` → ``a100``); the memory is
    the total in GiB rounded up (40 GiB → 40, 79.6 → 80, 140.4 → 141), which gives the marketed sizes.
    """
    words = [w for w in name.split() if w.upper() != "NVIDIA"] or ["gpu"]
    model = re.sub(r"[^a-z0-9]", "", words[0].split("-")[0].lower()) or "gpu"
    return f"{model}-{math.ceil(memory_total_bytes / 2**30 - 1e-9)}gb"


@dataclass(frozen=True)
class MeasuredCurve:
    """Measured power against busy compute slices: ``power_w[u]`` for u = 0 (idle) .. compute slices.

    ``throttled[u]``: the level ran at a lowered SM clock (the card at its power cap); the catalogue's curve
    is the uncapped power, so such levels are left out of the fit.
    """

    name: str
    power_w: tuple[float, ...]
    source: str
    throttled: tuple[bool, ...] = ()


def _text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a TOML basic string


def _numbers(values: Sequence[float]) -> str:
    return "[" + ", ".join(str(v) if isinstance(v, int) else repr(round(v, 3)) for v in values) + "]"


def catalogue_toml(
    facts: Mapping[str, Any],
    *,
    where: str,
    curves: Sequence[MeasuredCurve] = (),
    today: dt.date | None = None,
) -> str:
    """A catalogue entry (schema 1) for the GPU of ``facts`` (one device of a recording)."""
    profiles = parse_profiles(facts.get("gpu_instance_profiles", {}), where)
    if not profiles:
        raise GpuError(
            f"{facts.get('name')}: NVML reports no MIG profiles, so there is no catalogue entry to "
            "write (a MIG-capable GPU is needed)"
        )
    slots = max(start + size for p in profiles for start, size in p.placements)
    slices = max(p.compute for p in profiles)
    memory_mb = int(facts["memory_total_bytes"]) // 2**20
    sms = facts.get("multiprocessor_count") or max(p.sms for p in profiles)
    date = (today or dt.date.today()).isoformat()
    name = str(facts["name"])
    driver = facts.get("driver", "unknown")
    source = f"NVML read-out of {name} (driver {driver}) on {date} (wattsched gpu snapshot)"
    lines = [
        f"# Catalogue entry written by `wattsched gpu snapshot` from {where} on {date}.",
        "# Profiles, placements, memory, SMs, clocks and power limits: NVML, as read on that GPU.",
        f"# repartition_s: {REPARTITION_S} s, P1's figure for the A100 (NVML gives none).",
        "schema = 1",
        "",
        "[gpu]",
        f"name = {_text(name)}",
        f"catalogue = {_text(catalogue_id(name, int(facts['memory_total_bytes'])))}",
        f"compute_slices = {slices}",
        f"memory_slots = {slots}",
        f"memory_mb = {memory_mb}",
        f"sms = {int(sms)}",
        f"repartition_s = {REPARTITION_S}",
        f"sources = [{_text(source)}]",
    ]
    for p in sorted(profiles, key=lambda p: (p.compute, p.memory_slots, p.media, p.nvml_id)):
        lines += [
            "",
            "[[profile]]",
            f"name = {_text(p.name)}",
            f"nvml_id = {p.nvml_id}",
            f"compute = {p.compute}",
            f"memory_slots = {p.memory_slots}",
            f"sms = {p.sms}",
            f"memory_mb = {p.memory_mb}",
            "placements = [" + ", ".join(f"[{s}, {n}]" for s, n in sorted(set(p.placements))) + "]",
        ]
        if p.instance_count < len(set(p.placements)):  # NVML: fewer instances than placements (+me: one)
            lines.append(f"max_instances = {p.instance_count}")
        if p.media:
            lines.append("media = true")
    lines += _power_lines(facts, slices, curves)
    lines += _clock_lines(facts)
    return "\n".join(lines) + "\n"


def _power_lines(facts: Mapping[str, Any], slices: int, curves: Sequence[MeasuredCurve]) -> list[str]:
    cap_w = float(facts["power_limit_enforced_mw"]) / 1000.0
    if not curves:
        idle_w = float(facts.get("power_usage_idle_mw", 0.0)) / 1000.0
        busy = [idle_w + (cap_w - idle_w) * u / slices for u in range(1, slices + 1)]
        return [
            "",
            "[power]",
            f"idle_w = {round(idle_w, 3)!r}",
            f"cap_w = {cap_w!r}",
            "estimated = true",
            'note = "busy curve estimated: linear from idle to the power limit (no calibration)"',
            'default_curve = "linear"',
            "",
            "[power.curves.linear]",
            f"busy_w = {_numbers(busy)}",
            'source = "estimate: linear from the idle power read by NVML to the enforced power limit"',
        ]
    for curve in curves:
        if len(curve.power_w) != slices + 1:
            raise GpuError(
                f"power curve '{curve.name}' has {len(curve.power_w) - 1} busy levels; this GPU has "
                f"{slices} compute slices (busy_units 0..{slices} are needed)"
            )
    idle_w = sum(curve.power_w[0] for curve in curves) / len(curves)
    lines = [
        "",
        "[power]",
        f"idle_w = {round(idle_w, 3)!r}",
        f"cap_w = {cap_w!r}",
        "estimated = false",
        "# idle_w: the calibration's idle level (CUDA context open). busy_w: the measured levels fitted as",
        "# the catalogue's own entries are (hardware/fit_power.py): levels at a lowered SM clock dropped,",
        "# made non-decreasing (pool adjacent violators), read at u/U busy slices.",
        f"default_curve = {_text(curves[0].name)}",
    ]
    for curve in curves:
        throttled = curve.throttled or (False,) * len(curve.power_w)
        points = [(u / slices, curve.power_w[u], throttled[u]) for u in range(1, slices + 1)]
        try:
            busy = [max(value, idle_w) for value in fit_curve(points, slices)]
        except ValueError as exc:
            raise GpuError(f"power curve '{curve.name}': {exc}") from None
        lines += [
            "",
            f"[power.curves.{curve.name}]",
            f"busy_w = {_numbers(busy)}",
            f"source = {_text(curve.source)}",
        ]
    return lines


def _clock_lines(facts: Mapping[str, Any]) -> list[str]:
    supported = {int(k): v for k, v in (facts.get("supported_graphics_clocks_mhz") or {}).items()}
    if not supported:
        return []
    default_mem = int(facts.get("clock_mem_default_app_mhz") or max(supported))
    sm = sorted(supported.get(default_mem, supported[max(supported)]), reverse=True)
    low, high = facts["power_limit_constraints_mw"]
    return [
        "",
        "[clocks]",
        f"sm_mhz = {_numbers(sm)}",
        f"mem_mhz = {_numbers(sorted(supported, reverse=True))}",
        f"default_sm_mhz = {int(facts.get('clock_sm_default_app_mhz') or sm[0])}",
        f"default_mem_mhz = {default_mem}",
        f"power_limit_w = {float(facts['power_limit_enforced_mw']) / 1000.0!r}",
        f"power_limit_min_w = {float(low) / 1000.0!r}",
        f"power_limit_max_w = {float(high) / 1000.0!r}",
    ]
