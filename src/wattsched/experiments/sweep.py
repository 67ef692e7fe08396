"""Sweep files: a typed, validated TOML spec expanded into independent cells.

A sweep file names lists; the sweep is their cross product. Its MIG part::

    gpus = ["a100-40gb", "h200-141gb"]     # catalogue names or catalogue TOML files
    configurations = [3, "no-mig"]         # ids as `wattsched mig configs --gpu G` lists them
    policies = ["edf-fs", "edf-ss"]        # in-configuration schedulers
    partitioners = ["static", "day-night"] # optional: repartitioning methods, each run as a whole day
    seeds = [1, 2]
    [workload]
    profile = "alibaba-day"                # or rate_per_min = 0.5, or trace = "FILE" (schema: trace)
    rate_multiplier = 2.5                  # a number or a list (an axis); default: the preset's
    preset = "paper"                       # paper | literal (default literal, as `mig run`)
    hours = 24                             # arrival window; default 24 (profile) or the preset's queue length

Several workloads are an array of tables, ``[[workloads]]``, each with the keys of ``[workload]``.
MIG cells are ``gpus × configurations × policies × workloads × seeds`` plus ``gpus × partitioners ×
workloads × seeds``; a partitioner (no-mig, static, day-night, lookahead) chooses its own configurations (the
GPU's roles) and scheduler. On a generated workload the lookahead's ET coefficient and jobs per day come from
pilot days drawn from it; on a trace (no days to draw) every partitioner runs with its defaults, as
``wattsched mig day --trace`` runs it. A workload table's other keys: ``inference_share`` (default 0.8),
``deadline_rule`` (p1 | slice-aware, default p1), ``horizon_s`` (trace only; default its last arrival).

The DVFS part (P2) is a ``[dvfs]`` table of lists crossed with ``seeds``, each run as ``wattsched dvfs run``
with P2's rules and the GPU's cluster constants::

    [dvfs]
    gpu = "gtx1080ti"                      # DVFS catalogue name or TOML file (default gtx1080ti)
    mode = ["offline"]                     # offline | online (default ["offline"])
    util = [0.8, 1.6]                      # task-set utilisation U > 0 (required)
    pairs = [256]                          # CPU-GPU pairs (default [256])
    pairs_per_server = [1, 4]              # l, must divide pairs (default [1])
    algos = ["edl", "edf-bf"]              # edl, edf-bf, edf-wf, lpt-ff, bin (default ["edl"])
    theta = [1.0]                          # readjustment θ in (0, 1] (default [1.0])
    dvfs = [true, false]                   # DVFS on / off (default both)

Top level also takes ``name`` (a label kept in ``sweep.json``) and ``plugins``, modules imported before the
sweep's names are resolved, in this process and in every worker (a module name on the Python path or in the
sweep file's folder, or a ``.py`` file; see :mod:`wattsched.plugins`)::

    plugins = ["sjf"]                      # registers a policy "sjf" that `policies` may then name

A partitioner a plug-in registers may be listed in ``partitioners`` too (it is run with its defaults).
Relative file paths are taken from the sweep file's folder. Types are strict (``hours = "24"`` or
``seeds = [true]`` is an error, never converted; an integer is a number). Every list must be non-empty and
without duplicates; every mistake is one
:class:`~wattsched.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wattsched.errors import ConfigError

__all__ = [
    "MAX_CELLS",
    "PARTITIONER_CHOICES",
    "DvfsGrid",
    "SweepSpec",
    "WorkloadTable",
    "load_sweep",
    "validate_sweep",
]

#: A sweep of more cells than this needs ``--yes`` (``confirm=True``).
MAX_CELLS = 10_000
#: Partitioners a sweep can run (``dynamic`` needs a trained model and is left to ``mig evaluate``).
PARTITIONER_CHOICES = ("no-mig", "static", "day-night", "lookahead")


class _Strict(BaseModel):
    # strict: a value of the wrong TOML type is an error, never converted ("24" is not 24, true is not 1);
    # an integer is still accepted where a number is expected.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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
    plugins: list[str] | None = Field(default=None, min_length=1)
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

    @field_validator("plugins", "gpus", "configurations", "policies", "partitioners", "seeds")
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


_UNION_TAGS = frozenset({"int", "float", "str", "bool", "list", "none"})


def _one_line(error: ValidationError, where: str) -> ConfigError:
    item = error.errors()[0]
    # A union's error names the member it tried ('float', 'list[float]'): not a key of the file.
    location = tuple(p for p in item["loc"] if not (p in _UNION_TAGS or "[" in str(p)))
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
    """Validate a mapping as a :class:`SweepSpec`: keys, types, empty lists, duplicates and the parts a sweep
    needs (one-line ConfigError naming ``where`` and the key). Names and files (GPUs, configurations,
    policies, profiles, traces) are checked by :func:`wattsched.experiments.sweep_expand.expand_sweep`."""
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
