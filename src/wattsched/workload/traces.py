"""MIG job trace files (CONTRACT §3): CSV or Parquet by suffix, validated, written atomically.

Reading validates whole columns at once and reports the first bad cell (earliest row, then leftmost column)
as one :class:`InputError` naming the file, the 1-based data row and the column. Floats are written with
Python's shortest round-trip ``repr``, so ``read_trace(write_trace(jobs))`` gives back the same bits.
"""

from __future__ import annotations

import csv
import math
import os
import re
import tempfile
import warnings
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from wattsched.errors import ConfigError, InputError
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

CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet", ".pq")
FULL_DURATION_COLUMN = "dur_full_s"
#: Required trace columns, in file order (``dur_full_s`` is optional and follows them).
TRACE_COLUMNS: tuple[str, ...] = ("job_id", "arrival_s", "deadline_s", "kind", "scaling", *DURATION_COLUMNS)
_KINDS = {k.value: k for k in JobKind}
_SCALINGS = {s.value: s for s in Scaling}


def file_format(path: str | Path) -> str:
    """``"csv"`` or ``"parquet"`` from the file suffix; any other suffix is an InputError naming the file."""
    suffix = Path(path).suffix.lower()
    if suffix in CSV_SUFFIXES:
        return "csv"
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    raise InputError(f"unsupported file suffix '{Path(path).suffix}'; use .csv, .parquet or .pq",
                     path=str(path))


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV (every cell as text, nothing turned into NaN) or Parquet file; errors name the file."""
    where = str(path)
    kind = file_format(path)
    if kind == "parquet":
        return _read_parquet(Path(path), where)
    try:
        with warnings.catch_warnings():
            # A first row longer than the header would silently become an index or lose cells.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False,
                                encoding="utf-8", index_col=False)
        _refuse_duplicate_header(path, where)
        return frame
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("file not found", path=where) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=where) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=where) from None
    except pd.errors.EmptyDataError:
        raise InputError("empty file: no header and no job rows", path=where) from None
    except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError, OSError) as exc:
        message = " ".join(str(exc).split())
        line = re.search(r"Expected \d+ fields in line (\d+)", message)
        row = int(line.group(1)) - 1 if line else None  # file line 1 is the header
        raise InputError(f"cannot parse {kind} file: {message}", path=where, row=row) from None


def _read_parquet(path: Path, where: str) -> pd.DataFrame:
    if not path.exists():
        raise InputError("file not found", path=where)
    if path.is_dir():  # pyarrow would read a folder as a partitioned dataset
        raise InputError("is a directory, not a file", path=where)
    try:
        table = pq.read_table(path)
        table.validate(full=True)  # e.g. text cells that are not UTF-8, which pyarrow would decode lazily
        return table.to_pandas()
    except Exception as exc:  # a damaged file can fail anywhere in pyarrow or in pandas' metadata handling
        message = " ".join(str(exc).split())
        raise InputError(f"cannot parse parquet file: {type(exc).__name__}: {message}", path=where) from None


def _refuse_duplicate_header(path: str | Path, where: str) -> None:
    """pandas renames a repeated column ``x`` to ``x.1``; a repeated header name is an error instead."""
    with open(path, encoding="utf-8", newline="") as stream:
        header = next(csv.reader(stream), [])
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise InputError("the header names this column twice", path=where, column=name)
        seen.add(name)


def read_trace(path: str | Path) -> list[Job]:
    """The jobs of a trace file, in file order."""
    return frame_to_jobs(read_table(path), str(path))


def _numeric(frame: pd.DataFrame, column: str) -> tuple[np.ndarray, int | None]:
    """Column as float64 and the index of its first non-numeric or non-finite cell (None if all good)."""
    series = frame[column]
    if pd.api.types.is_bool_dtype(series.dtype):
        return np.zeros(len(series)), 0
    if pd.api.types.is_numeric_dtype(series.dtype):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        cells = series.to_numpy(dtype=object)  # one cell per row, even when a cell holds a list
        try:  # Python's float() per cell: correctly rounded, so text written with repr round-trips exactly
            values = cells.astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            values = np.array([_as_float(v) for v in cells], dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    return values, (int(bad[0]) if bad.size else None)


def _as_float(value: object) -> float:
    """``float(value)`` for a scalar number or numeric text, NaN for anything else (lists, bools, junk)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, str | int | float | Decimal | np.number):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _cell(frame: pd.DataFrame, column: str, index: int) -> str:
    text = repr(frame[column].iloc[index])
    return text if len(text) <= 60 else text[:57] + "..."  # the error stays one short line


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
        values, bad = _numeric(frame, column)
        numbers[column] = values
        if bad is not None:
            flag(bad, column, f"expected a finite number, got {_cell(frame, column, bad)}")
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


def write_table(frame: pd.DataFrame, path: str | Path) -> None:
    """Write a table as CSV (floats in round-trip ``repr``) or Parquet by suffix, via a temp file + rename."""
    kind = file_format(path)
    target = Path(path)
    if kind == "csv":
        frame = frame.copy()
        for column in frame.columns:
            if pd.api.types.is_float_dtype(frame[column].dtype):
                frame[column] = [repr(v) for v in frame[column].tolist()]
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError("cannot write: the folder does not exist", path=str(path)) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            if kind == "csv":
                stream.write(frame.to_csv(index=False, lineterminator="\n").encode("utf-8"))
            else:
                frame.to_parquet(stream, index=False)
        os.replace(temp, target)
    except IsADirectoryError:
        Path(temp).unlink(missing_ok=True)
        raise InputError("cannot write: the path is a directory", path=str(path)) from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
