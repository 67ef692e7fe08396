"""The P2 per-task GPU DVFS model (docs/concepts/dvfs.md), vectorised over tasks.

Power ``P = p0 + gamma·f_mem + c·V²·f_core`` (W) and time
``T = t0 + d·(delta/f_core + (1 − delta)/f_mem)`` (s), with normalised ``V, f_core, f_mem``; the default
setting is ``(1, 1, 1)``: ``P* = p0 + gamma + c``, ``t* = t0 + d``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from wattsched.errors import ConfigError, InputError

__all__ = [
    "MAX_POWER_W",
    "MAX_TIME_S",
    "MODEL_COLUMNS",
    "TaskModel",
    "TaskSet",
    "check_tasks",
    "first_problem",
]

FloatArray = npt.NDArray[np.float64]
#: Model parameter columns of a task file (docs/concepts/dvfs.md), in order.
MODEL_COLUMNS: tuple[str, ...] = ("p0_w", "gamma_w", "c_w", "t0_s", "d_s", "delta")
#: Largest accepted time (s) in a task: ``arrival_s``, ``deadline_s``, ``t0_s``, ``d_s`` (~31,700 years;
#: use it for "no deadline"). Below it every time, slot count and energy of a run stays far inside float64.
MAX_TIME_S = 1e12
#: Largest accepted power coefficient (W): ``p0_w``, ``gamma_w``, ``c_w``.
MAX_POWER_W = 1e12
_VALUE_COLUMNS = ("arrival_s", "deadline_s", *MODEL_COLUMNS)
_LIMITS = {"p0_w": MAX_POWER_W, "gamma_w": MAX_POWER_W, "c_w": MAX_POWER_W, "delta": 1.0}


def _array(values: Any) -> FloatArray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64).reshape(-1))


@dataclass(frozen=True, eq=False)
class TaskModel:
    """Power and time model parameters of ``n`` tasks, one float64 array each (equal lengths)."""

    p0_w: FloatArray
    gamma_w: FloatArray
    c_w: FloatArray
    t0_s: FloatArray
    d_s: FloatArray
    delta: FloatArray

    def __post_init__(self) -> None:
        lengths = set()
        for field in fields(self):
            array = _array(getattr(self, field.name))
            object.__setattr__(self, field.name, array)
            lengths.add(array.size)
        if len(lengths) > 1:
            raise ConfigError(f"task model arrays have different lengths: {sorted(lengths)}")

    def __len__(self) -> int:
        return int(self.p0_w.size)

    @property
    def default_power_w(self) -> FloatArray:
        """``P*`` at the default setting (1, 1, 1)."""
        return self.p0_w + self.gamma_w + self.c_w

    @property
    def default_time_s(self) -> FloatArray:
        """``t*`` at the default setting."""
        return self.t0_s + self.d_s

    def power_w(self, v: Any, f_core: Any, f_mem: Any) -> FloatArray:
        return np.asarray(self.p0_w + self.gamma_w * f_mem + self.c_w * np.square(v) * f_core, dtype=float)

    def time_s(self, f_core: Any, f_mem: Any) -> FloatArray:
        return np.asarray(
            self.t0_s + self.d_s * (self.delta / f_core + (1.0 - self.delta) / f_mem), dtype=float
        )

    def energy_j(self, v: Any, f_core: Any, f_mem: Any) -> FloatArray:
        return self.power_w(v, f_core, f_mem) * self.time_s(f_core, f_mem)

    def take(self, index: Any) -> TaskModel:
        """The sub-model of the tasks at ``index`` (an int array, slice or mask)."""
        return TaskModel(*(np.atleast_1d(getattr(self, f.name)[index]) for f in fields(self)))


@dataclass(frozen=True, eq=False)
class TaskSet:
    """Tasks with ids, absolute arrival and deadline times (s) and their DVFS model."""

    task_id: tuple[str, ...]
    arrival_s: FloatArray
    deadline_s: FloatArray
    model: TaskModel

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrival_s", _array(self.arrival_s))
        object.__setattr__(self, "deadline_s", _array(self.deadline_s))
        n = len(self.task_id)
        if not (self.arrival_s.size == self.deadline_s.size == len(self.model) == n):
            raise ConfigError("task set columns have different lengths")

    def __len__(self) -> int:
        return len(self.task_id)

    @property
    def window_s(self) -> FloatArray:
        """``deadline − arrival``: the time a task may take if it starts on arrival."""
        return self.deadline_s - self.arrival_s

    def take(self, index: Any) -> TaskSet:
        idx = np.arange(len(self))[index]
        idx = np.atleast_1d(idx)
        return TaskSet(
            tuple(self.task_id[i] for i in idx),
            self.arrival_s[idx],
            self.deadline_s[idx],
            self.model.take(idx),
        )


def first_problem(values: dict[str, FloatArray]) -> tuple[int, str, str] | None:
    """The first invalid cell of task columns (earliest row, then leftmost column) as ``(row index, column,
    reason)``, or None. Rules: finite, ``>= 0``, times ``<= MAX_TIME_S``, powers ``<= MAX_POWER_W``,
    ``delta <= 1``, ``deadline_s >= arrival_s`` and ``t0_s + d_s > 0``."""
    problems: list[tuple[int, int, int, str, str]] = []
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf cells are reported, not warned about
        for position, column in enumerate(_VALUE_COLUMNS):
            x = values[column]
            limit = _LIMITS.get(column, MAX_TIME_S)
            unit = " s" if limit == MAX_TIME_S else " W" if limit == MAX_POWER_W else ""
            checks = [
                (~np.isfinite(x), "expected a finite number"),
                (x < 0, "must be >= 0"),
                (x > limit, f"must be <= {limit:g}{unit}"),
            ]
            if column == "deadline_s":
                checks.append((x < values["arrival_s"], "deadline_s is before arrival_s"))
            if column == "d_s":
                checks.append((values["t0_s"] + x <= 0, "t0_s + d_s must be > 0"))
            for order, (mask, reason) in enumerate(checks):
                hits = np.flatnonzero(mask)
                if hits.size:
                    problems.append((int(hits[0]), position, order, column, reason))
    if not problems:
        return None
    row, _, _, column, reason = min(problems)
    return row, column, reason


def check_tasks(tasks: TaskSet, source: str | None = None) -> None:
    """Raise :class:`InputError` (1-based row, column; ``source`` as path) at the first invalid task value."""
    values = {"arrival_s": tasks.arrival_s, "deadline_s": tasks.deadline_s}
    values.update({c: getattr(tasks.model, c) for c in MODEL_COLUMNS})
    found = first_problem(values)
    if found is not None:
        row, column, reason = found
        raise InputError(reason, path=source, row=row + 1, column=column)
