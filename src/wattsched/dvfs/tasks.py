"""P2 workloads: the synthetic task generator (``papers.md`` §B.5.2–B.5.3) and DVFS task files (CONTRACT §6).

The generator works in slots, as the authors' code does, and converts to seconds with ``slot_s``: ``t0_s`` and
``d_s`` are the slot values times ``slot_s``; arrivals fall on slot boundaries.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wattsched.dvfs.model import MODEL_COLUMNS, TaskModel, TaskSet
from wattsched.errors import ConfigError, InputError

__all__ = [
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
_SUFFIXES = (".csv", ".parquet")


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
    arrival_s = arrival_slots.astype(float) * spec.slot_s
    default_s = (t0 + d) * spec.slot_s
    ids = tuple(f"t{id_offset + i:06d}" for i in range(n))
    model = TaskModel(p0, gamma, c, t0 * spec.slot_s, d * spec.slot_s, delta)
    return TaskSet(ids, arrival_s, arrival_s + default_s / u, model)


def _count(util: float, pairs: int) -> int:
    if util < 0 or pairs <= 0:
        raise ConfigError(f"utilisation must be >= 0 and pairs > 0, got U={util}, pairs={pairs}")
    return round(util * pairs)


def generate_offline(
    util: float, pairs: int, seed: int | np.random.SeedSequence, spec: GeneratorSpec = GeneratorSpec()
) -> TaskSet:
    """``round(pairs·U)`` tasks at T = 0 with ``u ~ U(0.25, 0.75)`` (so ``U_J ≈ U``)."""
    n = _count(util, pairs)
    rng = np.random.default_rng(seed)
    return _draw(rng, n, spec.offline_util, spec, np.zeros(n, dtype=np.int64))


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
    n = _count(util, pairs)
    initial = math.floor(spec.initial_share * pairs)
    rng = np.random.default_rng(seed)
    counts = _slot_counts(rng, n, spec.horizon_slots - 1)
    slots = np.concatenate([np.zeros(initial, np.int64), np.repeat(np.arange(1, spec.horizon_slots), counts)])
    return _draw(rng, slots.size, spec.online_util, spec, slots)


def task_utilisation(tasks: TaskSet, pairs: int, mean_util: float = 0.5) -> float:
    """``U_J = Σ u_i / (ū · pairs)`` over tasks with ``a > 0`` when some arrive later (online), else all."""
    window = tasks.window_s
    util = tasks.model.default_time_s / window
    late = tasks.arrival_s > 0
    if late.any():
        util = util[late]
    return float(util.sum() / (mean_util * pairs))


def tasks_to_frame(tasks: TaskSet) -> pd.DataFrame:
    frame = pd.DataFrame(
        {"task_id": list(tasks.task_id), "arrival_s": tasks.arrival_s, "deadline_s": tasks.deadline_s}
    )
    for column in MODEL_COLUMNS:
        frame[column] = getattr(tasks.model, column)
    return frame


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise InputError(f"unsupported file type '{path.suffix}' (expected .csv or .parquet)", path=str(path))
    return suffix


def frame_to_tasks(frame: pd.DataFrame, source: str) -> TaskSet:
    """Validate a task table (CONTRACT §6); errors name ``source``, the 1-based row and the column."""
    if frame.empty:
        raise InputError("no tasks in file", path=source)
    for column in TASK_COLUMNS:
        if column not in frame.columns:
            raise InputError("missing column", path=source, column=column)
    ids = frame["task_id"]
    for row, value in enumerate(ids, start=1):
        if pd.isna(value) or str(value).strip() == "":
            raise InputError("empty task_id", path=source, row=row, column="task_id")
    text_ids = ids.astype(str).str.strip()
    dup = text_ids.duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0]) + 1
        raise InputError(
            f"duplicate task_id '{text_ids.iloc[row - 1]}'", path=source, row=row, column="task_id"
        )
    values: dict[str, np.ndarray] = {}
    for column in TASK_COLUMNS[1:]:
        numbers = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(numbers)
        if bad.any():
            row = int(np.flatnonzero(bad)[0]) + 1
            raise InputError(
                f"not a finite number: {frame[column].iloc[row - 1]!r}", path=source, row=row, column=column
            )
        negative = numbers < 0
        if negative.any():
            row = int(np.flatnonzero(negative)[0]) + 1
            raise InputError(f"negative value {numbers[row - 1]}", path=source, row=row, column=column)
        values[column] = numbers
    for column, ok in (
        ("delta", values["delta"] <= 1.0),
        ("deadline_s", values["deadline_s"] >= values["arrival_s"]),
        ("d_s", values["t0_s"] + values["d_s"] > 0),
    ):
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0]) + 1
            reason = {
                "delta": "delta must be in [0, 1]",
                "deadline_s": "deadline_s is before arrival_s",
                "d_s": "t0_s + d_s must be > 0",
            }[column]
            raise InputError(reason, path=source, row=row, column=column)
    model = TaskModel(*(values[c] for c in MODEL_COLUMNS))
    return TaskSet(tuple(text_ids), values["arrival_s"], values["deadline_s"], model)


def read_tasks(path: str | Path) -> TaskSet:
    """Read a CSV or Parquet task file (CONTRACT §6), validating every row."""
    path = Path(path)
    suffix = _check_suffix(path)
    try:
        if suffix == ".csv":
            frame = pd.read_csv(path, dtype={"task_id": str}, keep_default_na=False, na_values=[""])
        else:
            frame = pd.read_parquet(path)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except pd.errors.EmptyDataError:
        raise InputError("empty file", path=str(path)) from None
    except Exception as exc:  # parser errors of either format
        raise InputError(f"cannot read file: {exc}".splitlines()[0], path=str(path)) from None
    return frame_to_tasks(frame, str(path))


def write_frame_atomic(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` as CSV or Parquet (by suffix) through a temporary file in the same folder."""
    path = Path(path)
    suffix = _check_suffix(path)
    folder = path.parent if str(path.parent) else Path(".")
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(handle)
    try:
        if suffix == ".csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_tasks(tasks: TaskSet, path: str | Path) -> None:
    """Write a task file (CSV or Parquet by suffix), atomically."""
    write_frame_atomic(tasks_to_frame(tasks), path)
