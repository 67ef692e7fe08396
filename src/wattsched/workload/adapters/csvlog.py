"""Adapter for your own job log: a plain CSV file with a header line, one row per job.

Columns, found by **key** (a column named exactly like the key needs no map; ``columns`` maps a key to
another column name, e.g. ``(("submit", "submit_time"),)``, ``--map submit=submit_time`` on the command
line):

=============  ========  ==================================================================================
key            needed    meaning
=============  ========  ==================================================================================
``submit``     yes       when the job was submitted (a time): its arrival
``duration``   or both   its run time in seconds, on one whole GPU (on each of its GPUs)
``start``,     of these  when it started and ended (times): run time ``end − start`` when there is no
``end``                  ``duration`` column
``gpus``       no        GPUs it used at once, a whole number ≥ 1 (default 1)
``deadline``   no        its deadline (a time); an empty cell or no column: the default rule
``kind``       no        ``inference`` or ``training``; empty or no column: the duration rule
``scaling``    no        ``linear``, ``sublinear`` or ``capped``: how it speeds up on larger slices
                         (default linear)
``job_id``     no        its id (default ``csv-<data row, 6 digits>``)
=============  ========  ==================================================================================

**Times**: each column is read one way, detected from its values: seconds since the epoch when every
value is a number, else ISO 8601 (``2024-03-01T12:00:00``, ``2024-03-01 12:00:00+01:00``,
``2024-03-01T11:00:00Z``); a time **without a zone is UTC**. The trace clock's day 0 starts at midnight
(UTC) of the first submission's day, as for the other formats: ``--day N`` keeps day N.

**Rows → jobs** (then the shared pipeline of :mod:`wattsched.workload.adapters.common`): the observed run
time is on a whole GPU, taken as a 7g slice; other slice sizes follow the scaling curve; the deadline is
``arrival + (deadline − submit)`` when given, else ``arrival + U(1, 1.5) · dur_7g`` (the slack of
``deadline_slack``); the class is the row's ``kind`` when given, else inference when the run time is at most
``inference_max_s`` (600 s). Jobs of several GPUs are kept, folded or left out by ``multi_gpu``.

**Unit sanity** (a warning naming the column, the values are still read as seconds): a ``duration`` column
whose median is below 30 and whose values are all whole numbers looks like **hours**; one whose median is
above 100,000 (27.8 h) looks like **milliseconds**; numeric times whose median is above 1e11 (the year
5138 in seconds) look like milliseconds since the epoch.

**Bad input** is one error naming the file and, where it applies, the row and the column: a key with no
column (listing the file's columns), a map to a column the file lacks, an unknown key, a time that is not
a time, a run time that is not a number > 0, an end before its start, a deadline before its submission, a
GPU count that is not a whole number ≥ 1, an unknown kind or scaling, an empty or repeated id.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from wattsched.errors import ConfigError, InputError, did_you_mean
from wattsched.workload.adapters.common import (
    RAW_COLUMNS,
    SECONDS_PER_DAY,
    ImportOptions,
    ParsedTrace,
    read_raw_csv,
)

__all__ = ["HOURS_MEDIAN_BELOW_S", "KEYS", "MILLISECONDS_MEDIAN_ABOVE_S", "parse_csv_log"]

LOG = logging.getLogger(__name__)

#: The keys a column can be mapped to, in the order the docs list them.
KEYS = ("submit", "start", "end", "duration", "gpus", "deadline", "kind", "scaling", "job_id")
#: A ``duration`` column of whole numbers with a median below this looks like hours.
HOURS_MEDIAN_BELOW_S = 30.0
#: A ``duration`` column with a median above this looks like milliseconds.
MILLISECONDS_MEDIAN_ABOVE_S = 1e5
#: Numeric times with a median above this look like milliseconds since the epoch.
EPOCH_MILLISECONDS_ABOVE = 1e11
#: Numeric times beyond this many seconds from the epoch (either way) are refused (about 317,000 years).
MAX_EPOCH_S = 1e13
_KINDS = ("inference", "training")
_SCALINGS = ("linear", "sublinear", "capped")


def _column_map(options: ImportOptions, header: list[str], path: str) -> dict[str, str]:
    """The file's column for each key it has (mapped or named like the key)."""
    mapped: dict[str, str] = {}
    for key, column in options.columns:
        if key not in KEYS:
            raise ConfigError(
                f"unknown key '{key}' in the column map{did_you_mean(key, KEYS)}; keys: {', '.join(KEYS)}"
            )
        if column not in header:
            raise InputError(
                f"the column map gives {key}={column}, but the file has no column '{column}'; "
                f"its columns: {', '.join(header) or 'none'}",
                path=path,
                column=column,
            )
        mapped[key] = column
    for key in KEYS:
        if key not in mapped and key in header:
            mapped[key] = key
    return mapped


def _missing(key: str, header: list[str], path: str) -> InputError:
    return InputError(
        f"no column for '{key}' (name a column '{key}' or map one: --map {key}=COLUMN); the "
        f"file's columns: {', '.join(header) or 'none'}",
        path=path,
        column=key,
    )


def _times(raw: pd.Series, column: str, path: str, *, optional: bool) -> np.ndarray:
    """Epoch seconds of a time column (module docstring); NaN for an empty cell of an optional column."""
    text = raw.str.strip()
    empty = text == ""
    if not optional and empty.any():
        row = int(np.flatnonzero(empty.to_numpy())[0]) + 1
        raise InputError("empty time", path=path, row=row, column=column)
    numbers = pd.to_numeric(text.where(~empty), errors="coerce").to_numpy(dtype=float)
    given = ~empty.to_numpy()
    if given.any() and not np.isnan(numbers[given]).any():  # every value a number: epoch seconds
        finite = np.isfinite(numbers) & (np.abs(numbers) <= MAX_EPOCH_S)
        if not finite[given].all():
            row = int(np.flatnonzero(given & ~finite)[0]) + 1
            raise InputError(
                f"expected a time within 1e13 s of the epoch, got {text.iloc[row - 1]!r}",
                path=path,
                row=row,
                column=column,
            )
        if float(np.median(numbers[given])) > EPOCH_MILLISECONDS_ABOVE:
            LOG.warning(
                "%s: column '%s' holds numbers above 1e11: they look like milliseconds since the "
                "epoch, and are read as seconds",
                path,
                column,
            )
        return np.where(given, numbers, np.nan)
    out = np.full(len(text), np.nan)
    for index, value in enumerate(text.tolist()):
        if not value:
            continue
        try:
            stamp = datetime.fromisoformat(value)
        except ValueError:
            raise InputError(
                f"cannot read {value!r} as a time (expected ISO 8601 such as "
                "2024-03-01T12:00:00 or 2024-03-01 12:00:00+01:00, or seconds since the epoch "
                "in every row)",
                path=path,
                row=index + 1,
                column=column,
            ) from None
        if stamp.tzinfo is None:  # a time without a zone is UTC
            stamp = stamp.replace(tzinfo=UTC)
        out[index] = stamp.timestamp()
    return out


def _positive_numbers(raw: pd.Series, column: str, path: str, what: str) -> np.ndarray:
    text = raw.str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | ~(values > 0))
    if bad.size:
        row = int(bad[0])
        raise InputError(f"expected {what}, got {text.iloc[row]!r}", path=path, row=row + 1, column=column)
    return values


def _warn_units(durations: np.ndarray, column: str, path: str) -> None:
    """Durations that look like hours or milliseconds (module docstring) get one warning."""
    median = float(np.median(durations))
    if median < HOURS_MEDIAN_BELOW_S and bool(np.all(durations == np.floor(durations))):
        LOG.warning(
            "%s: column '%s' looks like hours, not seconds (whole numbers, median %g): durations are "
            "read as seconds",
            path,
            column,
            median,
        )
    elif median > MILLISECONDS_MEDIAN_ABOVE_S:
        LOG.warning(
            "%s: column '%s' looks like milliseconds, not seconds (median %g s = %.3g days): "
            "durations are read as seconds",
            path,
            column,
            median,
            median / SECONDS_PER_DAY,
        )


def _labels(raw: pd.Series, column: str, path: str, valid: tuple[str, ...]) -> list[str]:
    values = [v.strip().lower() for v in raw.tolist()]
    for index, value in enumerate(values):
        if value and value not in valid:
            raise InputError(
                f"unknown {column} value {raw.iloc[index].strip()!r}; valid: {', '.join(valid)} (or empty)",
                path=path,
                row=index + 1,
                column=column,
            )
    return values


def _job_ids(raw: pd.DataFrame, mapped: dict[str, str], path: str) -> list[str]:
    if "job_id" not in mapped:
        return [f"csv-{row:06d}" for row in range(1, len(raw) + 1)]
    column = mapped["job_id"]
    ids = raw[column].str.strip().tolist()
    seen: dict[str, int] = {}
    for index, value in enumerate(ids):
        if not value:
            raise InputError("empty job id", path=path, row=index + 1, column=column)
        first = seen.setdefault(value, index)
        if first != index:
            raise InputError(
                f"repeated job id '{value}' (first at row {first + 1})",
                path=path,
                row=index + 1,
                column=column,
            )
    return ids


def _gpu_counts(raw: pd.DataFrame, mapped: dict[str, str], path: str) -> np.ndarray:
    if "gpus" not in mapped:
        return np.ones(len(raw), dtype=np.int64)
    column = mapped["gpus"]
    text = raw[column].str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(
        ~np.isfinite(values) | (values < 1) | (values != np.floor(values)) | (values > 1_000_000)
    )
    if bad.size:
        row = int(bad[0])
        raise InputError(
            f"expected a whole number of GPUs >= 1, got {text.iloc[row]!r}",
            path=path,
            row=row + 1,
            column=column,
        )
    return values.astype(np.int64)


def _run_times(raw: pd.DataFrame, mapped: dict[str, str], header: list[str], path: str) -> np.ndarray:
    if "duration" in mapped:
        column = mapped["duration"]
        durations = _positive_numbers(raw[column], column, path, "a run time in seconds > 0")
        _warn_units(durations, column, path)
        return durations
    for key in ("start", "end"):
        if key not in mapped:
            raise InputError(
                f"no column for 'duration' nor for '{key}': a job log needs a run time "
                "(--map duration=COLUMN) or start and end times (--map start=COLUMN --map "
                f"end=COLUMN); the file's columns: {', '.join(header) or 'none'}",
                path=path,
                column=key,
            )
    start = _times(raw[mapped["start"]], mapped["start"], path, optional=False)
    end = _times(raw[mapped["end"]], mapped["end"], path, optional=False)
    run = end - start
    bad = np.flatnonzero(~(run > 0))
    if bad.size:
        row = int(bad[0])
        raise InputError(
            f"the job ends {'at' if run[row] == 0 else 'before'} its start "
            f"({raw[mapped['start']].iloc[row].strip()})",
            path=path,
            row=row + 1,
            column=mapped["end"],
        )
    return np.asarray(run, dtype=float)


def parse_csv_log(path: str, options: ImportOptions) -> ParsedTrace:
    """Parse a job log (module docstring); every bad cell is an error naming its row and column."""
    raw = read_raw_csv(path, ())
    header = list(raw.columns)
    mapped = _column_map(options, header, path)
    if "submit" not in mapped:
        raise _missing("submit", header, path)
    if len(raw) == 0:
        raise InputError("the file has a header but no data rows", path=path)
    submit = _times(raw[mapped["submit"]], mapped["submit"], path, optional=False)
    run = _run_times(raw, mapped, header, path)
    gpus = _gpu_counts(raw, mapped, path)
    ids = _job_ids(raw, mapped, path)
    offsets = np.full(len(raw), np.nan)
    if "deadline" in mapped:
        deadline = _times(raw[mapped["deadline"]], mapped["deadline"], path, optional=True)
        offsets = deadline - submit
        early = np.flatnonzero(offsets < 0)
        if early.size:
            raise InputError(
                "the deadline is before the submission",
                path=path,
                row=int(early[0]) + 1,
                column=mapped["deadline"],
            )
    kinds = (
        _labels(raw[mapped["kind"]], mapped["kind"], path, _KINDS) if "kind" in mapped else [""] * len(raw)
    )
    scalings = (
        _labels(raw[mapped["scaling"]], mapped["scaling"], path, _SCALINGS)
        if "scaling" in mapped
        else [""] * len(raw)
    )

    filtered: dict[str, int] = {}
    keep = np.ones(len(raw), dtype=bool)
    multi = gpus > 1
    if options.multi_gpu == "skip" and multi.any():
        filtered["multi_gpu"] = int(multi.sum())
        keep &= ~multi
        if not keep.any():
            raise InputError("no single-GPU rows left (multi-GPU rows are skipped)", path=path)
    elif options.multi_gpu == "fold":  # the GPU work serialised onto one whole GPU
        run = run * gpus
        gpus = np.ones_like(gpus)
    origin_s = math.floor(float(np.min(submit[keep])) / SECONDS_PER_DAY) * SECONDS_PER_DAY
    numbers = np.arange(1, len(raw) + 1)
    frame = pd.DataFrame(
        {
            "row": numbers[keep],
            "job_id": [i for i, k in zip(ids, keep, strict=True) if k],
            "time_s": submit[keep] - origin_s,
            "duration_s": run[keep],
            "observed_g": 7,
            "kind_hint": [h for h, k in zip(kinds, keep, strict=True) if k],
        },
        columns=list(RAW_COLUMNS),
    )
    frame["gpus"] = gpus[keep]
    frame["deadline_offset_s"] = offsets[keep]
    frame["scaling_hint"] = [h for h, k in zip(scalings, keep, strict=True) if k]
    try:
        origin = f"{datetime.fromtimestamp(origin_s, UTC):%Y-%m-%d} 00:00:00 UTC"
    except (ValueError, OverflowError, OSError):  # beyond the calendar (times in milliseconds, say)
        origin = f"{origin_s:.0f} s since the epoch"
    return ParsedTrace(
        path=path,
        format="csv",
        rows_read=len(raw),
        frame=frame,
        skipped={},
        filtered=filtered,
        default_class_rule="source" if any(kinds) else "duration",
        origin=f"{origin} (midnight of the first submission's day, day 0)",
    )
