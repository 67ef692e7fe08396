"""P1's in-configuration study: Table II and Figs. 4, 6-10 (P1 Sec. V-B), per preset, rule and GPU.

The grid (``studies/table2.toml``: policies, conditions, iterations) runs once per :class:`Table2Variant`: a
preset (docs/concepts/presets.md: ``paper`` queues of 8 h, ``literal`` of 24 h at λ = 0.5/min), a deadline
rule (``p1`` or ``slice-aware``, :mod:`wattsched.workload.generators`) and a GPU (every configuration it
lists).

A cell is one (variant, condition, iteration): its job queue is generated once, from a seed that depends only
on (study seed, condition, iteration), and every policy runs on every configuration with that same queue
(common random numbers; variants of the same queue length share the jobs too, up to the deadline rule). A
cell returns one row per (policy, configuration).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from wattsched.errors import ConfigError
from wattsched.experiments.grid import GridConfig, load_grid_config, queue_seed, validate_grid_config
from wattsched.experiments.presets import DEFAULT_PRESET, get_preset
from wattsched.experiments.study import STUDIES, Row, Scale
from wattsched.hardware.catalogue import DEFAULT_GPU
from wattsched.studies.gpu_variants import variant_name, variants_with_gpus
from wattsched.workload.generators import check_deadline_rule

__all__ = [
    "BUSY_COLUMNS",
    "DEFAULT_CONFIG",
    "DEFAULT_VARIANTS",
    "Table2Cell",
    "Table2Study",
    "Table2Variant",
    "run_queue",
]

#: The grid of P1's Table II (policies, conditions, iterations), shipped beside this module.
DEFAULT_CONFIG = resources.files("wattsched.studies") / "table2.toml"

#: Seconds spent with u = 0..7 busy compute units, one column per level.
BUSY_COLUMNS: tuple[str, ...] = tuple(f"busy_time_u{u}_s" for u in range(8))


@dataclass(frozen=True)
class Table2Variant:
    """One Table II: preset × deadline rule × GPU, on ``conditions`` (``None``: every grid condition)."""

    preset: str = DEFAULT_PRESET
    deadline_rule: str = "p1"
    gpu: str = DEFAULT_GPU
    conditions: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        get_preset(self.preset)
        check_deadline_rule(self.deadline_rule)

    @property
    def name(self) -> str:
        """``paper``, ``literal``, ``paper+slice-aware``, ``paper+h200-141gb`` ..."""
        return variant_name(self.preset, self.deadline_rule, self.gpu)


def _gpu_variant(gpu: str) -> Table2Variant:
    return Table2Variant("paper", gpu=gpu, conditions=("default",))


#: Both presets on every condition; the slice-aware rule and the H200 on the default condition only.
DEFAULT_VARIANTS: tuple[Table2Variant, ...] = (
    Table2Variant("paper"),
    Table2Variant("literal"),
    Table2Variant("paper", deadline_rule="slice-aware", conditions=("default",)),
    Table2Variant("literal", deadline_rule="slice-aware", conditions=("default",)),
    Table2Variant("paper", gpu="h200-141gb", conditions=("default",)),
)


@dataclass(frozen=True)
class Table2Cell:
    """One job queue and everything needed to simulate it under every policy and configuration."""

    condition: str
    rate_per_min: float
    inference_share: float
    hours: float
    iteration: int
    seed: int
    policies: tuple[str, ...]
    configurations: tuple[int | str, ...]
    variant: str = DEFAULT_PRESET
    preset: str = DEFAULT_PRESET
    deadline_rule: str = "p1"
    gpu: str = DEFAULT_GPU

    @property
    def key(self) -> str:
        return f"{self.variant}/{self.condition}/i{self.iteration:04d}"


def run_queue(cell: Table2Cell) -> list[Row]:
    """Simulate the cell's queue under each policy × configuration (pure function of the cell)."""
    from wattsched.hardware.catalogue import load_gpu
    from wattsched.mig.simulator import simulate
    from wattsched.workload.generators import WorkloadSpec, generate_jobs
    from wattsched.workload.job import JobKind

    spec = WorkloadSpec(
        rate_per_min=cell.rate_per_min,
        hours=cell.hours,
        inference_share=cell.inference_share,
        deadline_rule=cell.deadline_rule,
    )
    gpu = load_gpu(cell.gpu)
    jobs = generate_jobs(spec, cell.seed)
    inference_jobs = sum(1 for job in jobs if job.kind == JobKind.INFERENCE)
    common: Row = {
        "variant": cell.variant,
        "preset": cell.preset,
        "deadline_rule": cell.deadline_rule,
        "gpu": cell.gpu,
        "hours": float(cell.hours),
        "condition": cell.condition,
        "iteration": cell.iteration,
        "seed": cell.seed,
    }
    rows: list[Row] = []
    for policy in cell.policies:
        for configuration in cell.configurations:
            result = simulate(jobs, configuration, policy, horizon_s=spec.horizon_s, gpu=gpu)
            row: Row = {
                **common,
                "policy": policy,
                "config": str(configuration),
                "energy_j": float(result.energy_j),
                "avg_tardiness_s": float(result.avg_tardiness_s),
                "max_tardiness_s": float(result.max_tardiness_s),
                "late_jobs": int(result.late_jobs),
                "late_inference_jobs": int(result.late_inference_jobs),
                "inference_jobs": inference_jobs,
                "jobs": int(result.jobs),
                "preemptions": int(result.preemptions),
                "end_s": float(result.end_s),
            }
            busy = tuple(result.busy_time_s) + (0.0,) * (len(BUSY_COLUMNS) - len(result.busy_time_s))
            row.update({column: float(t) for column, t in zip(BUSY_COLUMNS, busy, strict=False)})
            rows.append(row)
    return rows


class Table2Study:
    """The in-configuration study, configured by ``studies/table2.toml`` (or a given :class:`GridConfig`).

    Options (also ``wattsched reproduce --study-option table2.KEY=VALUE``): ``preset`` (the preset of the
    top-level summary keys, default ``paper``), ``variants`` (names of :data:`DEFAULT_VARIANTS` to run),
    ``iterations`` (per condition, overrides the scale), ``hours`` (overrides every preset's queue length),
    ``policies``, ``configurations`` (ids, default every configuration of each variant's GPU), ``conditions``
    (names to keep), ``gpus`` (catalogue names or TOML paths compared with the A100-40GB at the ``paper``
    preset on the default condition; default ``["h200-141gb"]``; ``wattsched reproduce --gpu``).
    """

    name = "table2"

    def __init__(
        self,
        config: GridConfig | None = None,
        *,
        preset: str = DEFAULT_PRESET,
        variants: list[str] | None = None,
        iterations: int | None = None,
        hours: float | None = None,
        policies: list[str] | None = None,
        configurations: list[int | str] | None = None,
        conditions: list[str] | None = None,
        gpus: list[str] | None = None,
    ) -> None:
        base = config if config is not None else load_grid_config(DEFAULT_CONFIG)
        data = base.model_dump()
        if hours is not None:
            data["hours"] = hours
        if policies is not None:
            data["policies"] = policies
        if configurations is not None:
            data["configurations"] = configurations
        if conditions is not None:
            unknown = set(conditions) - {c.name for c in base.conditions}
            if unknown:
                raise ConfigError(f"unknown table2 conditions {sorted(unknown)}")
            data["conditions"] = [c for c in data["conditions"] if c["name"] in conditions]
            if base.default_condition not in conditions:
                data["default_condition"] = conditions[0]
        self.config = validate_grid_config(data, "table2 options")
        self.hours = hours
        self.iterations = iterations
        self.preset = get_preset(preset).name
        known = {v.name: v for v in variants_with_gpus(DEFAULT_VARIANTS, gpus, _gpu_variant)}
        wanted = list(known) if variants is None else list(variants)
        unknown_variants = [n for n in wanted if n not in known]
        if unknown_variants:
            raise ConfigError(f"unknown table2 variants {unknown_variants}; valid: {', '.join(known)}")
        self.variants = tuple(known[n] for n in wanted)
        from wattsched.mig.policies import POLICIES

        for policy in self.config.policies:
            if policy not in POLICIES:
                raise ConfigError(f"unknown policy '{policy}'; valid: {', '.join(POLICIES.available())}")

    def variant_config(self, variant: Table2Variant) -> GridConfig:
        """One variant's grid: its preset's queue hours (unless ``hours`` was given), GPU and conditions."""
        data = self.config.model_dump()
        data["gpu"] = variant.gpu
        if self.hours is None:
            data["hours"] = get_preset(variant.preset).table2_hours
        if variant.conditions is not None:
            kept = [c for c in data["conditions"] if c["name"] in variant.conditions]
            if not kept:
                return self.config.model_copy(update={"conditions": ()})  # nothing of this variant is kept
            data["conditions"] = kept
            if data["default_condition"] not in variant.conditions:
                data["default_condition"] = kept[0]["name"]
        return validate_grid_config(data, f"table2 variant {variant.name}")

    def cells(self, scale: Scale) -> list[Table2Cell]:
        count = self.config.iterations_for(scale, self.iterations)
        cells = []
        for variant in self.variants:
            config = self.variant_config(variant)
            configurations = config.configuration_ids()
            cells += [
                Table2Cell(
                    condition=condition.name,
                    rate_per_min=condition.rate_per_min,
                    inference_share=condition.inference_share,
                    hours=config.hours,
                    iteration=iteration,
                    seed=queue_seed(self.config.seed, condition.name, iteration),
                    policies=config.policies,
                    configurations=configurations,
                    variant=variant.name,
                    preset=variant.preset,
                    deadline_rule=variant.deadline_rule,
                    gpu=variant.gpu,
                )
                for condition in config.conditions
                for iteration in range(count)
            ]
        return cells

    def run_cell(self, cell: Table2Cell) -> list[Row]:
        return run_queue(cell)

    def summarize(self, rows: pd.DataFrame) -> dict[str, Any]:
        from wattsched.studies.table2_variants import summarize_variants

        return summarize_variants(rows, self)

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        from wattsched.studies.table2_variants import report_variants

        return report_variants(rows, self, figures_dir)


STUDIES.register("table2")(Table2Study)
