"""The *run file*: the per-segment timeline of one MIG simulation, and the power series it implies.

One row per stretch a job ran on one slice (``kind = "run"``), one row per repartition blackout
(``kind = "repartition"``, ``job_id = ""``, the configuration being created) and one ``kind = "end"`` row
whose ``start_s = end_s`` is the end of the energy integral: ``max(horizon, last completion)``.
Columns (:data:`TIMELINE_COLUMNS`):

==================  ===========================================================================
``job_id``          the job (``""`` on repartition and end rows)
``kind``            ``run`` | ``repartition`` | ``end``
``start_s, end_s``  the stretch, in seconds
``configuration``   configuration id as text (``"3"``, ``"no-mig"``)
``slice_index``     the slice's index in the configuration's placement order (``-1`` off run rows)
``profile``         the slice's profile name (``"1g.5gb"``; ``"full"`` on the MIG-disabled GPU)
``slice_start``     the slice's NVML placement start, in memory slots from 0 (``-1`` off run rows)
``slice_size``      the placement's size in memory slots (``0`` off run rows)
``compute``         the slice's compute size in compute slices (``0`` off run rows)
==================  ===========================================================================

An optional ``job_kind`` column (``inference`` | ``training``; ``mig run --timeline-out`` writes it) lets
GPUs whose power model has one curve per job kind (the H200) be drawn as the simulator integrates them.

The power series follows from the run rows alone: at each instant the busy state is the sum of ``compute``
over the stretches running then (per job kind where the GPU's model says so), and the board draws the GPU's
power in that state (a blackout has no running job: idle power). Two functions hold the hardware
assumptions: :func:`slice_placement` (a recorded segment → its slice) and :func:`power_table` (the power of
each busy state: the GPU's default selection, as a run without ``--power-curve``/``--power-cap`` uses).
For such a run the series integrates exactly to the simulator's energy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wattsched.errors import InputError
from wattsched.hardware.mig import Configuration, MigGpu, default_gpu
from wattsched.hardware.power import PowerTable
from wattsched.io import cell_text, numeric_column, read_table
from wattsched.mig.results import SimResult
from wattsched.workload.job import Job

__all__ = [
    "KINDS",
    "KIND_COLUMN",
    "TIMELINE_COLUMNS",
    "SlicePlacement",
    "configuration_slices",
    "power_series",
    "power_table",
    "read_timeline",
    "slice_placement",
    "timeline_frame",
]

TIMELINE_COLUMNS: tuple[str, ...] = (
    "job_id",
    "kind",
    "start_s",
    "end_s",
    "configuration",
    "slice_index",
    "profile",
    "slice_start",
    "slice_size",
    "compute",
)
RUN, REPARTITION, END = "run", "repartition", "end"
KINDS: tuple[str, ...] = (RUN, REPARTITION, END)
_INT_COLUMNS = ("slice_index", "slice_start", "slice_size", "compute")
#: Optional column: the job's kind on run rows (``inference`` | ``training``), for per-kind power models.
KIND_COLUMN = "job_kind"
_JOB_KINDS = ("inference", "training")


@dataclass(frozen=True)
class SlicePlacement:
    """Where a job ran: the slice's index in placement order, profile name, NVML placement and compute."""

    slice_index: int
    profile: str
    start: int
    size: int
    compute: int


def configuration_slices(configuration: Configuration) -> tuple[SlicePlacement, ...]:
    """The slices of ``configuration`` in placement order, with NVML ``(start, size)`` in memory slots."""
    return tuple(
        SlicePlacement(index, spec.profile, spec.start, spec.size, spec.compute)
        for index, spec in enumerate(configuration.slices)
    )


def slice_placement(configuration: Configuration, start: int) -> SlicePlacement:
    """The slice of ``configuration`` that a recorded segment names by its placement ``start``.

    A :class:`~wattsched.mig.JobRecord` segment carries the slice's memory-slot start (NVML's placement);
    this function and :func:`configuration_slices` are the only places that map it to a slice.
    Raises InputError if no slice of the configuration starts there.
    """
    for place in configuration_slices(configuration):
        if place.start == start:
            return place
    raise InputError(f"configuration {configuration.ident} has no slice at memory slot {start}")


def power_table(gpu: MigGpu, per_kind: bool) -> PowerTable:
    """The watts of each busy state (docs/concepts/mig-model.md): the GPU's default selection (per job kind
    where its model declares kind curves and ``per_kind``), else its default curve; capped, not throttled. The
    single place where figures look up board power."""
    return gpu.power.table(None if per_kind else gpu.power.default_curve)


def timeline_frame(
    result: SimResult,
    gpu: MigGpu | None = None,
    *,
    repartitions: Iterable[tuple[float, int | str]] = (),
    blackout_s: float | None = None,
    jobs: Iterable[Job] = (),
) -> pd.DataFrame:
    """The run file of ``result`` (a run with ``record_jobs=True``) on ``gpu`` (default P1's A100-40GB),
    rows sorted by time.

    ``repartitions`` are ``(time_s, new configuration)`` pairs (a repartition run's decisions, e.g.
    ``DayRun.decisions`` that repartitioned); each becomes a blackout row of ``blackout_s`` seconds
    (default: the GPU's repartition time, 4 s on the A100). ``jobs`` (the simulated jobs) fill the
    ``job_kind`` column; without them it is empty. Raises ValueError without records.
    """
    if result.records is None:
        raise ValueError("the result has no per-job records: simulate with record_jobs=True")
    gpu = gpu if gpu is not None else default_gpu()
    length_s = gpu.repartition_s if blackout_s is None else float(blackout_s)
    kinds = {job.job_id: job.kind.value for job in jobs}
    rows: list[tuple[object, ...]] = []
    configurations: dict[int | str, Configuration] = {}
    for record in result.records:
        for start_s, end_s, ident, slice_start in record.slices:
            if ident not in configurations:
                configurations[ident] = gpu.configuration(ident)
            place = slice_placement(configurations[ident], slice_start)
            rows.append(
                (
                    record.job_id,
                    RUN,
                    float(start_s),
                    float(end_s),
                    str(ident),
                    place.slice_index,
                    place.profile,
                    place.start,
                    place.size,
                    place.compute,
                    kinds.get(record.job_id, ""),
                )
            )
    for time_s, ident in repartitions:
        if length_s > 0:
            rows.append(
                ("", REPARTITION, float(time_s), float(time_s) + length_s, str(ident), -1, "", -1, 0, 0, "")
            )
    rows.append(("", END, float(result.end_s), float(result.end_s), "", -1, "", -1, 0, 0, ""))
    frame = pd.DataFrame(rows, columns=[*TIMELINE_COLUMNS, KIND_COLUMN])
    frame = frame.sort_values(["start_s", "kind", "slice_index", "job_id"], kind="mergesort")
    return _typed(frame.reset_index(drop=True))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in ("job_id", "kind", "configuration", "profile", KIND_COLUMN):
        out[column] = out[column].astype(str)
    for column in ("start_s", "end_s"):
        out[column] = out[column].astype("float64")
    for column in _INT_COLUMNS:
        out[column] = out[column].astype("int64")
    return out


def read_timeline(path: str | Path) -> pd.DataFrame:
    """Read and validate a run file (CSV or Parquet); every problem is one InputError naming the file, the
    1-based row and the column."""
    where = str(path)
    frame = read_table(path)
    missing = [c for c in TIMELINE_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"not a run file: missing column(s) {', '.join(missing)}", path=where)
    if frame.empty:
        raise InputError("the run file has no rows", path=where)
    frame = frame[[*TIMELINE_COLUMNS, *([KIND_COLUMN] if KIND_COLUMN in frame.columns else [])]].copy()
    if KIND_COLUMN not in frame.columns:
        frame[KIND_COLUMN] = ""
    kinds = frame["kind"].astype(str)
    bad = np.flatnonzero(~kinds.isin(KINDS).to_numpy())
    if bad.size:
        raise InputError(
            f"unknown kind {cell_text(frame, 'kind', int(bad[0]))}; valid: {', '.join(KINDS)}",
            path=where,
            row=int(bad[0]) + 1,
            column="kind",
        )
    for column in ("start_s", "end_s", *_INT_COLUMNS):
        values, first_bad = numeric_column(frame, column)
        if first_bad is not None:
            raise InputError(
                f"not a finite number: {cell_text(frame, column, first_bad)}",
                path=where,
                row=first_bad + 1,
                column=column,
            )
        if column in _INT_COLUMNS:
            fractional = np.flatnonzero(values != np.round(values))
            if fractional.size:
                raise InputError(
                    f"not a whole number: {cell_text(frame, column, int(fractional[0]))}",
                    path=where,
                    row=int(fractional[0]) + 1,
                    column=column,
                )
        frame[column] = values
    _check_rows(frame, kinds.to_numpy(), where)
    for column in ("job_id", "configuration", "profile", KIND_COLUMN):
        frame[column] = frame[column].fillna("").astype(str)
    frame["kind"] = kinds
    return _typed(frame)


def _check_rows(frame: pd.DataFrame, kinds: np.ndarray, where: str) -> None:
    start, end = frame["start_s"].to_numpy(), frame["end_s"].to_numpy()
    run = kinds == RUN
    checks: Sequence[tuple[np.ndarray, str, str]] = (
        (start < 0, "start_s", "must be >= 0"),
        (end < start, "end_s", "must be >= start_s"),
        (run & (frame["compute"].to_numpy() < 1), "compute", "must be >= 1 on a run row"),
        (run & (frame["slice_index"].to_numpy() < 0), "slice_index", "must be >= 0 on a run row"),
        (
            run & (frame["job_id"].fillna("").astype(str).str.len().to_numpy() == 0),
            "job_id",
            "must not be empty on a run row",
        ),
        (
            ~frame[KIND_COLUMN].fillna("").astype(str).isin(("", *_JOB_KINDS)).to_numpy(),
            KIND_COLUMN,
            "must be inference, training or empty",
        ),
    )
    for mask, column, rule in checks:
        bad = np.flatnonzero(mask)
        if bad.size:
            raise InputError(
                f"{rule}, got {cell_text(frame, column, int(bad[0]))}",
                path=where,
                row=int(bad[0]) + 1,
                column=column,
            )


def power_series(timeline: pd.DataFrame, gpu: MigGpu | None = None) -> pd.DataFrame:
    """Board power as a step function of time, and the energy used so far, on ``gpu`` (default A100-40GB).

    Returns one row per step: ``start_s`` (the step holds until the next row's ``start_s``; the last row
    is the end of the run, with ``power_w`` NaN), ``busy_units`` (busy compute slices), ``power_w`` and
    ``energy_j`` (joules used over ``[0, start_s]``). The run ends at its ``end`` row, or at the last
    stretch's end without one. Power is per job kind when every run row has a ``job_kind`` (see
    :func:`power_table`). Raises InputError when more compute slices run at once than the GPU has.
    """
    gpu = gpu if gpu is not None else default_gpu()
    runs = timeline[timeline["kind"] == RUN]
    job_kinds = runs[KIND_COLUMN].astype(str) if KIND_COLUMN in runs.columns else pd.Series("", runs.index)
    table = power_table(gpu, per_kind=len(runs) > 0 and bool((job_kinds != "").all()))
    run_start = runs["start_s"].to_numpy(dtype=float)
    run_end = runs["end_s"].to_numpy(dtype=float)
    units = runs["compute"].to_numpy(dtype=np.int64)
    steps = units * np.array([table.kind_weight.get(k, 1) for k in job_kinds], dtype=np.int64)
    finish_s = float(timeline["end_s"].max()) if len(timeline) else 0.0
    times = np.unique(np.concatenate(([0.0, finish_s], run_start, run_end)))
    times = times[times <= finish_s]
    first, last = np.searchsorted(times, run_start), np.searchsorted(times, run_end)
    busy, state = np.zeros(times.size, dtype=np.int64), np.zeros(times.size, dtype=np.int64)
    # On [times[k], times[k+1]): +u at each stretch start, -u at each end (the state weighs u by job kind).
    np.add.at(busy, first, units)
    np.add.at(busy, last, -units)
    np.add.at(state, first, steps)
    np.add.at(state, last, -steps)
    busy, state = np.cumsum(busy), np.cumsum(state)
    over = np.flatnonzero(busy > gpu.compute_slices)
    if over.size:
        raise InputError(
            f"{int(busy[over[0]])} compute slices busy at t = {times[over[0]]:g} s, more than the "
            f"{gpu.compute_slices} of {gpu.name}: stretches overlap on a slice"
        )
    power = np.array([table.power_w[int(s)] for s in state], dtype=float)
    power[-1] = math.nan
    energy = np.concatenate(([0.0], np.cumsum(power[:-1] * np.diff(times))))
    return pd.DataFrame({"start_s": times, "busy_units": busy, "power_w": power, "energy_j": energy})
