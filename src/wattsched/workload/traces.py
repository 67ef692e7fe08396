"""MIG job trace files (docs/howto/import-trace.md): CSV or Parquet by suffix, validated, written atomically.

An optional ``gpus`` column gives the GPUs a job needs at once (a whole number >= 1; default 1, and the
column is written only when some job needs more than one). Only the cluster engine runs such jobs: the
one-GPU commands refuse a trace that has any (:func:`require_single_gpu`).

Reading validates whole columns at once and reports the first bad cell (earliest row, then leftmost column)
as one :class:`InputError` naming the file, the 1-based data row and the column. Floats are written with
Python's shortest round-trip ``repr``, so ``read_trace(write_trace(jobs))`` gives back the same bits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

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
from wattsched.workload.job import DURATION_COLUMNS, Job, JobKind, Scaling, duration_column
from wattsched.workload.scaling import DEFAULT_FULL_GPU_SPEEDUP

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BASE_COLUMNS",
    "CSV_SUFFIXES",
    "FULL_DURATION_COLUMN",
    "GPUS_COLUMN",
    "PARQUET_SUFFIXES",
    "TRACE_COLUMNS",
    "file_format",
    "frame_to_jobs",
    "jobs_to_frame",
    "multi_gpu_jobs",
    "read_table",
    "read_trace",
    "require_single_gpu",
    "require_sizes",
    "write_table",
    "write_trace",
]

FULL_DURATION_COLUMN = "dur_full_s"
#: The optional column of the GPUs a job needs at once (default 1).
GPUS_COLUMN = "gpus"
#: The most GPUs one job may ask for (a bound against typos such as a job id in the column).
MAX_GPUS_PER_JOB = 1_000_000
#: The columns every trace needs, then at least one ``dur_<g>g_s`` column (docs/howto/import-trace.md;
#: docs/concepts/mig-model.md).
BASE_COLUMNS: tuple[str, ...] = ("job_id", "arrival_s", "deadline_s", "kind", "scaling")
#: The columns of a trace with P1's sizes, in file order (``dur_full_s`` is optional and follows them).
TRACE_COLUMNS: tuple[str, ...] = (*BASE_COLUMNS, *DURATION_COLUMNS)
_DURATION = re.compile(r"^dur_([1-9][0-9]*)g_s$")
#: The MIG-disabled GPU has this many compute slices on every catalogue GPU: its default duration derives
#: from the job's run time on a slice of this size (docs/howto/import-trace.md).
_FULL_SIZE = 7
_KINDS = {k.value: k for k in JobKind}
_SCALINGS = {s.value: s for s in Scaling}


def read_trace(path: str | Path) -> list[Job]:
    """The jobs of a trace file (CSV or Parquet, by suffix: ``.csv``, ``.parquet``, ``.pq``), in file order.

    Columns and rules: ``wattsched schema trace`` (times in seconds). A malformed file raises one
    :class:`~wattsched.errors.InputError` naming the file, the 1-based data row and the column."""
    return frame_to_jobs(read_table(path), str(path))


def frame_to_jobs(frame: pd.DataFrame, source: str) -> list[Job]:
    """Validate a trace table (docs/howto/import-trace.md) and build its jobs; ``source`` names the file in
    errors."""
    ids, numbers, labels = _validated(frame, source)
    sizes = _sizes(frame)
    gpus = _gpus(frame, source)
    durations = np.column_stack([numbers[duration_column(g)] for g in sizes])
    if FULL_DURATION_COLUMN in numbers:
        full = numbers[FULL_DURATION_COLUMN]
    elif _FULL_SIZE in sizes:
        largest = durations[:, sizes.index(_FULL_SIZE)]
        linear = np.array([s == Scaling.LINEAR.value for s in labels["scaling"]])
        full = np.where(linear, largest / DEFAULT_FULL_GPU_SPEEDUP, largest)
    else:
        full = np.full(len(ids), np.nan)
    jobs = [
        Job(job, arrival, deadline, _KINDS[kind], _SCALINGS[scaling], tuple(row), whole, sizes, count)
        for job, arrival, deadline, kind, scaling, row, whole, count in zip(
            ids,
            numbers["arrival_s"].tolist(),
            numbers["deadline_s"].tolist(),
            labels["kind"],
            labels["scaling"],
            durations.tolist(),
            full.tolist(),
            gpus,
            strict=True,
        )
    ]
    if not np.isnan(full).any():
        return jobs
    # No dur_full_s and no dur_7g_s: derive the full-GPU time from the job's scaling family
    # (docs/concepts/mig-model.md).
    out = []
    for row, job in enumerate(jobs):
        try:
            dur_largest = job.duration_for_size(_FULL_SIZE)
        except InputError as exc:
            raise InputError(
                exc.reason, path=source, row=row + 1, column=duration_column(_FULL_SIZE)
            ) from None
        whole = Job.default_full_duration(dur_largest, job.scaling, DEFAULT_FULL_GPU_SPEEDUP)
        out.append(
            Job(
                job.job_id,
                job.arrival_s,
                job.deadline_s,
                job.kind,
                job.scaling,
                job.durations_s,
                whole,
                sizes,
                job.gpus,
            )
        )
    return out


def _gpus(frame: pd.DataFrame, source: str) -> list[int]:
    """The ``gpus`` column as whole numbers >= 1 (all 1 without the column); a bad cell raises."""
    if GPUS_COLUMN not in frame.columns:
        return [1] * len(frame)
    values, bad = numeric_column(frame, GPUS_COLUMN)
    if bad is None:
        wrong = np.flatnonzero((values < 1) | (values != np.floor(values)) | (values > MAX_GPUS_PER_JOB))
        bad = int(wrong[0]) if wrong.size else None
    if bad is not None:
        raise InputError(
            f"expected a whole number of GPUs >= 1, got {frame[GPUS_COLUMN].iloc[bad]!r}",
            path=source,
            row=bad + 1,
            column=GPUS_COLUMN,
        )
    return [int(v) for v in values]


def multi_gpu_jobs(jobs: Sequence[Job]) -> dict[int, int]:
    """How many jobs need each GPU count above one (empty: every job runs on one GPU)."""
    out: dict[int, int] = {}
    for job in jobs:
        if job.gpus > 1:
            out[job.gpus] = out.get(job.gpus, 0) + 1
    return dict(sorted(out.items()))


def require_single_gpu(jobs: Sequence[Job], source: str, command: str) -> None:
    """Refuse jobs of more than one GPU for a command that simulates one GPU: one :class:`InputError`
    with their count (never folded silently onto the one GPU)."""
    counts = multi_gpu_jobs(jobs)
    if counts:
        detail = ", ".join(f"{n} need {g} GPUs" for g, n in counts.items())
        raise InputError(
            f"{sum(counts.values())} of {len(jobs)} jobs need more than one GPU ({detail}); "
            f"{command} simulates one GPU: use 'wattsched cluster run', or import the trace "
            "with --multi-gpu fold or skip",
            path=source,
            column=GPUS_COLUMN,
        )


def _sizes(frame: pd.DataFrame) -> tuple[int, ...]:
    """The compute sizes a trace gives durations for (its ``dur_<g>g_s`` columns), ascending."""
    return tuple(sorted(int(m.group(1)) for c in frame.columns if (m := _DURATION.match(str(c)))))


def require_sizes(jobs: Sequence[Job], sizes: Sequence[int], source: str) -> None:
    """Check that every job has (or can derive) a run time for each of a GPU's ``sizes``; the first job that
    cannot raises one :class:`InputError` naming ``source``, the row and the missing column."""
    for row, job in enumerate(jobs):
        for size in sizes:
            if size not in job.sizes:
                try:
                    job.duration_for_size(size)
                except InputError as exc:
                    raise InputError(
                        exc.reason, path=source, row=row + 1, column=duration_column(size)
                    ) from None


def _validated(
    frame: pd.DataFrame, source: str
) -> tuple[list[str], dict[str, np.ndarray], dict[str, list[str]]]:
    """Job ids, numeric columns and label columns of a valid trace table; the first bad cell raises."""
    missing = [c for c in BASE_COLUMNS if c not in frame.columns]
    sizes = _sizes(frame)
    if not sizes:
        missing += list(DURATION_COLUMNS)
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)}; a trace needs {', '.join(BASE_COLUMNS)} and "
            f"dur_<g>g_s for at least one compute size g ({', '.join(DURATION_COLUMNS)} for P1's)",
            path=source,
            column=missing[0],
        )
    if len(frame) == 0:
        raise InputError("empty file: no job rows", path=source)
    columns = [*BASE_COLUMNS, *(duration_column(g) for g in sizes)]
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
    """The trace table of ``jobs`` (every trace column including ``dur_full_s``, and ``gpus`` when a job
    needs more than one GPU), in order."""
    import pandas as pd

    sizes = jobs[0].sizes if jobs else tuple(int(c[4:-3]) for c in DURATION_COLUMNS)
    if any(job.sizes != sizes for job in jobs):
        raise ConfigError("all jobs of one trace must give durations for the same compute sizes")
    durations = np.asarray([(*job.durations_s, job.dur_full_s) for job in jobs], dtype=np.float64)
    durations = durations.reshape(len(jobs), len(sizes) + 1)
    data: dict[str, object] = {
        "job_id": [job.job_id for job in jobs],
        "arrival_s": np.asarray([job.arrival_s for job in jobs], dtype=np.float64),
        "deadline_s": np.asarray([job.deadline_s for job in jobs], dtype=np.float64),
        "kind": [JobKind(job.kind).value for job in jobs],
        "scaling": [Scaling(job.scaling).value for job in jobs],
    }
    for position, column in enumerate((*(duration_column(g) for g in sizes), FULL_DURATION_COLUMN)):
        data[column] = durations[:, position] if len(jobs) else np.empty(0)
    if any(job.gpus != 1 for job in jobs):
        data[GPUS_COLUMN] = np.asarray([job.gpus for job in jobs], dtype=np.int64)
    return pd.DataFrame(data)


def write_trace(jobs: Sequence[Job], path: str | Path) -> None:
    """Write ``jobs`` as a trace, atomically (a temporary file, then a rename); invalid jobs are refused.

    The format follows the suffix of ``path``: ``.csv``, ``.parquet`` or ``.pq`` (another suffix is an
    InputError). Columns: ``wattsched schema trace``; floats are written so that :func:`read_trace` gives
    back the same bits."""
    where = str(path)
    file_format(path)
    if not jobs:
        raise ConfigError(f"no jobs to write to {where}: a trace needs at least one job")
    frame = jobs_to_frame(jobs)
    try:
        _validated(frame, "<jobs to write>")
        _gpus(frame, "<jobs to write>")
    except InputError as exc:
        raise ConfigError(f"refusing to write an invalid trace to {where}: {exc}") from None
    write_table(frame, path)
