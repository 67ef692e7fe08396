"""Parsing a MIG GPU catalogue entry (schema 1, ``hardware/data/gpus/README.md``) into a :class:`MigGpu`."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from wattsched.errors import ConfigError
from wattsched.hardware._toml import CatalogueError, Table
from wattsched.hardware.mig import Clocks, MigGpu
from wattsched.hardware.partitions import validate_placement
from wattsched.hardware.power import KINDS, PowerCurve, PowerModel
from wattsched.hardware.profiles import InstanceProfile

__all__ = ["parse_gpu"]

_TOP = ("schema", "gpu", "profile", "configuration", "roles", "power", "clocks")
ROLES = ("static", "day", "night", "initial")
_GPU = (
    "name",
    "catalogue",
    "compute_slices",
    "memory_slots",
    "memory_mb",
    "sms",
    "repartition_s",
    "full_gpu_speedup",
    "sources",
)
_PROFILE = (
    "name",
    "nvml_id",
    "compute",
    "memory_slots",
    "sms",
    "memory_mb",
    "placements",
    "max_instances",
    "media",
)
_POWER = (
    "idle_w",
    "cap_w",
    "cap_speed_exponent",
    "estimated",
    "note",
    "default_curve",
    "curves",
    "kinds",
    "sources",
)


def parse_gpu(data: dict[str, Any], where: str) -> MigGpu:
    top = Table(data, where)
    top.check_keys(_TOP)
    schema = top.integer("schema", 1)
    if schema != 1:
        raise top.error("schema", f"unsupported schema {schema} (this wattsched reads schema 1)")
    gpu = top.table("gpu")
    assert gpu is not None
    gpu.check_keys(_GPU)
    compute_slices = gpu.integer("compute_slices", low=1, high=64)
    memory_slots = gpu.integer("memory_slots", low=1, high=64)
    profiles = tuple(_profile(t, compute_slices, memory_slots) for t in top.tables("profile"))
    names = [p.name for p in profiles]
    if len(set(names)) != len(names):
        raise top.error("profile", f"duplicate profile names in {names}")
    power_table = top.table("power")
    assert power_table is not None
    power = _power(power_table, compute_slices)
    named = tuple(_named(t) for t in top.tables("configuration")) if top.has("configuration") else ()
    result = MigGpu(
        name=gpu.string("catalogue"),
        product=gpu.string("name"),
        compute_slices=compute_slices,
        memory_slots=memory_slots,
        memory_mb=gpu.integer("memory_mb", low=1),
        sms=gpu.integer("sms", low=1),
        repartition_s=gpu.number("repartition_s", 4.0, low=0.0, high=86_400.0),
        profiles=profiles,
        named=named,
        power=power,
        clocks=_clocks(top.table("clocks", required=False)),
        roles=_roles(top.table("roles", required=False)),
        full_gpu_speedup=gpu.number("full_gpu_speedup", 1.06, low=1.0, high=10.0),
        sources=gpu.strings("sources", []),
        path=where,
    )
    _check_configurations(result, top, where)
    return result


def _profile(t: Table, compute_slices: int, memory_slots: int) -> InstanceProfile:
    t.check_keys(_PROFILE)
    compute = t.integer("compute", low=1, high=compute_slices)
    size = t.integer("memory_slots", low=1, high=memory_slots)
    raw = t.data.get("placements")
    if not isinstance(raw, list) or not raw:
        raise t.error("placements", "expected a non-empty list of [start, size] pairs")
    placements = []
    for pair in raw:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in pair)
        ):
            raise t.error("placements", f"expected [start, size] integer pairs, got {pair!r}")
        start, width = pair
        if width != size or start < 0 or start + width > memory_slots:
            raise t.error(
                "placements",
                f"placement {pair} must have size {size} and lie within memory slots 0..{memory_slots - 1}",
            )
        placements.append((start, width))
    if placements != sorted(placements) or any(b[0] < a[0] + a[1] for a, b in pairwise(placements)):
        raise t.error("placements", f"placements {raw} must be in ascending start and must not overlap")
    return InstanceProfile(
        name=t.string("name"),
        nvml_id=t.integer("nvml_id", low=0),
        compute=compute,
        memory_slots=size,
        sms=t.integer("sms", low=1),
        memory_mb=t.integer("memory_mb", low=1),
        placements=tuple(placements),
        max_instances=t.integer("max_instances", len(placements), low=1, high=len(placements)),
        media=t.boolean("media", False),
    )


def _power(t: Table, units: int) -> PowerModel:
    t.check_keys(_POWER)
    idle = t.number("idle_w", low=0.0)
    cap = t.number("cap_w", positive=True) if t.has("cap_w") else None
    curves_table = t.table("curves")
    assert curves_table is not None
    curves = []
    for name in curves_table.data:
        curve = curves_table.table(name)
        assert curve is not None
        curve.check_keys(("busy_w", "source"))
        busy = curve.numbers("busy_w", length=units, low=0.0)
        if any(b < a for a, b in zip((idle, *busy), busy, strict=False)):
            raise curve.error(
                "busy_w", f"power must not fall as more slices are busy: idle {idle:g}, then {list(busy)}"
            )
        curves.append(PowerCurve(name, (idle, *busy), curve.string("source", "-")))
    if not curves:
        raise t.error("curves", "at least one curve is needed")
    kinds: list[tuple[str, str]] = []
    kinds_table = t.table("kinds", required=False)
    if kinds_table is not None:
        kinds_table.check_keys(KINDS)
        kinds = [(kind, kinds_table.string(kind)) for kind in KINDS if kinds_table.has(kind)]
    try:
        return PowerModel(
            idle_w=idle,
            curves=tuple(curves),
            default_curve=t.string("default_curve", curves[0].name),
            kind_curves=tuple(kinds),
            cap_w=cap,
            cap_speed_exponent=t.number("cap_speed_exponent", 2.0, positive=True),
            estimated=t.boolean("estimated", False),
            note=str(t.data.get("note", "")),
        )
    except ConfigError as exc:
        raise t.error("default_curve" if "default" in str(exc) else "kinds", str(exc)) from None


def _named(t: Table) -> tuple[int, tuple[str, ...], str]:
    t.check_keys(("id", "slices", "description"))
    slices = t.strings("slices")
    if not slices:
        raise t.error("slices", "a configuration needs at least one slice")
    return t.integer("id", low=1), slices, str(t.data.get("description", ""))


def _roles(t: Table | None) -> tuple[tuple[str, int | str], ...]:
    if t is None:
        return ()
    t.check_keys(ROLES)
    out: list[tuple[str, int | str]] = []
    for role in ROLES:
        if t.has(role):
            value = t.data[role]
            out.append((role, value if value == "no-mig" else t.integer(role, low=1)))
    return tuple(out)


def _clocks(t: Table | None) -> Clocks | None:
    if t is None:
        return None
    t.check_keys(
        (
            "sm_mhz",
            "mem_mhz",
            "default_sm_mhz",
            "default_mem_mhz",
            "power_limit_w",
            "power_limit_min_w",
            "power_limit_max_w",
            "sources",
        )
    )
    return Clocks(
        sm_mhz=t.integers("sm_mhz"),
        mem_mhz=t.integers("mem_mhz"),
        default_sm_mhz=t.integer("default_sm_mhz", low=1),
        default_mem_mhz=t.integer("default_mem_mhz", low=1),
        power_limit_w=t.number("power_limit_w", positive=True),
        power_limit_min_w=t.number("power_limit_min_w", positive=True),
        power_limit_max_w=t.number("power_limit_max_w", positive=True),
    )


def _check_configurations(gpu: MigGpu, top: Table, where: str) -> None:
    """Every named configuration must be placeable on this GPU (valid, non-overlapping placements), and every
    role must name one of the GPU's configurations."""
    _check_named(gpu, top, where)
    for role, ident in gpu.roles:
        try:
            gpu.configuration(ident)
        except ConfigError as exc:
            raise CatalogueError(str(exc), path=where, field=f"roles.{role}") from None


def _check_named(gpu: MigGpu, top: Table, where: str) -> None:
    if not gpu.named:
        return
    idents = [ident for ident, _, _ in gpu.named]
    if len(set(idents)) != len(idents):
        raise top.error("configuration", f"duplicate configuration ids {idents}")
    for index, (ident, names, description) in enumerate(gpu.named):
        field = f"configuration[{index}].slices"
        try:
            config = gpu.build_named(ident, names, description)
        except ConfigError as exc:
            raise CatalogueError(
                f"configuration {ident} cannot be placed: {exc}", path=where, field=field
            ) from None
        placed = [(s.profile, s.start, s.size) for s in config.slices]
        reason = validate_placement(placed, gpu.profiles, gpu.compute_slices, gpu.memory_slots)
        if reason is not None:
            raise CatalogueError(f"configuration {ident} cannot be placed: {reason}", path=where, field=field)
