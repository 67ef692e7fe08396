"""P2 workloads: the synthetic task generator (P2 Sec. VI) and DVFS task files (docs/concepts/dvfs.md).

The generator works in slots, as the authors' code does, and converts to seconds with ``slot_s``: ``t0_s`` and
``d_s`` are the slot values times ``slot_s``; arrivals fall on slot boundaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wattsched.dvfs.model import MAX_TIME_S, MODEL_COLUMNS, TaskModel, TaskSet, check_tasks, first_problem
from wattsched.errors import ConfigError, InputError
from wattsched.io import cell_text, numeric_column, read_table, write_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_TASKS",
    "TASK_COLUMNS",
    "GeneratorSpec",
    "frame_to_tasks",
    "generate_offline",
    "generate_online",
    "read_tasks",
    "task_utilisation",
    "tasks_to_frame",
    "write_tasks",
]

TASK_COLUMNS: tuple[str, ...] = ("task_id", "arrival_s", "deadline_s", *MODEL_COLUMNS)
#: Most tasks one generator call may draw (like ``workload.arrivals.MAX_ARRIVALS``): ~1 GiB of arrays.
MAX_TASKS = 10_000_000


@dataclass(frozen=True)
class GeneratorSpec:
    """Ranges of the synthetic generator (authors' ``rand_gen``); slots are converted with ``slot_s``.

    ``ext`` and ``p_star_w`` are inclusive integer ranges; the rest are uniform ranges.
    """

    ext: tuple[int, int] = (10, 50)
    d_slots: tuple[float, float] = (1.66, 7.61)
    t0_slots: tuple[float, float] = (0.10, 0.95)
    delta: tuple[float, float] = (0.07, 0.91)
    p_star_w: tuple[int, int] = (175, 206)
    p0_share: tuple[float, float] = (0.20, 0.41)
    gamma_share: tuple[float, float] = (0.10, 0.20)
    offline_util: tuple[float, float] = (0.25, 0.75)
    online_util: tuple[float, float] = (0.15, 0.85)
    mean_util: float = 0.5
    slot_s: float = 60.0
    horizon_slots: int = 1440
    initial_share: float = 0.4

    def __post_init__(self) -> None:
        if not (math.isfinite(self.slot_s) and self.slot_s > 0):
            raise ConfigError(f"slot_s must be a finite number > 0, got {self.slot_s!r}")
        if self.horizon_slots < 2 or not 0.0 <= self.initial_share <= 1.0:
            raise ConfigError("horizon_slots must be >= 2 and initial_share in [0, 1]")


def _draw(
    rng: np.random.Generator,
    n: int,
    util: tuple[float, float],
    spec: GeneratorSpec,
    arrival_slots: np.ndarray,
    id_offset: int = 0,
) -> TaskSet:
    ext = rng.integers(spec.ext[0], spec.ext[1] + 1, n).astype(float)
    d = rng.uniform(*spec.d_slots, n) * ext
    t0 = rng.uniform(*spec.t0_slots, n) * ext
    delta = rng.uniform(*spec.delta, n)
    p_star = rng.integers(spec.p_star_w[0], spec.p_star_w[1] + 1, n).astype(float)
    p0 = p_star * rng.uniform(*spec.p0_share, n)
    gamma = p_star * rng.uniform(*spec.gamma_share, n)
    c = p_star - p0 - gamma
    u = rng.uniform(*util, n)
    ids = tuple(f"t{id_offset + i:06d}" for i in range(n))
    with np.errstate(over="ignore"):  # a huge slot_s overflows here; _checked then refuses the tasks
        arrival_s = arrival_slots.astype(float) * spec.slot_s
        default_s = (t0 + d) * spec.slot_s
        model = TaskModel(p0, gamma, c, t0 * spec.slot_s, d * spec.slot_s, delta)
        return TaskSet(ids, arrival_s, arrival_s + default_s / u, model)


def _count(util: float, pairs: int, initial: int = 0) -> int:
    """``round(pairs·U)``, refusing values that are not finite or would need more than ``MAX_TASKS`` tasks."""
    if isinstance(pairs, bool) or not isinstance(pairs, int | np.integer) or pairs <= 0:
        raise ConfigError(f"pairs must be an integer > 0, got {pairs!r}")
    if not (math.isfinite(util) and util >= 0):
        raise ConfigError(f"utilisation U must be a finite number >= 0, got {util!r}")
    if util * pairs + initial > MAX_TASKS:
        raise ConfigError(
            f"U={util:g} on {pairs} pairs asks for {util * pairs + initial:.4g} tasks; at most {MAX_TASKS:,} "
            "tasks can be generated"
        )
    return round(util * pairs)


def _rng(seed: int | np.random.SeedSequence) -> np.random.Generator:
    if not isinstance(seed, np.random.SeedSequence) and (isinstance(seed, bool) or int(seed) < 0):
        raise ConfigError(f"seed must be an integer >= 0, got {seed!r}")
    return np.random.default_rng(seed)


def _checked(tasks: TaskSet, spec: GeneratorSpec) -> TaskSet:
    try:
        check_tasks(tasks)
    except InputError as exc:
        raise ConfigError(
            f"slot_s={spec.slot_s:g} makes generated tasks invalid ({exc.column}: {exc.reason}); "
            f"times must stay <= {MAX_TIME_S:g} s"
        ) from None
    return tasks


def generate_offline(
    util: float, pairs: int, seed: int | np.random.SeedSequence, spec: GeneratorSpec = GeneratorSpec()
) -> TaskSet:
    """``round(pairs·U)`` tasks at T = 0 with ``u ~ U(0.25, 0.75)`` (so ``U_J ≈ U``)."""
    n = _count(util, pairs)
    rng = _rng(seed)
    return _checked(_draw(rng, n, spec.offline_util, spec, np.zeros(n, dtype=np.int64)), spec)


def _slot_counts(rng: np.random.Generator, n: int, slots: int) -> np.ndarray:
    """I.i.d. Poisson(n/(slots+1)) counts on ``slots`` slots, redrawn until they sum to ``n`` exactly."""
    if n == 0:
        return np.zeros(slots, dtype=np.int64)
    lam = n / (slots + 1)
    for _ in range(1000):
        draws = rng.poisson(lam, size=(64, slots))
        hits = np.flatnonzero(draws.sum(axis=1) == n)
        if hits.size:
            return draws[hits[0]]
    # Practically unreachable; a multinomial split keeps the exact total.
    return rng.multinomial(n, np.full(slots, 1.0 / slots))


def generate_online(
    util: float, pairs: int, seed: int | np.random.SeedSequence, spec: GeneratorSpec = GeneratorSpec()
) -> TaskSet:
    """Online day: ``floor(initial_share·pairs)`` tasks at T = 0, then ``round(pairs·U)`` tasks over slots
    ``1..horizon−1`` as Poisson(n/horizon) counts resampled to sum to n; ``u ~ U(0.15, 0.85)``."""
    initial = math.floor(spec.initial_share * pairs) if isinstance(pairs, int | np.integer) else 0
    n = _count(util, pairs, initial)
    rng = _rng(seed)
    counts = _slot_counts(rng, n, spec.horizon_slots - 1)
    slots = np.concatenate([np.zeros(initial, np.int64), np.repeat(np.arange(1, spec.horizon_slots), counts)])
    return _checked(_draw(rng, slots.size, spec.online_util, spec, slots), spec)


def task_utilisation(tasks: TaskSet, pairs: int, mean_util: float = 0.5) -> float:
    """``U_J = Σ u_i / (ū · pairs)`` over tasks with ``a > 0`` when some arrive later (online), else all."""
    window = tasks.window_s
    util = tasks.model.default_time_s / window
    late = tasks.arrival_s > 0
    if late.any():
        util = util[late]
    return float(util.sum() / (mean_util * pairs))


def tasks_to_frame(tasks: TaskSet) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(
        {"task_id": list(tasks.task_id), "arrival_s": tasks.arrival_s, "deadline_s": tasks.deadline_s}
    )
    for column in MODEL_COLUMNS:
        frame[column] = getattr(tasks.model, column)
    return frame


def frame_to_tasks(frame: pd.DataFrame, source: str) -> TaskSet:
    """Validate a task table (docs/concepts/dvfs.md); errors name ``source``, the 1-based row and the column.

    Every value must be a finite number (booleans are not numbers) within the bounds of
    :func:`wattsched.dvfs.model.first_problem` (times ``<= MAX_TIME_S``, powers ``<= MAX_POWER_W``).
    """
    for column in TASK_COLUMNS:
        if column not in frame.columns:
            raise InputError(
                f"missing column; a task file needs {', '.join(TASK_COLUMNS)}", path=source, column=column
            )
    if frame.empty:
        raise InputError("no tasks in file (header only)", path=source)
    ids = frame["task_id"].tolist()
    text_ids: list[str] = []
    seen: dict[str, int] = {}
    for row, value in enumerate(ids, start=1):
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        text = "" if missing else str(value).strip()
        if text == "":
            raise InputError("empty task_id", path=source, row=row, column="task_id")
        first = seen.setdefault(text, row)
        if first != row:
            raise InputError(
                f"duplicate task_id '{text}' (first at row {first})", path=source, row=row, column="task_id"
            )
        text_ids.append(text)
    values = {column: numeric_column(frame, column)[0] for column in TASK_COLUMNS[1:]}  # bad cells: NaN
    found = first_problem(values)  # the earliest row, then the leftmost column
    if found is not None:
        index, column, reason = found
        value = values[column][index]
        shown = f"{value:g}" if np.isfinite(value) else cell_text(frame, column, index)
        raise InputError(f"{reason}, got {shown}", path=source, row=index + 1, column=column)
    model = TaskModel(*(values[c] for c in MODEL_COLUMNS))
    return TaskSet(tuple(text_ids), values["arrival_s"], values["deadline_s"], model)


def read_tasks(path: str | Path) -> TaskSet:
    """Read a CSV or Parquet task file (docs/concepts/dvfs.md), validating every row; any fault is an
    InputError."""
    return frame_to_tasks(read_table(path), str(path))


def write_frame_atomic(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` as CSV or Parquet (by suffix) through a temporary file in the same folder."""
    write_table(frame, path)


def write_tasks(tasks: TaskSet, path: str | Path) -> None:
    """Write a task file (CSV or Parquet by suffix), atomically."""
    write_frame_atomic(tasks_to_frame(tasks), path)
