"""One experiment protocol for the repartitioning methods (Table III, its sensitivity, ``mig evaluate``).

* :class:`Method` — a typed method spec: ``Method("static")`` (the GPU's static role: P1's choice),
  ``Method("static", best=True)`` (the best configuration by ET on selection days), ``Method("static",
  configuration=...)`` (a given id), ``Method("no-mig")``, ``Method("day-night")``, ``Method("lookahead")``,
  ``Method("dynamic")`` (a trained DQN, from :attr:`Setting.model_path`), ``Method("dynamic", rollout=2)``
  (the DQN improved at each decision by rollouts over 2 sampled days:
  :class:`~wattsched.mig.partition.rollout.RolloutPartitioner`).
* :class:`Setting` — what the days are: study seed, workload, GPU, pilot/selection days, repartition mode.
* :func:`build_policy` — the one place a method spec becomes a repartitioning policy.
* :func:`run_method` — a method on held-out days, as typed :class:`DayResult` values (array columns).
* ET over a pool (:func:`et_frame`) and paired comparisons with intervals (:func:`compare`).

Day streams (``day_seed``), the day result and the pilot coefficient come from
:mod:`wattsched.mig.partition.evaluate` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import DEFAULT_GPU, load_gpu
from wattsched.mig.partition.base import PARTITIONERS, ConfigId, RepartitionPolicy
from wattsched.mig.partition.evaluate import (
    DayResult,
    DayStream,
    day_seed,
    evaluate_days,
    pilot_et_coefficient,
    select_static,
)
from wattsched.workload.arrivals import PROFILES
from wattsched.workload.generators import WorkloadSpec

if TYPE_CHECKING:
    from wattsched.mig.simulator import RepartitionMode

__all__ = [
    "METHOD_LABELS",
    "DayResult",
    "DayStream",
    "Method",
    "Setting",
    "build_policy",
    "compare",
    "day_seed",
    "et_frame",
    "method_from_label",
    "pilot_et_coefficient",
    "results_frame",
    "run_method",
    "stacked",
]

_KINDS = ("no-mig", "static", "day-night", "lookahead", "dynamic")


@dataclass(frozen=True)
class Method:
    """A repartitioning method of Table III (see the module docstring); ``label`` names its result rows."""

    kind: str
    #: static only: a configuration id of the GPU; ``None``: the GPU's "static" role (or the best, below).
    configuration: ConfigId | None = None
    #: static only: the configuration with the lowest ET on the selection days (P1's procedure).
    best: bool = False
    #: dynamic only: sampled days of a rollout over the DQN at each decision; 0: the DQN alone.
    rollout: int = 0
    #: Row label; empty: ``kind``, ``static-best`` for the selected static, ``dynamic-rollout`` for a rollout.
    name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ConfigError(f"unknown method '{self.kind}'; valid: {', '.join(_KINDS)}")
        if self.kind != "static" and (self.configuration is not None or self.best):
            raise ConfigError(f"method '{self.kind}' takes no configuration (only 'static' does)")
        if self.best and self.configuration is not None:
            raise ConfigError("a static method is either the best by ET or a given configuration, not both")
        if self.rollout < 0 or (self.rollout and self.kind != "dynamic"):
            raise ConfigError(
                f"rollout takes a number of sampled days >= 1, and only for 'dynamic'; got "
                f"{self.kind} with rollout={self.rollout}"
            )

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.rollout:
            return f"{self.kind}-rollout"
        return f"{self.kind}-best" if self.best else self.kind


#: The methods of ``mig evaluate --methods`` and the Table III study, by label.
METHOD_LABELS: dict[str, Method] = {
    m.label: m
    for m in (
        Method("no-mig"),
        Method("static"),
        Method("static", best=True),
        Method("day-night"),
        Method("lookahead"),
        Method("dynamic"),
        Method("dynamic", rollout=2),
    )
}


def method_from_label(label: str) -> Method:
    """The method of a label of :data:`METHOD_LABELS` (ConfigError listing them otherwise)."""
    try:
        return METHOD_LABELS[label]
    except KeyError:
        raise ConfigError(f"unknown method '{label}'; valid: {', '.join(METHOD_LABELS)}") from None


@dataclass(frozen=True)
class Setting:
    """The days a comparison runs on and what the methods need to be built (seconds, joules).

    ``et_coefficient`` is the lookahead's ``a`` per joule (``None``: pilot runs on ``pilot_days`` pilot days);
    ``selection_days`` sets the best static; ``model_path`` is the DQN of ``Method("dynamic")``.
    """

    seed: int
    workload: WorkloadSpec = field(default_factory=lambda: WorkloadSpec(profile="alibaba-day"))
    gpu: str = DEFAULT_GPU
    pilot_days: int = 8
    selection_days: int = 20
    et_coefficient: float | None = None
    model_path: str | None = None
    repartition_mode: RepartitionMode = "blackout"

    def pilot_coefficient(self) -> float:
        """ET's ``a`` from pilot runs of the benchmark methods on this setting's workload and GPU."""
        return pilot_et_coefficient(self.seed, self.pilot_days, self.workload, self.gpu)

    def best_static(self) -> tuple[ConfigId, tuple[float, ...]]:
        """The best static configuration by ET on the selection days, and the ET of every configuration."""
        return select_static(self.seed, self.selection_days, self.workload, self.gpu)

    def jobs_norm(self) -> float:
        """Expected jobs per day of the workload (lookahead's lateness normaliser; 207 at multiplier 1)."""
        spec = self.workload
        if spec.profile is None:
            assert spec.rate_per_min is not None
            return spec.rate_per_min * spec.rate_multiplier * spec.horizon_s / 60.0
        return PROFILES.make(spec.profile).expected_count(spec.horizon_s, spec.rate_multiplier)


def build_policy(method: Method, setting: Setting) -> RepartitionPolicy:
    """The repartitioning policy of ``method`` in ``setting`` (the one method → policy mapping)."""
    options: dict[str, Any] = {}
    if method.kind == "static":
        configuration = setting.best_static()[0] if method.best else method.configuration
        options["configuration"] = configuration
    elif method.kind == "lookahead":
        a = setting.et_coefficient if setting.et_coefficient is not None else setting.pilot_coefficient()
        options.update(et_coefficient=a, jobs_norm=setting.jobs_norm())
    elif method.kind == "dynamic":
        if setting.model_path is None:
            raise ConfigError("the dynamic method needs a trained model (model_path)")
        import wattsched.rl.partitioner  # noqa: F401  (registers "dynamic"; torch is imported lazily)

        options["model_path"] = Path(setting.model_path)
        if method.rollout:
            a = setting.et_coefficient if setting.et_coefficient is not None else setting.pilot_coefficient()
            from wattsched.mig.partition.rollout import RolloutPartitioner

            return RolloutPartitioner(
                PARTITIONERS.make("dynamic", **options),
                et_coefficient=a,
                jobs_norm=setting.jobs_norm(),
                scenarios=method.rollout,
                workload=setting.workload,
                name=method.label,
            )
    return PARTITIONERS.make(method.kind, **options)


def run_method(
    method: Method,
    days: Iterable[int],
    setting: Setting,
    policy: RepartitionPolicy | None = None,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[DayResult]:
    """``method`` on held-out days ``days`` of ``setting`` (``policy`` overrides :func:`build_policy`;
    ``workers`` processes share the days, with the same results; ``progress``: days done so far)."""
    return evaluate_days(
        method.label,
        policy if policy is not None else build_policy(method, setting),
        days,
        setting.seed,
        setting.workload,
        stream=DayStream.HELD_OUT,
        repartition_mode=setting.repartition_mode,
        gpu=load_gpu(setting.gpu),
        workers=workers,
        progress=progress,
    )


def results_frame(results: Sequence[DayResult]) -> pd.DataFrame:
    """The day results as a frame: scalar columns plus the array columns as list cells."""
    return pd.DataFrame([r.row() for r in results])


def stacked(frame: pd.DataFrame, column: str) -> np.ndarray:
    """An array column of a results frame (lists, or arrays from Parquet) as one array, rows first."""
    return np.stack([np.stack(list(v)) if _nested(v) else np.asarray(v, dtype=float) for v in frame[column]])


def _nested(value: Any) -> bool:
    return len(value) > 0 and isinstance(value[0], list | tuple | np.ndarray)


def et_frame(
    days: pd.DataFrame, pool: Sequence[str], a: float | None = None, column: str = "method"
) -> tuple[pd.DataFrame, float]:
    """``days`` with an ``et`` column; ``a`` pooled over the rows whose ``column`` is in ``pool`` unless given
    (docs/concepts/et.md: energy in J, tardiness in minutes)."""
    from wattsched.metrics import et_coefficient, et_values

    if a is None:
        reference = days[days[column].isin(list(pool))]
        if reference.empty:
            raise ConfigError(f"the ET pool ({', '.join(pool)}) has no runs")
        a = float(et_coefficient(reference["energy_j"].to_numpy(), reference["avg_tardiness_s"].to_numpy()))
    et = np.asarray(et_values(days["energy_j"].to_numpy(), days["avg_tardiness_s"].to_numpy(), a))
    return days.assign(et=et), float(a)


def compare(ours: pd.Series, other: pd.Series) -> dict[str, float]:
    """``1 - ET(ours)/ET(other)`` over the common days (index: day): ratio of means with a 95 % interval
    (delta method on the paired days), mean of per-day ratios, and days where ``ours`` is better."""
    common = ours.index.intersection(other.index)
    x = ours.loc[common].to_numpy(dtype=float)
    y = other.loc[common].to_numpy(dtype=float)
    n = len(common)
    out: dict[str, float] = {"days": n, "days_better": int((x < y).sum())}
    if n == 0 or y.mean() <= 0:
        return {
            **out,
            "ratio_of_means": float("nan"),
            "ci95_low": float("nan"),
            "ci95_high": float("nan"),
            "mean_of_ratios": float("nan"),
        }
    ratio = x.mean() / y.mean()
    # Var(x̄ / ȳ) ≈ Var(x - r·y) / (n·ȳ²) for paired days (first-order delta method).
    half = 1.96 * float(np.std(x - ratio * y, ddof=1)) / (np.sqrt(n) * y.mean()) if n > 1 else float("nan")
    valid = y > 0
    return {
        **out,
        "ratio_of_means": float(1.0 - ratio),
        "ci95_low": float(1.0 - ratio - half),
        "ci95_high": float(1.0 - ratio + half),
        "mean_of_ratios": float(np.mean(1.0 - x[valid] / y[valid])) if valid.any() else float("nan"),
    }


def per_day_et(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """ET per day (index: day) of each method of a frame with an ``et`` column."""
    return {str(m): g.set_index("day")["et"].sort_index() for m, g in frame.groupby("method", sort=False)}
