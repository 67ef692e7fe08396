"""Sweep files (CONTRACT §9): a typed, validated TOML spec expanded into independent cells.

A sweep file names lists; the sweep is their cross product. Its MIG part::

    gpus = ["a100-40gb", "h200-141gb"]     # catalogue names or catalogue TOML files
    configurations = [3, "no-mig"]         # ids as `wattsched mig configs --gpu G` lists them
    policies = ["edf-fs", "edf-ss"]        # in-configuration schedulers
    partitioners = ["static", "day-night"] # optional: repartitioning methods, each run as a whole day
    seeds = [1, 2]
    [workload]
    profile = "alibaba-day"                # or rate_per_min = 0.5, or trace = "FILE" (CONTRACT §3)
    rate_multiplier = 2.5                  # a number or a list (an axis); default: the preset's
    preset = "paper"                       # paper | literal (default literal, as `mig run`)
    hours = 24                             # arrival window; default 24 (profile) or the preset's queue length

Several workloads are an array of tables, ``[[workloads]]``, each with the keys of ``[workload]``. MIG cells are ``gpus × configurations × policies × workloads × seeds`` plus ``gpus × partitioners ×
workloads × seeds``; a partitioner chooses its own configurations (the GPU's roles) and scheduler. The DVFS
part (P2) is a ``[dvfs]`` table of lists — ``mode``, ``util``, ``pairs``, ``pairs_per_server``, ``algos``,
``theta``, ``dvfs`` (true/false) — crossed with ``seeds``. Relative file paths are taken from the sweep file's
folder. Every mistake is one :class:`~wattsched.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

import difflib
import hashlib
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wattsched.errors import ConfigError, WattschedError
from wattsched.experiments.sweep_cells import DvfsRunCell, MigRunCell, WorkloadCell

__all__ = [
    "MAX_CELLS",
    "PARTITIONER_CHOICES",
    "DvfsGrid",
    "SweepSpec",
    "WorkloadTable",
    "expand_sweep",
    "load_sweep",
    "validate_sweep",
]

#: A sweep of more cells than this needs ``--yes`` (``confirm=True``).
MAX_CELLS = 10_000
#: Partitioners a sweep can run (``dynamic`` needs a trained model and is left to ``mig evaluate``).
PARTITIONER_CHOICES = ("no-mig", "static", "day-night", "lookahead")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkloadTable(_Strict):
    """``[workload]``: exactly one of ``profile``, ``rate_per_min``, ``trace`` (units: jobs/min, hours, s)."""

    profile: str | None = None
    rate_per_min: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    trace: str | None = None
    rate_multiplier: float | list[float] | None = None
    preset: Literal["paper", "literal"] = "literal"
    hours: float | None = Field(default=None, gt=0, le=24 * 365, allow_inf_nan=False)
    inference_share: float = Field(default=0.8, ge=0, le=1)
    deadline_rule: Literal["p1", "slice-aware"] = "p1"
    horizon_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @field_validator("rate_multiplier")
    @classmethod
    def _positive(cls, value: float | list[float] | None) -> float | list[float] | None:
        values = value if isinstance(value, list) else [] if value is None else [value]
        if isinstance(value, list) and not value:
            raise ValueError("List should have at least 1 item after validation, not 0")
        if any(not (v > 0 and v < float("inf")) for v in values):
            raise ValueError(f"every rate multiplier must be a finite number > 0, got {value}")
        if len(set(values)) != len(values):
            raise ValueError(f"duplicate entries in {values}")
        return value


class DvfsGrid(_Strict):
    """``[dvfs]``: lists crossed with the sweep's seeds; P2's rules and the GPU's cluster constants."""

    gpu: str = "gtx1080ti"
    mode: list[Literal["offline", "online"]] = Field(default=["offline"], min_length=1)
    util: list[float] = Field(min_length=1)
    pairs: list[int] = Field(default=[256], min_length=1)
    pairs_per_server: list[int] = Field(default=[1], min_length=1)
    algos: list[Literal["edl", "edf-bf", "edf-wf", "lpt-ff", "bin"]] = Field(default=["edl"], min_length=1)
    theta: list[float] = Field(default=[1.0], min_length=1)
    dvfs: list[bool] = Field(default=[True, False], min_length=1)

    @field_validator("mode", "util", "pairs", "pairs_per_server", "algos", "theta", "dvfs")
    @classmethod
    def _unique(cls, values: list[Any]) -> list[Any]:
        if len(set(values)) != len(values):
            raise ValueError(f"duplicate entries in {values}")
        return values


class SweepSpec(_Strict):
    """A whole sweep file; see the module docstring. ``source`` is the file's folder (for relative paths)."""

    name: str = "sweep"
    gpus: list[str] | None = Field(default=None, min_length=1)
    configurations: list[int | str] | None = Field(default=None, min_length=1)
    policies: list[str] | None = Field(default=None, min_length=1)
    partitioners: list[str] | None = Field(default=None, min_length=1)
    seeds: list[int] = Field(min_length=1)
    workload: WorkloadTable | None = None
    workloads: list[WorkloadTable] | None = Field(default=None, min_length=1)
    dvfs: DvfsGrid | None = None

    def workload_tables(self) -> list[WorkloadTable]:
        """``[workload]`` or the ``[[workloads]]`` tables (empty without a MIG part)."""
        return [self.workload] if self.workload is not None else list(self.workloads or [])

    @field_validator("gpus", "configurations", "policies", "partitioners", "seeds")
    @classmethod
    def _unique(cls, values: list[Any] | None) -> list[Any] | None:
        if values is not None and len({str(v) for v in values}) != len(values):
            raise ValueError(f"duplicate entries in {values}")
        return values

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, values: list[int]) -> list[int]:
        if any(v < 0 or v >= 2**32 for v in values):
            raise ValueError(f"seeds must be in [0, 2**32), got {values}")
        return values


def _known_keys(model: type[BaseModel], location: tuple[Any, ...]) -> list[str]:
    if location and location[0] in ("workload", "workloads", "dvfs"):
        model = DvfsGrid if location[0] == "dvfs" else WorkloadTable
    return list(model.model_fields)


def _one_line(error: ValidationError, where: str) -> ConfigError:
    item = error.errors()[0]
    location = tuple(item["loc"])
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in location).lstrip(".") or "(top level)"
    if item["type"] == "extra_forbidden":
        name = str(location[-1])
        close = difflib.get_close_matches(name, _known_keys(SweepSpec, location[:-1]), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return ConfigError(f"{where}: unknown key '{key}'{hint}")
    if item["type"] == "missing":
        return ConfigError(f"{where}: key '{key}' is required")
    message = str(item["msg"]).replace("Value error, ", "")
    return ConfigError(f"{where}: key '{key}': {message}")


def validate_sweep(data: dict[str, Any], where: str = "<sweep>") -> SweepSpec:
    """Validate a mapping as a :class:`SweepSpec`: types, empty lists, the parts a sweep needs, and every
    name (GPU, configuration of each GPU, policy, partitioner, profile). One-line ConfigError otherwise."""
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise _one_line(exc, where) from None
    mig_keys = [
        k
        for k in ("gpus", "configurations", "policies", "partitioners", "workload", "workloads")
        if k in data
    ]
    if not mig_keys and spec.dvfs is None:
        raise ConfigError(f"{where}: nothing to run: give the MIG keys (gpus, ...) and/or a [dvfs] table")
    if mig_keys:
        if spec.gpus is None:
            raise ConfigError(f"{where}: key 'gpus' is required for the MIG part")
        if (spec.workload is None) == (spec.workloads is None):
            raise ConfigError(f"{where}: key 'workload': give one [workload] table or [[workloads]] tables")
        if spec.partitioners is None and (spec.configurations is None or spec.policies is None):
            missing = "configurations" if spec.configurations is None else "policies"
            raise ConfigError(f"{where}: key '{missing}' is required (or give 'partitioners')")
        if (spec.configurations is None) != (spec.policies is None):
            given = "configurations" if spec.policies is None else "policies"
            other = "policies" if given == "configurations" else "configurations"
            raise ConfigError(f"{where}: key '{given}' needs key '{other}' too")
    return spec


def load_sweep(path: str | Path) -> tuple[SweepSpec, Path]:
    """Read and validate a sweep file; returns the spec and the folder relative paths are taken from."""
    file = Path(path)
    where = str(file)
    if file.is_dir():
        raise ConfigError(f"{where}: is a directory, not a sweep file")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such sweep file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read the sweep file: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    return validate_sweep(data, where), file.resolve().parent


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


def _mig_cells(spec: SweepSpec, base: Path, where: str, hours: float | None) -> list[MigRunCell]:
    from wattsched.hardware.catalogue import load_gpu
    from wattsched.mig.simulator import resolve_policy

    if spec.gpus is None:
        return []
    for policy in spec.policies or []:
        try:
            resolve_policy(policy)
        except WattschedError as exc:
            raise ConfigError(f"{where}: key 'policies': {exc}") from None
    for partitioner in spec.partitioners or []:
        if partitioner not in PARTITIONER_CHOICES:
            close = difflib.get_close_matches(partitioner, PARTITIONER_CHOICES, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(
                f"{where}: key 'partitioners': unknown partitioner '{partitioner}'{hint}; "
                f"valid: {', '.join(PARTITIONER_CHOICES)}"
            )
    workloads = _workloads(spec, base, where, hours)
    if "lookahead" in (spec.partitioners or []) and any(w.trace is not None for w in workloads):
        raise ConfigError(
            f"{where}: key 'partitioners': lookahead needs a generated workload (its pilot days are drawn "
            "from it), not a trace"
        )
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
                        cells.append(
                            MigRunCell(
                                name, reference, digest, str(configuration), policy, "none", workload, seed
                            )
                        )
                for partitioner in spec.partitioners or []:
                    cells.append(MigRunCell(name, reference, digest, "", "", partitioner, workload, seed))
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
    max_cells: int = MAX_CELLS,
) -> list[MigRunCell | DvfsRunCell]:
    """Every cell of the sweep, in file order (GPU, workload, seed, configuration, policy; then DVFS).

    ``hours`` overrides the arrival window of generated workloads (a short sweep for a quick look). More
    than ``max_cells`` cells raise a ConfigError unless ``confirm``; the count is checked before any
    cell is built.
    """
    count = _count(spec)
    if count > max_cells and not confirm:
        raise ConfigError(
            f"{where}: the cross product has {count:,} cells, more than the limit of {max_cells:,}; "
            "shorten a list or pass --yes"
        )
    cells: list[MigRunCell | DvfsRunCell] = [
        *_mig_cells(spec, base, where, hours),
        *_dvfs_cells(spec, base, where),
    ]
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"{where}: two entries name the same run (e.g. a GPU listed by name and by file)")
    return cells


def _count(spec: SweepSpec) -> int:
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
