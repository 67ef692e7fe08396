"""The ET metric of P1 (docs/concepts/et.md) and run summaries, as pure functions.

Per run ``i``: ``x_i`` = energy in joules, ``y_i`` = average tardiness in **minutes**. The coefficient
``a = t̄ / (2·s̄)`` uses the pooled means over all runs of one comparison, and
``ET = mean((a·x_i + y_i) / (a + 1))``. Inputs are in the library's units (J, s); the conversion of
tardiness to minutes happens here and only here.

Unfinished work is never a result: a run that ended with jobs not completed (``unfinished_jobs > 0``) has a
tardiness that leaves those jobs out, so every function here refuses it (a ConfigError naming the runs) when
given ``unfinished_jobs``, unless ``allow_unfinished=True``. :func:`et_of_results` reads the counts from the
results themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from wattsched.errors import ConfigError
from wattsched.units import SECONDS_PER_MINUTE

__all__ = [
    "et_coefficient",
    "et_of_results",
    "et_score",
    "et_values",
    "require_finished",
    "summarize_runs",
]


def require_finished(unfinished_jobs: ArrayLike | None, allow_unfinished: bool = False) -> None:
    """Refuse runs with unfinished jobs (a ConfigError naming how many runs and jobs) unless
    ``allow_unfinished``; ``None`` (counts not given) passes."""
    if unfinished_jobs is None or allow_unfinished:
        return
    counts = np.asarray(unfinished_jobs, dtype=float).ravel()
    bad = np.flatnonzero(counts > 0)
    if bad.size:
        raise ConfigError(
            f"ET of runs with unfinished jobs: {bad.size} run(s) (the first is run {int(bad[0])}) left "
            f"{int(counts[bad].sum())} job(s) unfinished, so their tardiness leaves work out; run them to "
            "the end, or pass allow_unfinished=True to score them anyway"
        )


def _arrays(energy_j: ArrayLike, avg_tardiness_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(energy_j, dtype=float).ravel()
    y = np.asarray(avg_tardiness_s, dtype=float).ravel() / SECONDS_PER_MINUTE
    if x.shape != y.shape:
        raise ConfigError(f"energy and tardiness need the same number of runs, got {x.size} and {y.size}")
    if x.size == 0:
        raise ConfigError("ET needs at least one run")
    return x, y


def et_coefficient(
    energy_j: ArrayLike,
    avg_tardiness_s: ArrayLike,
    *,
    unfinished_jobs: ArrayLike | None = None,
    allow_unfinished: bool = False,
) -> float:
    """``a = t̄ / (2·s̄)`` over a pool of runs (energy in J, tardiness converted to minutes); runs with
    ``unfinished_jobs`` are refused unless ``allow_unfinished`` (module docstring)."""
    require_finished(unfinished_jobs, allow_unfinished)
    x, y = _arrays(energy_j, avg_tardiness_s)
    mean_energy = float(x.mean())
    if mean_energy <= 0.0:
        raise ConfigError("ET coefficient needs a positive mean energy")
    return float(y.mean()) / (2.0 * mean_energy)


def et_values(
    energy_j: ArrayLike,
    avg_tardiness_s: ArrayLike,
    a: float,
    *,
    unfinished_jobs: ArrayLike | None = None,
    allow_unfinished: bool = False,
) -> np.ndarray:
    """Per-run ``(a·x_i + y_i) / (a + 1)`` (``y_i`` in minutes); runs with ``unfinished_jobs`` are refused
    unless ``allow_unfinished``."""
    require_finished(unfinished_jobs, allow_unfinished)
    x, y = _arrays(energy_j, avg_tardiness_s)
    return (a * x + y) / (a + 1.0)


def et_score(
    energy_j: ArrayLike,
    avg_tardiness_s: ArrayLike,
    a: float | None = None,
    *,
    unfinished_jobs: ArrayLike | None = None,
    allow_unfinished: bool = False,
) -> float:
    """Mean ET of the runs (P1 Sec. IV-A): ``mean((a·x_i + y_i) / (a + 1))`` with ``x_i`` the energy in J and
    ``y_i`` the average tardiness in minutes (given in seconds here, converted inside).

    Args:
        energy_j: per-run energy, J (one number or a sequence).
        avg_tardiness_s: per-run average tardiness, s (same length as ``energy_j``).
        a: the coefficient, per joule; default (``None``) :func:`et_coefficient` pooled over these same runs.
            ET values are comparable only under the same ``a``.
        unfinished_jobs: per-run jobs not completed; a run with any is refused (ConfigError) unless
            ``allow_unfinished``.
    """
    require_finished(unfinished_jobs, allow_unfinished)
    if a is None:
        a = et_coefficient(energy_j, avg_tardiness_s)
    return float(et_values(energy_j, avg_tardiness_s, a).mean())


def et_of_results(results: Sequence[Any], a: float | None = None, *, allow_unfinished: bool = False) -> float:
    """:func:`et_score` of results (``SimResult``, ``ClusterResult``: ``energy_j``, ``avg_tardiness_s``,
    ``unfinished_jobs``); a result with unfinished jobs is refused unless ``allow_unfinished``."""
    return et_score(
        [r.energy_j for r in results],
        [r.avg_tardiness_s for r in results],
        a,
        unfinished_jobs=[getattr(r, "unfinished_jobs", 0) for r in results],
        allow_unfinished=allow_unfinished,
    )


def summarize_runs(runs: Iterable[Mapping[str, float]] | Sequence[object]) -> dict[str, float]:
    """Means of the usual per-run totals (``energy_j``, ``avg_tardiness_s``, ``max_tardiness_s``,
    ``late_jobs``, ``preemptions``, ``repartitions``, ``jobs``) over runs given as mappings or results."""
    keys = (
        "energy_j",
        "avg_tardiness_s",
        "max_tardiness_s",
        "late_jobs",
        "preemptions",
        "repartitions",
        "jobs",
    )
    rows = [r if isinstance(r, Mapping) else {k: getattr(r, k) for k in keys} for r in runs]
    if not rows:
        raise ConfigError("summarize_runs needs at least one run")
    out = {k: float(np.mean([float(r[k]) for r in rows])) for k in keys if all(k in r for r in rows)}
    out["runs"] = float(len(rows))
    return out
