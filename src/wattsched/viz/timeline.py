"""The *run file*: the per-segment timeline of one MIG simulation, and the power series it implies.

One row per stretch a job ran on one slice (``kind = "run"``), one row per repartition blackout
(``kind = "repartition"``, ``job_id = ""``, the configuration being created) and one ``kind = "end"`` row
whose ``start_s = end_s`` is the end of the energy integral (CONTRACT §4: ``max(horizon, last completion)``).
Columns (:data:`TIMELINE_COLUMNS`):

==================  ===========================================================================
``job_id``          the job (``""`` on repartition and end rows)
``kind``            ``run`` | ``repartition`` | ``end``
``start_s, end_s``  the stretch, in seconds
``configuration``   configuration id as text (``"3"``, ``"no-mig"``)
``slice_index``     the slice's index in the configuration's slot order (``-1`` off run rows)
``profile``         the slice's profile name (``"1g.5gb"``; ``"full"`` on the MIG-disabled GPU)
``slice_start``     the slice's placement start (today: the 1-based compute slot of the A100 layout)
``compute``         the slice's compute size in units (``0`` off run rows)
==================  ===========================================================================

The power series follows from the run rows alone: at each instant ``u`` is the sum of ``compute`` over the
stretches running then, and the board draws ``P(u)`` (a blackout has no running job, so ``P(0)``). Two
functions hold the hardware assumptions so that the coming GPU catalogue replaces them in one place:
:func:`slice_placement` (a recorded segment → its slice) and :func:`power_curve_w` (the ``P(u)`` lookup).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wattsched.errors import InputError
from wattsched.hardware.mig import Configuration, MigProfile, default_profile
from wattsched.io import cell_text, numeric_column, read_table
from wattsched.mig._results import SimResult

__all__ = [
    "KINDS",
    "TIMELINE_COLUMNS",
    "SlicePlacement",
    "configuration_slices",
    "power_curve_w",
    "power_series",
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
    "compute",
)
RUN, REPARTITION, END = "run", "repartition", "end"
KINDS: tuple[str, ...] = (RUN, REPARTITION, END)
_INT_COLUMNS = ("slice_index", "slice_start", "compute")


@dataclass(frozen=True)
class SlicePlacement:
    """Where a job ran: the slice's index in slot order, profile name, placement start and compute size."""

    slice_index: int
    profile: str
    start: int
    compute: int


def configuration_slices(configuration: Configuration) -> tuple[SlicePlacement, ...]:
    """The slices of ``configuration`` in slot order, as placements (today: 1-based A100 compute slots)."""
    return tuple(
        SlicePlacement(index, spec.name, spec.first_slot, spec.compute_units)
        for index, spec in enumerate(configuration.slices)
    )


def slice_placement(configuration: Configuration, first_slot: int) -> SlicePlacement:
    """The slice of ``configuration`` that a recorded segment names by ``first_slot``.

    Today a :class:`~wattsched.mig.JobRecord` segment carries the slice's 1-based compute slot on the
    A100 layout; when segments carry NVML placements ``(start, size)`` only this function and
    :func:`configuration_slices` change. Raises InputError if no slice of the configuration starts there.
    """
    for place in configuration_slices(configuration):
        if place.start == first_slot:
            return place
    raise InputError(f"configuration {configuration.ident} has no slice at slot {first_slot}")


def power_curve_w(profile: MigProfile | None = None) -> Callable[[int], float]:
    """``P(u)`` in watts for ``u`` busy compute units (CONTRACT §4); default: the A100-40GB of P1.

    The single place where figures look up board power, so that the GPU catalogue can replace it.
    """
    return (profile if profile is not None else default_profile()).power


def timeline_frame(
    result: SimResult,
    profile: MigProfile | None = None,
    *,
    repartitions: Iterable[tuple[float, int | str]] = (),
    blackout_s: float | None = None,
) -> pd.DataFrame:
    """The run file of ``result`` (a run with ``record_jobs=True``), rows sorted by time.

    ``repartitions`` are ``(time_s, new configuration)`` pairs (a repartition run's decisions, e.g.
    ``DayRun.decisions`` that repartitioned); each becomes a blackout row of ``blackout_s`` seconds
    (default: the profile's repartition time, 4 s on the A100). Raises ValueError without records.
    """
    if result.records is None:
        raise ValueError("the result has no per-job records: simulate with record_jobs=True")
    gpu = profile if profile is not None else default_profile()
    length_s = gpu.repartition_s if blackout_s is None else float(blackout_s)
    rows: list[tuple[object, ...]] = []
    configurations: dict[int | str, Configuration] = {}
    for record in result.records:
        for start_s, end_s, ident, first_slot in record.slices:
            if ident not in configurations:
                configurations[ident] = gpu.configuration(ident)
            place = slice_placement(configurations[ident], first_slot)
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
                    place.compute,
                )
            )
    for time_s, ident in repartitions:
        if length_s > 0:
            rows.append(("", REPARTITION, float(time_s), float(time_s) + length_s, str(ident), -1, "", -1, 0))
    rows.append(("", END, float(result.end_s), float(result.end_s), "", -1, "", -1, 0))
    frame = pd.DataFrame(rows, columns=list(TIMELINE_COLUMNS))
    frame = frame.sort_values(["start_s", "kind", "slice_index", "job_id"], kind="mergesort")
    return _typed(frame.reset_index(drop=True))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in ("job_id", "kind", "configuration", "profile"):
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
    frame = frame[list(TIMELINE_COLUMNS)].copy()
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
    for column in ("job_id", "configuration", "profile"):
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


def power_series(timeline: pd.DataFrame, profile: MigProfile | None = None) -> pd.DataFrame:
    """Board power as a step function of time, and the energy used so far.

    Returns one row per step: ``start_s`` (the step holds until the next row's ``start_s``; the last row
    is the end of the run, with ``power_w`` NaN), ``busy_units``, ``power_w`` and ``energy_j`` (joules used
    over ``[0, start_s]``). The run ends at its ``end`` row, or at the last stretch's end without one.
    Raises InputError when more compute units run at once than the GPU has.
    """
    curve = power_curve_w(profile)
    gpu = profile if profile is not None else default_profile()
    runs = timeline[timeline["kind"] == RUN]
    run_start = runs["start_s"].to_numpy(dtype=float)
    run_end = runs["end_s"].to_numpy(dtype=float)
    units = runs["compute"].to_numpy(dtype=np.int64)
    finish_s = float(timeline["end_s"].max()) if len(timeline) else 0.0
    times = np.unique(np.concatenate(([0.0, finish_s], run_start, run_end)))
    times = times[times <= finish_s]
    # Busy units on [times[k], times[k+1]): +u at each stretch start, -u at each end.
    delta = np.zeros(times.size, dtype=np.int64)
    np.add.at(delta, np.searchsorted(times, run_start), units)
    np.add.at(delta, np.searchsorted(times, run_end), -units)
    busy = np.cumsum(delta)
    over = np.flatnonzero(busy > gpu.total_units)
    if over.size:
        raise InputError(
            f"{int(busy[over[0]])} compute units busy at t = {times[over[0]]:g} s, more than the "
            f"{gpu.total_units} of {gpu.name}: stretches overlap on a slice"
        )
    power = np.array([curve(int(u)) for u in busy], dtype=float)
    power[-1] = math.nan
    energy = np.concatenate(([0.0], np.cumsum(power[:-1] * np.diff(times))))
    return pd.DataFrame({"start_s": times, "busy_units": busy, "power_w": power, "energy_j": energy})
