"""Table III and Fig. 11 of P1: repartitioning methods on 24 h days (P1 Sec. V-C).

The study runs one Table III per :class:`Table3Variant` — a preset (docs/concepts/presets.md: ``paper`` at
2.5× the Fig. 5 profile, ``literal`` at 1×), a deadline rule (``p1`` or ``slice-aware``,
:mod:`wattsched.workload.generators`) and a GPU — on the protocol of :mod:`wattsched.experiments.protocol`.
Cells (each a pure function of its fields):

* ``<variant>/selection/b000``: ET of every configuration on the selection days (P1's static procedure);
* ``<variant>/<method>/bNNN`` for no-mig, static (the GPU's static role: P1's cfg 3 on the A100-40GB),
  static-best (the selected one, reported beside it), day-night and lookahead: ``block_days`` held-out days;
* ``<variant>/dynamic/b000``: trains the DQN deterministically from the study seed on the variant's workload
  and GPU (:func:`wattsched.rl.dqn.quick_config`, the tuned ensemble, at both scales — 3 of its 8
  networks at quick scale, ``quick_dqn_ensemble``; the
  one-network DQN we propose for P1 with ``dqn_hyperparameters = "paper"``), then evaluates it on every
  held-out day;
* ``<variant>/dynamic-rollout/bNNN``: the same DQN improved by rollouts (``dqn_rollout`` sampled days at each
  decision: 2, or ``quick_dqn_rollout`` = 1 at quick scale) on ``rollout_block_days`` of those days — the
  heaviest evaluation, so in blocks that both workers share. Every cell of a variant gets the one trained DQN
  from :mod:`wattsched.rl.cache` (trained by the first cell to ask, the others wait for it and load it);
* ``<variant>/bound/bNNN``: the lower bounds of every held-out day (:mod:`wattsched.mig.bound`: energy of any
  schedule that finishes every job, ET of any schedule with the pilot's ``a``) on ``quick_bound_days`` /
  ``paper_bound_days`` days of the variants that are not ``extra``, on a ``bound_resolution_s`` grid;
* ``sens/...``: the load and deadline-slack sensitivity (:mod:`.table3_sensitivity`).

Every method of a variant runs on the same held-out days (common random numbers; variants that differ only in
the deadline rule or the GPU share arrivals and durations too). ET's ``a`` is pooled per variant over no-mig,
static, day-night and dynamic; static-best and lookahead are scored with the same ``a``. The
DQN's reward and the lookahead's cost use ``a`` from pilot runs on separate days.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from wattsched.errors import ConfigError
from wattsched.experiments.presets import DEFAULT_PRESET, get_preset
from wattsched.experiments.protocol import Method, Setting, run_method
from wattsched.experiments.study import STUDIES, Row, Scale
from wattsched.hardware.catalogue import DEFAULT_GPU, load_gpu
from wattsched.studies.gpu_variants import variant_name, variants_with_gpus
from wattsched.studies.table3_sensitivity import (
    Table3SensCell,
    run_sensitivity_cell,
    sensitivity_cells,
)
from wattsched.workload.generators import WorkloadSpec, check_deadline_rule

__all__ = ["DEFAULT_GPU", "DEFAULT_VARIANTS", "Table3Cell", "Table3Study", "Table3Variant"]

#: Methods evaluated in every variant (dynamic only where the variant trains a DQN), heaviest first.
_METHODS: tuple[Method, ...] = (
    Method("lookahead"),
    Method("static", best=True),
    Method("no-mig"),
    Method("static"),
    Method("day-night"),
)


@dataclass(frozen=True)
class Table3Variant:
    """One Table III: preset × deadline rule × GPU; ``extra`` variants run ``extra_days`` days."""

    preset: str = DEFAULT_PRESET
    deadline_rule: str = "p1"
    gpu: str = DEFAULT_GPU
    dqn: bool = True
    lookahead: bool = True
    extra: bool = False

    def __post_init__(self) -> None:
        get_preset(self.preset)  # UnknownNameError lists the presets
        check_deadline_rule(self.deadline_rule)

    @property
    def name(self) -> str:
        """``paper``, ``literal``, ``paper+slice-aware``, ``paper+h200-141gb`` ..."""
        return variant_name(self.preset, self.deadline_rule, self.gpu)

    def workload(self) -> WorkloadSpec:
        return get_preset(self.preset).day_workload(self.deadline_rule)

    def methods(self) -> tuple[Method, ...]:
        return tuple(m for m in _METHODS if self.lookahead or m.kind != "lookahead")


def _gpu_variant(gpu: str) -> Table3Variant:
    return Table3Variant("paper", gpu=gpu, extra=True)


#: Both presets in full, both presets under the slice-aware deadline rule (no DQN: its environment has no
#: deadline-rule option), and the paper preset on the H200 ("P1 on an H200").
DEFAULT_VARIANTS: tuple[Table3Variant, ...] = (
    Table3Variant("paper"),
    Table3Variant("literal"),
    Table3Variant("paper", deadline_rule="slice-aware", dqn=False, extra=True),
    Table3Variant("literal", deadline_rule="slice-aware", dqn=False, extra=True),
    Table3Variant("paper", gpu="h200-141gb", extra=True),
)


@dataclass(frozen=True)
class Table3Cell:
    """``days`` held-out days from ``first_day`` of one method (``None``: the selection) of a variant."""

    variant: Table3Variant
    method: Method | None
    block: int
    first_day: int
    days: int
    seed: int
    scale: str
    selection_days: int
    pilot_days: int
    dqn_timesteps: int | None = None
    #: The DQN's hyperparameters: "quick" (:func:`~wattsched.rl.dqn.quick_config`) or "paper".
    dqn_hyperparameters: str | None = None
    #: Networks the DQN trains (``None``: its hyperparameters'); see ``DQNConfig.with_ensemble``.
    dqn_ensemble: int | None = None
    #: A bound cell (``method`` is ``None``): the lower bounds of its days on a grid of this many seconds.
    bound_resolution_s: float | None = None

    @property
    def key(self) -> str:
        if self.bound_resolution_s is not None:
            label = "bound"
        else:
            label = "selection" if self.method is None else self.method.label
        return f"{self.variant.name}/{label}/b{self.block:03d}"

    def setting(self) -> Setting:
        return Setting(
            self.seed,
            self.variant.workload(),
            self.variant.gpu,
            pilot_days=self.pilot_days,
            selection_days=self.selection_days,
        )


@dataclass
class Table3Study:
    """Options (``wattsched reproduce --study-option table3.KEY=VALUE``): the preset of the top-level summary
    keys, the variants (names of :data:`DEFAULT_VARIANTS`), days per scale, selection/pilot days, DQN length,
    and the sensitivity's multipliers and slacks."""

    name: str = "table3"
    seed: int = 2025
    #: The preset whose A100 / P1-rule variant fills ``table3``, ``table3_detail`` and ``table3_extra``.
    preset: str = DEFAULT_PRESET
    #: Variant names to run (default: every one of :data:`DEFAULT_VARIANTS`).
    variants: tuple[str, ...] | None = None
    #: GPUs (catalogue names or TOML paths) compared with the A100-40GB at the ``paper`` preset (extra
    #: variants); ``None``: the H200 (``wattsched reproduce --gpu``).
    gpus: tuple[str, ...] | None = None
    block_days: int = 25
    #: Held-out days of a method at quick scale (the first command a newcomer runs; paper scale keeps the
    #: statistics of 500 days).
    quick_days: int = 50
    paper_days: int = 500
    #: Days of the ``extra`` variants (deadline-rule and GPU comparisons).
    quick_extra_days: int = 40
    paper_extra_days: int = 100
    quick_selection_days: int = 20
    paper_selection_days: int = 100
    pilot_days: int = 8
    #: Training steps of every DQN; ``None``: the length of its hyperparameters (quick_config: 120k steps;
    #: paper: 2,000 days).
    dqn_timesteps: int | None = None
    #: The DQN's hyperparameters at both scales: "quick" (:func:`~wattsched.rl.dqn.quick_config`, the tuned
    #: ensemble that meets P1's Static and No-MIG gains) or "paper" (the DQN setting we propose for P1, which
    #: publishes no hyperparameters: one network, 2,000 days, P1's state; worse than Day-Night at the
    #: ``paper`` preset). The paper *scale* sets day counts.
    dqn_hyperparameters: str = "quick"
    #: Networks each DQN trains at both scales (``None``: ``quick_dqn_ensemble`` at quick scale, the
    #: hyperparameters' at paper scale: 8 with "quick", keeping the best 3; fewer than the kept number act
    #: all together).
    dqn_ensemble: int | None = None
    #: Networks each DQN trains at quick scale when ``dqn_ensemble`` is not set: 3 of the recipe's 8 (each the
    #: same 120k-step network, all three acting: no choice of the best 3), for the two trainings that bound a
    #: quick run's wall time; ``None``: the hyperparameters' 8, as at paper scale.
    quick_dqn_ensemble: int | None = 3
    #: Also score ``dynamic-rollout`` (the trained DQN improved by rollouts over this many sampled days at
    #: each decision, :class:`~wattsched.mig.partition.rollout.RolloutPartitioner`) on the DQN's days, at
    #: both scales; 0: not scored; ``None``: 2 at paper scale, ``quick_dqn_rollout`` at quick scale. With 2,
    #: about 8 s of one core a day at the ``paper`` load (1: 4 s) and 0.6 s at ``literal``.
    dqn_rollout: int | None = None
    #: Sampled days of the rollout at quick scale when ``dqn_rollout`` is not set: 1 halves the rollout,
    #: the longest part of a quick run, for about a point of its gain (on 20 days of the ``paper`` preset:
    #: 27.0 % over Day-Night with one sampled day, 28.3 % with two, the DQN alone 23.8 %).
    quick_dqn_rollout: int = 1
    #: Held-out days per ``dynamic-rollout`` cell (the costliest evaluation a day: see ``dqn_rollout``).
    rollout_block_days: int = 10
    #: Variants that train a DQN at quick scale (each costs ~3 min of one core); at paper scale every
    #: variant with ``dqn`` does.
    quick_dqn_variants: tuple[str, ...] = ("paper", "literal")
    #: Load/deadline sensitivity (table3_sensitivity.py): multipliers at P1's slack, extra slacks at x1.
    sensitivity_multipliers: tuple[float, ...] = (1.0, 2.0, 2.5, 3.0, 4.0)
    sensitivity_slacks: tuple[tuple[float, float], ...] = ((2.0, 3.0),)
    sensitivity_quick_days: int = 20
    sensitivity_paper_days: int = 100
    #: Lookahead in the sensitivity (0.3-3 s per day, growing with load); ``None``: at paper scale only.
    sensitivity_lookahead: bool | None = None
    #: Held-out days with a lower bound (the first ones) in each variant that is not ``extra``; ``None``: all
    #: its days; 0: no bound. About 5 s of one core a day at the ``paper`` load, 1 s at ``literal``.
    quick_bound_days: int | None = 10
    paper_bound_days: int | None = 100
    #: The bound's time grid (s): 3,600 s gives the same energy bound as 900 s on these days at a fifth of
    #: the time, and a weaker tardiness bound.
    bound_resolution_s: float = 3600.0

    def __post_init__(self) -> None:
        get_preset(self.preset)
        if self.dqn_hyperparameters not in ("quick", "paper"):
            raise ConfigError(f"dqn_hyperparameters must be quick or paper, got {self.dqn_hyperparameters!r}")
        for key in ("dqn_ensemble", "quick_dqn_ensemble"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ConfigError(f"{key} must be >= 1, got {value}")
        for key in ("dqn_rollout", "quick_dqn_rollout"):
            value = getattr(self, key)
            if value is not None and value < 0:
                raise ConfigError(f"{key} must be >= 0 (0: off), got {value}")
        for key in ("quick_bound_days", "paper_bound_days"):
            value = getattr(self, key)
            if value is not None and value < 0:
                raise ConfigError(f"{key} must be >= 0 (0: no bound), got {value}")
        if not self.bound_resolution_s > 0:
            raise ConfigError(f"bound_resolution_s must be > 0, got {self.bound_resolution_s}")
        if self.rollout_block_days < 1:
            raise ConfigError(f"rollout_block_days must be >= 1, got {self.rollout_block_days}")
        known = {v.name: v for v in variants_with_gpus(DEFAULT_VARIANTS, self.gpus, _gpu_variant)}
        wanted = list(known) if self.variants is None else list(self.variants)
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise ConfigError(f"unknown table3 variants {unknown}; valid: {', '.join(known)}")
        self._variants = tuple(known[n] for n in wanted)

    @property
    def selected_variants(self) -> tuple[Table3Variant, ...]:
        return self._variants

    def cells(self, scale: Scale) -> Sequence[Table3Cell | Table3SensCell]:
        paper = scale == "paper"
        selection = self.paper_selection_days if paper else self.quick_selection_days
        ensemble = self.dqn_ensemble
        if ensemble is None and not paper:
            ensemble = self.quick_dqn_ensemble
        scenarios = self.dqn_rollout
        if scenarios is None:
            scenarios = 2 if paper else self.quick_dqn_rollout
        # Heaviest first so that workers finish together: the DQN trainings (the busiest load first), the
        # rollout blocks and the lookahead blocks. The rollout blocks of the lightest load come first (its
        # training ends first), then the lookahead blocks, which need no network, then the other rollout
        # blocks: a worker freed by a training finds work instead of waiting for a training under way.
        training: list[Table3Cell] = []
        rollouts: list[Table3Cell] = []
        heavy: list[Table3Cell] = []
        light: list[Table3Cell] = []
        for variant in self._variants:
            if variant.extra:
                days = self.paper_extra_days if paper else self.quick_extra_days
            else:
                days = self.paper_days if paper else self.quick_days

            def cell(
                method: Method | None, block: int, first: int, count: int, *, v: Table3Variant = variant
            ) -> Table3Cell:
                return Table3Cell(
                    v,
                    method,
                    block,
                    first,
                    count,
                    self.seed,
                    scale,
                    selection,
                    self.pilot_days,
                    *(
                        (self.dqn_timesteps, self.dqn_hyperparameters, ensemble)
                        if method is not None and method.kind == "dynamic"
                        else (None, None, None)
                    ),
                )

            if variant.dqn and (paper or variant.name in self.quick_dqn_variants):
                training.append(cell(Method("dynamic"), 0, 0, days))
                if scenarios:
                    rollout = Method("dynamic", rollout=scenarios)
                    for block, first in enumerate(range(0, days, self.rollout_block_days)):
                        count = min(self.rollout_block_days, days - first)
                        rollouts.append(cell(rollout, block, first, count))
            light.append(cell(None, 0, 0, 0))
            bound_days = self.paper_bound_days if paper else self.quick_bound_days
            bound_days = days if bound_days is None else min(bound_days, days)
            if not variant.extra:
                for block, first in enumerate(range(0, bound_days, self.block_days)):
                    count = min(self.block_days, bound_days - first)
                    light.append(
                        replace(cell(None, block, first, count), bound_resolution_s=self.bound_resolution_s)
                    )
            for method in variant.methods():
                for block, first in enumerate(range(0, days, self.block_days)):
                    target = heavy if method.kind == "lookahead" else light
                    target.append(cell(method, block, first, min(self.block_days, days - first)))

        def load(c: Table3Cell) -> float:
            return float(c.variant.workload().rate_multiplier)

        training.sort(key=lambda c: -load(c))  # stable: ties keep variant order
        rollouts.sort(key=load)
        lightest = [c for c in rollouts if load(c) == load(rollouts[0])]
        others = rollouts[len(lightest) :]
        return [*training, *lightest, *heavy, *others, *light, *self._sensitivity_cells(scale, selection)]

    def _sensitivity_cells(self, scale: Scale, selection: int) -> list[Table3SensCell]:
        lookahead = scale == "paper" if self.sensitivity_lookahead is None else self.sensitivity_lookahead
        days = self.sensitivity_paper_days if scale == "paper" else self.sensitivity_quick_days
        return sensitivity_cells(
            self.seed,
            days,
            self.block_days,
            selection,
            self.pilot_days,
            self.sensitivity_multipliers,
            self.sensitivity_slacks,
            lookahead=lookahead,
        )

    def run_cell(self, cell: Table3Cell | Table3SensCell) -> list[Row]:
        if isinstance(cell, Table3SensCell):
            return run_sensitivity_cell(cell)
        return run_table3_cell(cell)

    def summarize(self, rows: pd.DataFrame) -> dict[str, Any]:
        from wattsched.studies.table3_analysis import summarize

        return summarize(rows, self.preset)

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        from wattsched.studies.table3_report import report

        return report(rows, self.preset, figures_dir)


def _variant_columns(variant: Table3Variant) -> Row:
    return {
        "variant": variant.name,
        "preset": variant.preset,
        "deadline_rule": variant.deadline_rule,
        "gpu": variant.gpu,
        "rate_multiplier": float(get_preset(variant.preset).rate_multiplier),
    }


def run_table3_cell(cell: Table3Cell) -> list[Row]:
    """Rows of one cell: ``kind`` = ``selection`` (one per configuration) or ``day`` (one per day)."""
    setting = cell.setting()
    common = {"cell": cell.key, **_variant_columns(cell.variant)}
    if cell.bound_resolution_s is not None:
        return _bound_rows(cell, setting, common)
    if cell.method is None:
        chosen, values = setting.best_static()
        ids = load_gpu(setting.gpu).configuration_ids
        return [
            {
                **common,
                "kind": "selection",
                "method": "static-best",
                "day": -1,
                "configuration": str(c),
                "et": et,
                "chosen": c == chosen,
            }
            for c, et in zip(ids, values, strict=True)
        ]
    method = cell.method
    extra: Row = {}
    policy = None
    if method.kind == "dynamic":
        policy, extra = _train_dqn(cell, setting)
    configuration = ""
    if method.kind == "static":
        chosen_id = setting.best_static()[0] if method.best else load_gpu(setting.gpu).role("static")
        configuration = str(chosen_id)
        method = replace(method, configuration=chosen_id, best=False, name=method.label)
    if method.kind == "dynamic" and method.rollout:
        policy = _rollout_policy(method, setting, policy)
    days = range(cell.first_day, cell.first_day + cell.days)
    started = time.perf_counter()
    results = run_method(method, days, setting, policy)
    extra["eval_wall_s"] = time.perf_counter() - started
    return [{**common, "kind": "day", "configuration": configuration, **r.row(), **extra} for r in results]


def _bound_rows(cell: Table3Cell, setting: Setting, common: Row) -> list[Row]:
    """One ``kind = bound`` row per day: the day's lower bounds (docs/concepts/bound.md), ET's with the
    pilot's ``a`` (the pooled ``a`` of the table is known only once every method has run)."""
    from wattsched.mig.bound import lower_bound
    from wattsched.mig.partition.evaluate import DayStream, day_seed
    from wattsched.workload.generators import generate_jobs

    gpu = load_gpu(setting.gpu)
    spec = setting.workload
    a = setting.pilot_coefficient()  # the ET bound's a: the pilot's, as the DQN's reward and lookahead
    rows: list[Row] = []
    for day in range(cell.first_day, cell.first_day + cell.days):
        jobs = generate_jobs(spec, day_seed(setting.seed, DayStream.HELD_OUT, day))
        bound = lower_bound(
            jobs,
            gpu,
            spec.horizon_s,
            resolution_s=cell.bound_resolution_s,
            et_coefficient=a,
            tardiness=False,  # the ET bound holds the trade-off; the tardiness alone costs as much again
        )
        rows.append(
            {
                **common,
                "kind": "bound",
                "method": "bound",
                "day": day,
                "bound_energy_j": bound.energy_j,
                "bound_et": bound.et,
                "bound_et_coefficient_per_j": a,
                "bound_resolution_s": cell.bound_resolution_s,
                "bound_wall_s": bound.solve_s,
            }
        )
    return rows


def _rollout_policy(method: Method, setting: Setting, dqn: Any) -> Any:
    """The trained DQN improved by rollouts over ``method.rollout`` sampled days (``dynamic-rollout``)."""
    from wattsched.mig.partition.rollout import RolloutPartitioner

    return RolloutPartitioner(
        dqn,
        setting.pilot_coefficient(),
        setting.jobs_norm(),
        scenarios=method.rollout,
        workload=setting.workload,
        name=method.label,
    )


def _train_dqn(cell: Table3Cell, setting: Setting) -> tuple[Any, Row]:
    from wattsched.rl.cache import trained_model
    from wattsched.rl.partitioner import DQNPartitioner

    model = trained_model(dqn_config(cell, setting))  # one training for the DQN's cell and its rollouts
    policy = DQNPartitioner.from_file(model.model_path)
    return policy, {
        "train_wall_s": model.wall_s,
        "train_timesteps": model.timesteps,
        "dqn_shipped": model.shipped,
    }


def dqn_config(cell: Table3Cell, setting: Setting | None = None) -> Any:
    """The :class:`~wattsched.rl.dqn.DQNConfig` a DQN cell trains (``scripts/ship_networks.py`` ships it)."""
    from wattsched.rl.dqn import DQNConfig, quick_config

    setting = setting or cell.setting()
    quick = (cell.dqn_hyperparameters or "quick") == "quick"
    config = quick_config(seed=cell.seed) if quick else DQNConfig(seed=cell.seed)
    env = replace(
        config.env,
        et_coefficient=setting.pilot_coefficient(),
        rate_multiplier=setting.workload.rate_multiplier,
        gpu=setting.gpu,
    )
    config = replace(config, env=env)
    if cell.dqn_timesteps is not None:
        config = replace(config, total_timesteps=cell.dqn_timesteps)
    if cell.dqn_ensemble is not None:
        config = config.with_ensemble(cell.dqn_ensemble)
    return config


@STUDIES.register("table3")
def _make_table3(**options: Any) -> Table3Study:
    for key in ("variants", "gpus", "sensitivity_multipliers", "quick_dqn_variants"):
        if isinstance(options.get(key), list):
            options[key] = tuple(options[key])
    if isinstance(options.get("sensitivity_slacks"), list):
        options["sensitivity_slacks"] = tuple(tuple(s) for s in options["sensitivity_slacks"])
    return Table3Study(**options)
