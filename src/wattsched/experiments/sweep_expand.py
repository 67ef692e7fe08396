"""Expand a validated sweep spec into its cells, resolving every name and file (docs/howto/sweep.md).

Checks made here, each one :class:`~wattsched.errors.ConfigError` naming the sweep file and the key: the cell
limit (from the list lengths, before any cell is built), GPUs (catalogue names or TOML files), each GPU's
configurations, policies, partitioners, profiles, trace and GPU files (relative to the sweep file), the DVFS
grid's values. Files enter the cells with a digest of their bytes, so an edited file is a new cell.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any

from wattsched.errors import ConfigError, WattschedError
from wattsched.experiments.sweep import MAX_CELLS, PARTITIONER_CHOICES, SweepSpec, WorkloadTable
from wattsched.experiments.sweep_cells import DvfsRunCell, MigRunCell, WorkloadCell
from wattsched.plugins import PluginReference, factory_source_digest, load_plugins, plugin_references

__all__ = ["cell_count", "expand_sweep"]


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _resolve_file(value: str, base: Path, where: str, key: str) -> Path:
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise ConfigError(f"{where}: key '{key}': no such file '{value}' (relative paths start at {base})")
    return path


def _gpu_reference(name: str, base: Path, where: str) -> tuple[str, str]:
    """(what the cell loads, a digest of the file for TOML paths, else "")."""
    if name.endswith(".toml"):
        path = _resolve_file(name, base, where, "gpus")
        return str(path), _file_digest(path)
    return name, ""


def _workloads(spec: SweepSpec, base: Path, where: str, hours: float | None) -> list[WorkloadCell]:
    """The workload cells of every table, in file order (a rate-multiplier list expands in place)."""
    tables = spec.workload_tables()
    names = ["workload"] if spec.workload is not None else [f"workloads[{i}]" for i in range(len(tables))]
    return [
        cell
        for table, name in zip(tables, names, strict=True)
        for cell in _table_workloads(table, name, base, where, hours)
    ]


def _table_workloads(
    table: WorkloadTable, name: str, base: Path, where: str, hours: float | None
) -> list[WorkloadCell]:
    from wattsched.experiments.presets import get_preset
    from wattsched.workload.arrivals import PROFILES

    sources = [k for k in ("profile", "rate_per_min", "trace") if getattr(table, k) is not None]
    if len(sources) != 1:
        raise ConfigError(f"{where}: key '{name}': give exactly one of profile, rate_per_min, trace")
    preset = get_preset(table.preset)
    if table.trace is not None:
        if hours is not None:
            raise ConfigError(f"{where}: --hours applies to generated workloads, not to a trace")
        stray = [k for k in ("rate_multiplier", "hours") if getattr(table, k) is not None]
        if stray:
            raise ConfigError(f"{where}: key '{name}.{stray[0]}' only applies to generated workloads")
        path = _resolve_file(table.trace, base, where, f"{name}.trace")
        return [WorkloadCell(trace=str(path), trace_digest=_file_digest(path), horizon_s=table.horizon_s)]
    if table.horizon_s is not None:
        raise ConfigError(f"{where}: key '{name}.horizon_s' only applies to a trace (generated: hours)")
    if table.profile is not None and table.profile not in PROFILES:
        close = difflib.get_close_matches(table.profile, PROFILES.available(), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f"; valid: {', '.join(PROFILES.available())}"
        raise ConfigError(f"{where}: key '{name}.profile': unknown profile '{table.profile}'{hint}")
    default_multiplier = preset.rate_multiplier if table.profile is not None else 1.0
    multipliers = table.rate_multiplier if table.rate_multiplier is not None else default_multiplier
    default_hours = preset.day_hours if table.profile is not None else preset.table2_hours
    window_h = hours if hours is not None else table.hours if table.hours is not None else default_hours
    return [
        WorkloadCell(
            profile=table.profile,
            rate_per_min=table.rate_per_min,
            rate_multiplier=float(m),
            hours=float(window_h),
            inference_share=table.inference_share,
            deadline_rule=table.deadline_rule,
        )
        for m in (multipliers if isinstance(multipliers, list) else [multipliers])
    ]


def _partitioner_choices() -> tuple[str, ...]:
    """The built-in partitioners a sweep runs, then those plug-ins registered (run with their defaults)."""
    from wattsched.mig.partition import PARTITIONERS

    return (*PARTITIONER_CHOICES, *(n for n in PARTITIONERS.available() if n not in _NOT_IN_SWEEPS))


#: Registered partitioners a sweep cannot run: ``rollout`` and ``dynamic`` need a base policy or a model.
_NOT_IN_SWEEPS = frozenset({*PARTITIONER_CHOICES, "rollout", "dynamic"})


def _plugin_codes(spec: SweepSpec) -> dict[str, str]:
    """The source digest of the plug-in module each of the sweep's policies, partitioners and GPUs comes
    from, by ``kind:name`` ("" for wattsched's own); computed once per sweep."""
    from wattsched.hardware.catalogue import PLUGIN_GPUS
    from wattsched.mig.partition import PARTITIONERS
    from wattsched.mig.policies import POLICIES

    codes = {f"policy:{p}": factory_source_digest(POLICIES.factory(p)) for p in spec.policies or []}
    for partitioner in spec.partitioners or []:
        plugin = partitioner not in PARTITIONER_CHOICES
        codes[f"partitioner:{partitioner}"] = (
            factory_source_digest(PARTITIONERS.factory(partitioner)) if plugin else ""
        )
    for gpu in spec.gpus or []:
        codes[f"gpu:{gpu}"] = factory_source_digest(PLUGIN_GPUS.factory(gpu)) if gpu in PLUGIN_GPUS else ""
    return codes


def _joined(*codes: str) -> str:
    return "+".join(code for code in codes if code)


def _mig_cells(
    spec: SweepSpec, base: Path, where: str, hours: float | None, plugins: tuple[PluginReference, ...]
) -> list[MigRunCell]:
    from wattsched.hardware.catalogue import load_gpu
    from wattsched.mig.partition.base import check_workload_source
    from wattsched.mig.simulator import resolve_policy

    if spec.gpus is None:
        return []
    for policy in spec.policies or []:
        try:
            resolve_policy(policy)
        except WattschedError as exc:
            raise ConfigError(f"{where}: key 'policies': {exc}") from None
    choices = _partitioner_choices() if spec.partitioners else PARTITIONER_CHOICES
    for partitioner in spec.partitioners or []:
        if partitioner not in choices:
            close = difflib.get_close_matches(partitioner, choices, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(
                f"{where}: key 'partitioners': unknown partitioner '{partitioner}'{hint}; "
                f"valid: {', '.join(choices)}"
            )
    workloads = _workloads(spec, base, where, hours)
    for partitioner in spec.partitioners or []:
        for workload in workloads:
            try:
                check_workload_source(partitioner, workload.trace)
            except WattschedError as exc:
                raise ConfigError(f"{where}: key 'partitioners': {exc}") from None
    codes = _plugin_codes(spec)
    cells: list[MigRunCell] = []
    for name in spec.gpus:
        reference, digest = _gpu_reference(name, base, where)
        try:
            gpu = load_gpu(reference)
        except WattschedError as exc:
            raise ConfigError(f"{where}: key 'gpus': {exc}") from None
        configurations = []
        for configuration in spec.configurations or []:
            try:
                configurations.append(gpu.configuration(configuration).ident)
            except WattschedError:
                valid = ", ".join(str(c) for c in gpu.configuration_ids)
                raise ConfigError(
                    f"{where}: key 'configurations': GPU '{name}' has no configuration {configuration!r}; "
                    f"valid: {valid}"
                ) from None
        for workload in workloads:
            for seed in spec.seeds:
                for configuration in configurations:
                    for policy in spec.policies or []:
                        code = _joined(codes[f"gpu:{name}"], codes[f"policy:{policy}"])
                        cells.append(
                            MigRunCell(
                                name,
                                reference,
                                digest,
                                str(configuration),
                                policy,
                                "none",
                                workload,
                                seed,
                                code,
                                plugins,
                            )
                        )
                for partitioner in spec.partitioners or []:
                    code = _joined(codes[f"gpu:{name}"], codes[f"partitioner:{partitioner}"])
                    cells.append(
                        MigRunCell(
                            name, reference, digest, "", "", partitioner, workload, seed, code, plugins
                        )
                    )
    return cells


def _dvfs_cells(spec: SweepSpec, base: Path, where: str) -> list[DvfsRunCell]:
    from wattsched.dvfs.cluster import MAX_PAIRS
    from wattsched.hardware.dvfs import load_dvfs_gpu

    grid = spec.dvfs
    if grid is None:
        return []
    reference, digest = grid.gpu, ""
    if grid.gpu.endswith(".toml"):
        path = _resolve_file(grid.gpu, base, where, "dvfs.gpu")
        reference, digest = str(path), _file_digest(path)
    try:
        load_dvfs_gpu(reference)
    except WattschedError as exc:
        raise ConfigError(f"{where}: key 'dvfs.gpu': {exc}") from None
    checks = (
        ("util", grid.util, lambda v: 0 < v < float("inf"), "> 0"),
        ("pairs", grid.pairs, lambda v: 1 <= v <= MAX_PAIRS, f"in [1, {MAX_PAIRS:,}]"),
        ("pairs_per_server", grid.pairs_per_server, lambda v: v >= 1, ">= 1"),
        ("theta", grid.theta, lambda v: 0 < v <= 1, "in (0, 1]"),
    )
    for key, values, ok, rule in checks:
        bad = [v for v in values if not ok(v)]
        if bad:
            raise ConfigError(f"{where}: key 'dvfs.{key}': every value must be {rule}, got {bad[0]}")
    cells = []
    for mode in grid.mode:
        for util in grid.util:
            for pairs in grid.pairs:
                for l in grid.pairs_per_server:
                    if pairs % l:
                        raise ConfigError(
                            f"{where}: key 'dvfs.pairs_per_server': {l} does not divide pairs = {pairs} "
                            "(a server always holds l pairs)"
                        )
                    for seed in spec.seeds:
                        for algo in grid.algos:
                            for theta in grid.theta:
                                for on in grid.dvfs:
                                    cells.append(
                                        DvfsRunCell(
                                            grid.gpu,
                                            reference,
                                            digest,
                                            mode,
                                            float(util),
                                            pairs,
                                            l,
                                            algo,
                                            float(theta),
                                            on,
                                            seed,
                                        )
                                    )
    return cells


def expand_sweep(
    spec: SweepSpec,
    base: Path,
    where: str = "<sweep>",
    *,
    hours: float | None = None,
    confirm: bool = False,
    max_cells: int | None = None,
) -> list[MigRunCell | DvfsRunCell]:
    """Every cell of the sweep, in file order (GPU, workload, seed, configuration, policy; then DVFS).

    ``hours`` overrides the arrival window of generated workloads (a short sweep for a quick look). More
    than ``max_cells`` cells (default :data:`~wattsched.experiments.sweep.MAX_CELLS`, 10,000) raise a
    ConfigError unless ``confirm``; the count is checked before any cell is built. The spec's ``plugins``
    are imported first; every MIG cell carries the plug-in modules loaded in this process, for workers.
    """
    count = cell_count(spec)
    limit = MAX_CELLS if max_cells is None else max_cells
    if count > limit and not confirm:
        raise ConfigError(
            f"{where}: the cross product has {count:,} cells, more than the limit of {limit:,}; "
            "shorten a list or pass --yes"
        )
    if spec.plugins:
        load_plugins(spec.plugins, base=base, where=f"{where}: key 'plugins':")
    cells: list[MigRunCell | DvfsRunCell] = [
        *_mig_cells(spec, base, where, hours, plugin_references()),
        *_dvfs_cells(spec, base, where),
    ]
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"{where}: two entries name the same run (e.g. a GPU listed by name and by file)")
    return cells


def cell_count(spec: SweepSpec) -> int:
    """The number of cells, from the list lengths alone."""
    total = 0
    if spec.gpus is not None:
        workloads = sum(
            len(t.rate_multiplier) if isinstance(t.rate_multiplier, list) else 1
            for t in spec.workload_tables()
        )
        fixed = len(spec.configurations or []) * len(spec.policies or [])
        total += len(spec.gpus) * workloads * len(spec.seeds) * (fixed + len(spec.partitioners or []))
    if spec.dvfs is not None:
        grid = spec.dvfs
        total += len(spec.seeds) * _product(
            grid.mode, grid.util, grid.pairs, grid.pairs_per_server, grid.algos, grid.theta, grid.dvfs
        )
    return total


def _product(*lists: list[Any]) -> int:
    result = 1
    for values in lists:
        result *= len(values)
    return result
