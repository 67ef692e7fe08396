"""Experiment grids: a validated configuration (pydantic, TOML for named studies) expanded into points.

A grid is ``policy × configuration × condition × iteration``. Common random numbers: the job queue of a
(condition, iteration) pair comes from one seed derived from (study seed, condition name, iteration) alone,
so every policy and every configuration of that pair sees the same queue.
"""

from __future__ import annotations

import tomllib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import DEFAULT_GPU

__all__ = [
    "ConditionConfig",
    "GridConfig",
    "GridPoint",
    "ScaleIterations",
    "expand_grid",
    "group_by_queue",
    "load_grid_config",
    "queue_seed",
    "validate_grid_config",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConditionConfig(_Strict):
    """One workload condition: a constant Poisson rate and an inference share (P1 Sec. V-B)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    rate_per_min: float = Field(gt=0)
    inference_share: float = Field(ge=0, le=1)
    label: str = ""


class ScaleIterations(_Strict):
    """Iterations (job queues) per condition at each scale."""

    quick: int = Field(ge=1)
    paper: int = Field(ge=1)


class GridConfig(_Strict):
    """A policy × configuration × condition × iteration grid on one GPU.

    ``configurations`` omitted: every configuration the GPU lists (``wattsched mig configs --gpu G``).
    """

    name: str = Field(min_length=1)
    seed: int = Field(ge=0)
    hours: float = Field(default=24.0, gt=0, le=24 * 365)
    policies: tuple[str, ...] = Field(min_length=1)
    gpu: str = Field(default=DEFAULT_GPU, min_length=1)
    configurations: tuple[int | str, ...] | None = Field(default=None, min_length=1)
    conditions: tuple[ConditionConfig, ...] = Field(min_length=1)
    iterations: ScaleIterations
    default_condition: str

    @field_validator("policies", "configurations")
    @classmethod
    def _unique(cls, values: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        if values is not None and len(set(values)) != len(values):
            raise ValueError(f"duplicate entries in {list(values)}")
        return values

    def configuration_ids(self) -> tuple[int | str, ...]:
        """The grid's configurations: as given, or every configuration of :attr:`gpu`."""
        if self.configurations is not None:
            return self.configurations
        from wattsched.hardware.catalogue import load_gpu

        return load_gpu(self.gpu).configuration_ids

    @model_validator(mode="after")
    def _conditions_known(self) -> GridConfig:
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate condition names in {names}")
        if self.default_condition not in names:
            raise ValueError(f"default_condition '{self.default_condition}' is not one of {names}")
        return self

    def condition(self, name: str) -> ConditionConfig:
        for condition in self.conditions:
            if condition.name == name:
                return condition
        raise ConfigError(f"unknown condition '{name}'; valid: {', '.join(c.name for c in self.conditions)}")

    def iterations_for(self, scale: str, override: int | None = None) -> int:
        if override is not None:
            if override < 1:
                raise ConfigError(f"iterations must be >= 1, got {override}")
            return override
        if scale not in ("quick", "paper"):
            raise ConfigError(f"unknown scale '{scale}'; valid: paper, quick")
        return int(getattr(self.iterations, scale))


@dataclass(frozen=True, slots=True)
class GridPoint:
    """One simulation of the grid; ``seed`` depends only on (study seed, condition, iteration)."""

    condition: str
    iteration: int
    seed: int
    policy: str
    configuration: int | str


def _one_line(error: ValidationError, where: str) -> ConfigError:
    parts = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item["loc"]) or "(top level)"
        parts.append(f"{loc}: {item['msg']}")
    return ConfigError(f"{where}: invalid study configuration: " + "; ".join(parts))


def validate_grid_config(data: Mapping[str, Any], where: str = "<config>") -> GridConfig:
    """Validate a mapping as a :class:`GridConfig`; errors become one-line :class:`ConfigError`."""
    try:
        return GridConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise _one_line(exc, where) from None


def load_grid_config(path: str | Path | Traversable) -> GridConfig:
    """Load a grid from a TOML file: a path, or a package resource (``resources.files(package) / name``)."""
    source = Path(path) if isinstance(path, str) else path
    where = str(source) if isinstance(source, Path) else source.name
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read study configuration: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    return validate_grid_config(data, where)


def queue_seed(study_seed: int, condition: str, iteration: int) -> int:
    """The seed of the job queue of (condition, iteration): a 32-bit integer, stable across runs.

    Derived through a :class:`numpy.random.SeedSequence` whose spawn key is (CRC-32 of the condition name,
    iteration), so adding or reordering conditions never changes another condition's queues.
    """
    sequence = np.random.SeedSequence(study_seed, spawn_key=(zlib.crc32(condition.encode()), iteration))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


def expand_grid(config: GridConfig, scale: str, iterations: int | None = None) -> list[GridPoint]:
    """Every simulation of the grid in a deterministic order (condition, iteration, policy, configuration)."""
    count = config.iterations_for(scale, iterations)
    points = []
    for condition in config.conditions:
        for iteration in range(count):
            seed = queue_seed(config.seed, condition.name, iteration)
            for policy in config.policies:
                for configuration in config.configuration_ids():
                    points.append(GridPoint(condition.name, iteration, seed, policy, configuration))
    return points


def group_by_queue(points: list[GridPoint]) -> dict[tuple[str, int], list[GridPoint]]:
    """Points grouped by (condition, iteration), i.e. by shared job queue, keeping their order."""
    groups: dict[tuple[str, int], list[GridPoint]] = {}
    for point in points:
        groups.setdefault((point.condition, point.iteration), []).append(point)
    return groups
