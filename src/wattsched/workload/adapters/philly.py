"""Adapter for the Philly-derived job trace of AdaptDL/Pollux (``simulator/traces/philly.csv``).

Source: GitHub ``petuum/adaptdl``, branch ``osdi21-artifact`` (Apache-2.0), rows from Microsoft's Philly
trace (Jeon et al., ATC '19). The package ships no copy; pass the file's path.

Column mapping (docs/howto/import-trace.md ← Philly):

* ``job_id`` ← the row: ``philly-<1-based data row, 6 digits>``.
* ``arrival_s`` ← ``timestamp``: seconds since midnight of the earliest timestamp's date (day 0), minus the
  window start.
* observed run time ← ``duration`` (s): the run alone on one whole GPU, taken as a **7g** slice.
* multi-GPU jobs (``num_gpus`` > 1): ``fold`` (default) runs ``duration · num_gpus`` (= ``gpu_time``) on one
  7g slice, i.e. the GPU work serialised onto one GPU; ``skip`` filters them out; ``keep`` keeps
  ``duration`` and ``num_gpus`` as the job's ``gpus``.
* ``kind``: Philly has no class; the ``duration`` rule by default (observed run ≤ 600 s → inference) or a
  share.
* ``deadline_s``: P1 rule, see ``common.py``.

``cluster`` and ``gpu_time`` are not needed. Skipped rows (counted by reason): ``bad_timestamp`` (not
``YYYY-MM-DD HH:MM:SS``), ``bad_duration`` (empty or not a number), ``nonpositive_duration``,
``bad_num_gpus`` (not a whole number ≥ 1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wattsched.errors import InputError
from wattsched.workload.adapters.common import RAW_COLUMNS, ImportOptions, ParsedTrace, read_raw_csv

__all__ = ["REQUIRED_COLUMNS", "parse_philly"]

REQUIRED_COLUMNS = ("timestamp", "duration", "num_gpus")
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def parse_philly(path: str, options: ImportOptions) -> ParsedTrace:
    """Parse ``philly.csv``; count bad rows by reason instead of dropping them silently."""
    raw = read_raw_csv(path, REQUIRED_COLUMNS)
    rows_read = len(raw)
    if rows_read == 0:
        raise InputError("the file has a header but no data rows", path=path)
    stamp = pd.to_datetime(raw["timestamp"].str.strip(), format=_TIME_FORMAT, errors="coerce")
    duration = pd.to_numeric(raw["duration"].str.strip(), errors="coerce")
    gpus = pd.to_numeric(raw["num_gpus"].str.strip(), errors="coerce")

    skipped: dict[str, int] = {}
    bad = pd.Series(False, index=raw.index)
    checks = (
        ("bad_timestamp", stamp.isna()),
        ("bad_duration", duration.isna() | ~np.isfinite(duration.fillna(0.0))),
        ("nonpositive_duration", duration <= 0),
        ("bad_num_gpus", gpus.isna() | (gpus < 1) | (gpus != np.floor(gpus.fillna(0.0)))),
    )
    for reason, mask in checks:
        new = mask & ~bad
        if int(new.sum()):
            skipped[reason] = int(new.sum())
        bad |= new
    good = ~bad
    if not good.any():
        raise InputError(f"no usable rows (skipped by reason: {skipped})", path=path, column="duration")

    filtered: dict[str, int] = {}
    multi = good & (gpus > 1)
    if options.multi_gpu == "skip":
        if int(multi.sum()):
            filtered["multi_gpu"] = int(multi.sum())
        good &= ~multi
        if not good.any():
            raise InputError("no single-GPU rows left (multi-GPU rows are skipped)", path=path)
    origin = stamp[good].min().normalize()
    keep = options.multi_gpu == "keep"
    run_time = duration if keep else duration.where(gpus <= 1, duration * gpus)
    row = np.arange(1, rows_read + 1)
    frame = pd.DataFrame(
        {
            "row": row[good.to_numpy()],
            "job_id": [f"philly-{r:06d}" for r in row[good.to_numpy()]],
            "time_s": (stamp[good] - origin).dt.total_seconds().to_numpy(dtype=float),
            "duration_s": run_time[good].to_numpy(dtype=float),
            "observed_g": 7,
            "kind_hint": "",
        },
        columns=list(RAW_COLUMNS),
    )
    if keep:
        frame["gpus"] = gpus[good].to_numpy(dtype=np.int64)
    return ParsedTrace(
        path=path,
        format="philly",
        rows_read=rows_read,
        frame=frame,
        skipped=skipped,
        filtered=filtered,
        default_class_rule="duration",
        origin=f"{origin:%Y-%m-%d} 00:00:00 (day 0)",
    )
