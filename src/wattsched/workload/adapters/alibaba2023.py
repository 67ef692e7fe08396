"""Adapter for the Alibaba GPU cluster trace v2023 pod list (``openb_pod_list_default.csv``).

Source: GitHub ``alibaba/clusterdata``, ``cluster-trace-gpu-v2023/csv/`` (FGD paper, Weng et al., USENIX ATC
'23; research/study use only, no licence file). The package ships no copy; pass the file's path.

Column mapping (docs/howto/import-trace.md ← pod list):

* ``job_id`` ← ``name``: the pod name (duplicates after the first are skipped).
* ``arrival_s`` ← ``creation_time`` (s, trace-relative) minus the window start; day N is
  ``[N·86400, (N+1)·86400)`` of the trace clock, whose time of day is not published.
* observed run time ← ``deletion_time − scheduled_time`` (s): the run alone on the slice that ``gpu_milli``
  maps to.
* observed slice ← ``gpu_milli`` (``num_gpu`` = 1): the smallest g ∈ {1, 2, 3, 4, 7} with
  ``7·milli ≤ 1000·g + 5``, so that k/7 of a GPU rounded to whole milli (143, 286, 429, 572) still maps to k:
  1–143 → 1g, 144–286 → 2g, 287–429 → 3g, 430–572 → 4g, 573–1000 → 7g (there is no 5g or 6g slice).
* multi-GPU pods (``num_gpu`` > 1): ``fold`` (default) runs ``run time · num_gpu`` on one 7g slice;
  ``skip`` filters them out; ``keep`` keeps the run time, on whole GPUs (7g), and ``num_gpu`` as the job's
  ``gpus``.
* ``kind`` ← ``qos`` by the ``source`` rule (default): LS (latency-sensitive) → inference; BE, Burstable,
  Guaranteed → training.
* ``deadline_s``: P1 rule, see ``common.py``.

Filtered (valid rows a documented rule leaves out): ``cpu_only`` (``num_gpu`` = 0), ``never_scheduled``
(empty ``scheduled_time``: Pending pods never ran), ``censored_at_trace_end`` (still Running when the trace
ends: ``deletion_time`` equals the file's last deletion time, so the run time is unknown).
Skipped (malformed, counted by reason): ``bad_time`` (a time that is not a finite number ≥ 0),
``bad_num_gpu``, ``bad_gpu_milli`` (not a whole number in 1..1000 for a one-GPU pod),
``nonpositive_duration``,
``unknown_qos`` (only when the ``qos`` column exists), ``duplicate_id``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wattsched.errors import InputError
from wattsched.workload.adapters.common import RAW_COLUMNS, ImportOptions, ParsedTrace, read_raw_csv
from wattsched.workload.job import P1_SIZES as COMPUTE_SIZES

__all__ = ["QOS_CLASSES", "REQUIRED_COLUMNS", "parse_alibaba2023", "slice_for_gpu_milli"]

REQUIRED_COLUMNS = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time")
QOS_CLASSES = {"LS": "inference", "BE": "training", "Burstable": "training", "Guaranteed": "training"}


def slice_for_gpu_milli(milli: int) -> int:
    """The compute size a GPU share maps to (see the module table)."""
    if not 1 <= milli <= 1000:
        raise ValueError(f"gpu_milli must be in 1..1000, got {milli}")
    return next(g for g in COMPUTE_SIZES if 7 * milli <= 1000 * g + 5)


def _number(text: pd.Series) -> pd.Series:
    return pd.to_numeric(text.str.strip(), errors="coerce")


def parse_alibaba2023(path: str, options: ImportOptions) -> ParsedTrace:
    """Parse the pod list; count bad and left-out rows by reason."""
    raw = read_raw_csv(path, REQUIRED_COLUMNS)
    rows_read = len(raw)
    if rows_read == 0:
        raise InputError("the file has a header but no data rows", path=path)
    created, deleted = _number(raw["creation_time"]), _number(raw["deletion_time"])
    sched_text = raw["scheduled_time"].str.strip()
    scheduled = _number(sched_text)
    gpus, milli = _number(raw["num_gpu"]), _number(raw["gpu_milli"])
    has_qos = "qos" in raw.columns
    qos = raw["qos"].str.strip() if has_qos else pd.Series("", index=raw.index)
    phase = (
        raw["pod_phase"].str.strip() if "pod_phase" in raw.columns else pd.Series("Running", index=raw.index)
    )

    def bad_time(series: pd.Series) -> pd.Series:
        return series.isna() | (series < 0) | series.isin([np.inf, -np.inf])

    one_gpu = gpus == 1
    milli_ok = (milli >= 1) & (milli <= 1000) & (milli == np.floor(milli.fillna(0.0)))
    trace_end = deleted.max()
    never = sched_text == ""
    checks: list[tuple[str, str, pd.Series]] = [
        ("skipped", "bad_time", bad_time(created) | bad_time(deleted) | (~never & bad_time(scheduled))),
        ("skipped", "bad_num_gpu", gpus.isna() | (gpus < 0) | (gpus != np.floor(gpus.fillna(0.0)))),
        ("filtered", "cpu_only", gpus == 0),
        ("filtered", "never_scheduled", never),
        ("skipped", "bad_gpu_milli", one_gpu & ~milli_ok),
        ("filtered", "censored_at_trace_end", (deleted == trace_end) & (phase == "Running")),
        ("skipped", "nonpositive_duration", (deleted - scheduled) <= 0),
        ("skipped", "unknown_qos", pd.Series(has_qos, index=raw.index) & ~qos.isin(list(QOS_CLASSES))),
        (
            "skipped",
            "duplicate_id",
            raw["name"].str.strip().duplicated(keep="first") | (raw["name"].str.strip() == ""),
        ),
    ]
    multi = gpus > 1
    if options.multi_gpu == "skip":
        checks.append(("filtered", "multi_gpu", multi))
    counts: dict[str, dict[str, int]] = {"skipped": {}, "filtered": {}}
    out = pd.Series(False, index=raw.index)
    for group, reason, mask in checks:
        new = mask.fillna(False).astype(bool) & ~out
        if int(new.sum()):
            counts[group][reason] = int(new.sum())
        out |= new
    good = ~out
    if not good.any():
        raise InputError(f"no usable rows (left out by reason: {counts})", path=path, column="num_gpu")

    run_time = (deleted - scheduled)[good]
    n_gpus = gpus[good].to_numpy(dtype=float)
    with np.errstate(over="ignore"):  # an overflow to inf is reported with its row by build_jobs
        keep = options.multi_gpu == "keep"
        run_time_s = run_time.to_numpy(dtype=float) * (1.0 if keep else np.maximum(n_gpus, 1.0))
    sizes = [
        slice_for_gpu_milli(int(m)) if n == 1 else 7
        for m, n in zip(milli[good].fillna(1000), n_gpus, strict=True)
    ]
    row = np.arange(1, rows_read + 1)[good.to_numpy()]
    frame = pd.DataFrame(
        {
            "row": row,
            "job_id": raw["name"].str.strip()[good].to_numpy(),
            "time_s": created[good].to_numpy(dtype=float),
            "duration_s": run_time_s,
            "observed_g": np.array(sizes, dtype=int),
            "kind_hint": [QOS_CLASSES.get(q, "") for q in qos[good]],
        },
        columns=list(RAW_COLUMNS),
    )
    if keep:
        frame["gpus"] = np.maximum(n_gpus, 1.0).astype(np.int64)
    return ParsedTrace(
        path=path,
        format="alibaba-2023",
        rows_read=rows_read,
        frame=frame,
        skipped=counts["skipped"],
        filtered=counts["filtered"],
        default_class_rule="source",
        origin="trace start (creation_time 0; time of day not published)",
    )
