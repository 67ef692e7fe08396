"""MIG job trace files (CONTRACT §3): CSV or Parquet by suffix, validated, written atomically.

Reading validates whole columns at once and reports the first bad cell (earliest row, then leftmost column)
as one :class:`InputError` naming the file, the 1-based data row and the column. Floats are written with
Python's shortest round-trip ``repr``, so ``read_trace(write_trace(jobs))`` gives back the same bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from wattsched.errors import ConfigError, InputError
from wattsched.io import (
    CSV_SUFFIXES,
    PARQUET_SUFFIXES,
    cell_text,
    file_format,
    numeric_column,
    read_table,
    write_table,
)
from wattsched.workload.job import DURATION_COLUMNS, Job, JobKind, Scaling
from wattsched.workload.scaling import DEFAULT_FULL_GPU_SPEEDUP

__all__ = [
    "CSV_SUFFIXES",
    "FULL_DURATION_COLUMN",
    "PARQUET_SUFFIXES",
    "TRACE_COLUMNS",
    "file_format",
    "frame_to_jobs",
    "jobs_to_frame",
    "read_table",
    "read_trace",
    "write_table",
    "write_trace",
]

FULL_DURATION_COLUMN = "dur_full_s"
#: Required trace columns, in file order (``dur_full_s`` is optional and follows them).
TRACE_COLUMNS: tuple[str, ...] = ("job_id", "arrival_s", "deadline_s", "kind", "scaling", *DURATION_COLUMNS)
_KINDS = {k.value: k for k in JobKind}
_SCALINGS = {s.value: s for s in Scaling}


def read_trace(path: str | Path) -> list[Job]:
    """The jobs of a trace file, in file order."""
    return frame_to_jobs(read_table(path), str(path))


def frame_to_jobs(frame: pd.DataFrame, source: str) -> list[Job]:
    """Validate a trace table (CONTRACT §3) and build its jobs; ``source`` names the file in errors."""
    ids, numbers, labels = _validated(frame, source)
    durations = np.column_stack([numbers[c] for c in DURATION_COLUMNS])
    if FULL_DURATION_COLUMN in numbers:
        full = numbers[FULL_DURATION_COLUMN]
    else:
        linear = np.array([s == Scaling.LINEAR.value for s in labels["scaling"]])
        full = np.where(linear, durations[:, -1] / DEFAULT_FULL_GPU_SPEEDUP, durations[:, -1])
    durations = np.column_stack([durations, full])
    return [
        Job(job, arrival, deadline, _KINDS[kind], _SCALINGS[scaling], tuple(row))
        for job, arrival, deadline, kind, scaling, row in zip(
            ids, numbers["arrival_s"].tolist(), numbers["deadline_s"].tolist(), labels["kind"],
            labels["scaling"], durations.tolist(), strict=True,
        )
    ]


def _validated(
    frame: pd.DataFrame, source: str
) -> tuple[list[str], dict[str, np.ndarray], dict[str, list[str]]]:
    """Job ids, numeric columns and label columns of a valid trace table; the first bad cell raises."""
    missing = [c for c in TRACE_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; a trace needs {', '.join(TRACE_COLUMNS)}",
                         path=source, column=missing[0])
    if len(frame) == 0:
        raise InputError("empty file: no job rows", path=source)
    columns = list(TRACE_COLUMNS)
    has_full = FULL_DURATION_COLUMN in frame.columns
    if has_full:
        columns.append(FULL_DURATION_COLUMN)
    # Candidate errors as (row index, column position, column, message); the first in file order wins.
    problems: list[tuple[int, int, str, str]] = []

    def flag(index: int | None, column: str, message: str) -> None:
        if index is not None:
            problems.append((index, columns.index(column), column, message))

    ids = frame["job_id"].tolist()
    for i, value in enumerate(ids):
        if value is None or (isinstance(value, float) and np.isnan(value)) or str(value) == "":
            flag(i, "job_id", "missing job_id")
            break
    ids = [str(v) for v in ids]
    seen: dict[str, int] = {}
    for i, value in enumerate(ids):
        first = seen.setdefault(value, i)
        if first != i:
            flag(i, "job_id", f"duplicate job_id '{value}' (first at row {first + 1})")
            break

    numbers: dict[str, np.ndarray] = {}
    for column in columns[1:]:
        if column in ("kind", "scaling"):
            continue
        values, bad = numeric_column(frame, column)
        numbers[column] = values
        if bad is not None:
            flag(bad, column, f"expected a finite number, got {cell_text(frame, column, bad)}")
        if column == "arrival_s":
            flag(_first(values < 0), column, "arrival_s must be >= 0")
        elif column.startswith("dur_"):
            flag(_first(values <= 0), column, f"{column} must be > 0")
    late = _first(numbers["deadline_s"] < numbers["arrival_s"])
    flag(late, "deadline_s", "deadline_s must be >= arrival_s")

    labels: dict[str, list[str]] = {}
    for column, valid in (("kind", _KINDS), ("scaling", _SCALINGS)):
        labels[column] = [str(v).strip() for v in frame[column].tolist()]
        for i, value in enumerate(labels[column]):
            if value not in valid:
                flag(i, column, f"unknown {column} {value!r}; valid: {', '.join(valid)}")
                break
    if problems:
        index, _, column, message = min(problems)
        raise InputError(message, path=source, row=index + 1, column=column)
    return ids, numbers, labels


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def jobs_to_frame(jobs: Sequence[Job]) -> pd.DataFrame:
    """The trace table of ``jobs`` (all CONTRACT §3 columns including ``dur_full_s``), in order."""
    durations = np.asarray([job.durations_s for job in jobs], dtype=np.float64).reshape(len(jobs), -1)
    data: dict[str, object] = {
        "job_id": [job.job_id for job in jobs],
        "arrival_s": np.asarray([job.arrival_s for job in jobs], dtype=np.float64),
        "deadline_s": np.asarray([job.deadline_s for job in jobs], dtype=np.float64),
        "kind": [JobKind(job.kind).value for job in jobs],
        "scaling": [Scaling(job.scaling).value for job in jobs],
    }
    for position, column in enumerate((*DURATION_COLUMNS, FULL_DURATION_COLUMN)):
        data[column] = durations[:, position] if len(jobs) else np.empty(0)
    return pd.DataFrame(data)


def write_trace(jobs: Sequence[Job], path: str | Path) -> None:
    """Write ``jobs`` as a trace (CSV or Parquet by suffix), atomically; invalid jobs are refused."""
    where = str(path)
    file_format(path)
    if not jobs:
        raise ConfigError(f"no jobs to write to {where}: a trace needs at least one job")
    frame = jobs_to_frame(jobs)
    try:
        _validated(frame, "<jobs to write>")
    except InputError as exc:
        raise ConfigError(f"refusing to write an invalid trace to {where}: {exc}") from None
    write_table(frame, path)
