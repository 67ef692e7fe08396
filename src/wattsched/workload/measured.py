"""A measured slice-speed library: speed-up curves S(g) read at run time from a profiling CSV.

The CSV has the columns of ``data/mig-profiles/slice_speed.csv`` (ParvaGPU and MISO profiles on the
A100): ``source, model, kind, batch_size, slice_g, throughput_or_time, unit``. The package ships no data;
the path is always an argument.

**Curves.** One curve per ``(source, model, kind, batch_size)`` group, named
``"<source>:<model>:<kind>:b<batch_size>"``, of kind ``Scaling.MEASURED``.

**Units → speed-up.** ``unit`` is ``<a>/<b>``. When ``<a>`` is a time (``s``, ``ms``, ``us``) the value is a
time per fixed piece of work (``s/batch``, ``s/iter``) and speed ∝ 1/value; otherwise, when ``<b>`` is ``s``,
it is a throughput (``samples/s``) and speed ∝ value. A group measured in both (ParvaGPU gives throughput and
latency of the same runs) uses the throughput, which is printed with more digits. ``S(g) = speed(g) /
speed(1)``, so ``S(1) = 1`` and measured sizes are read back exactly.

**Missing slice sizes** (a model that does not fit a small slice, or was not run on one):

* no 1g measurement: speed below the smallest measured size ``g0`` is taken as linear,
  ``speed(1) = speed(g0) / g0`` (so ``S(g0) = g0``);
* a size between two measured neighbours: speed is interpolated linearly in g;
* a size above the largest measured size: flat, ``speed(g) = speed(g_max)``;
* a filled-in (not measured) ``S(g)`` is capped at ``g``. Measured values are never altered, even when they
  exceed g or decrease with g (both occur in profiles).

A group with fewer than two measured sizes says nothing about scaling and is left out (listed in
``MeasuredLibrary.dropped``). Malformed rows raise :class:`InputError` naming the file, row and column.

**SM-partition measurements** (the H200's ``data/hardware/h200/partitions.csv``: ``workload, sms,
iterations_per_s, ...``, real work confined to k SMs) are read too, by :func:`load_slice_speeds` (it looks at
the
header) or :func:`load_partition_speeds`: a MIG compute size g is mapped to the SM count of the GPU's plain
``<g>g`` profile (H200: 16, 32, 60, 64, 132 SMs), speed at that SM count is the measurement there, or
interpolated
linearly in SMs between the two nearest ones (3g = 60 SMs lies between 48 and 64). Every curve is labelled
with the P1 family it looks like (:func:`family_of`), for reports.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wattsched.errors import InputError
from wattsched.workload.job import P1_SIZES as COMPUTE_SIZES
from wattsched.workload.job import Scaling
from wattsched.workload.scaling import ScalingCurve

__all__ = [
    "REQUIRED_COLUMNS",
    "CurveEntry",
    "MeasuredLibrary",
    "curves_summary",
    "family_of",
    "fill_speedups",
    "load_partition_speeds",
    "load_slice_speeds",
]

REQUIRED_COLUMNS = ("source", "model", "kind", "batch_size", "slice_g", "throughput_or_time", "unit")
#: Columns of an SM-partition measurement (the H200's ``partitions.csv``).
PARTITION_COLUMNS = ("workload", "sms", "iterations_per_s")
_TIME_UNITS = frozenset({"s", "ms", "us"})


@dataclass(frozen=True)
class CurveEntry:
    """One measured curve and where it came from."""

    source: str
    model: str
    kind: str
    batch_size: int
    unit: str
    measured_sizes: tuple[int, ...]
    curve: ScalingCurve

    @property
    def name(self) -> str:
        return self.curve.name


@dataclass(frozen=True)
class MeasuredLibrary:
    """Measured curves by name, with lookups by model and kind."""

    path: str
    entries: tuple[CurveEntry, ...]
    dropped: tuple[str, ...]

    @property
    def curves(self) -> dict[str, ScalingCurve]:
        return {e.name: e.curve for e in self.entries}

    def models(self) -> list[str]:
        return sorted({e.model for e in self.entries})

    def select(self, *, kind: str | None = None, source: str | None = None) -> tuple[ScalingCurve, ...]:
        """Every curve (all batch sizes) of a kind and/or source, in name order."""
        return tuple(
            e.curve
            for e in sorted(self.entries, key=lambda e: e.name)
            if (kind is None or e.kind == kind) and (source is None or e.source == source)
        )

    def for_model(
        self, model: str, *, source: str | None = None, batch_size: int | None = None
    ) -> ScalingCurve:
        """The model's curve: at ``batch_size``, or else the batch size with the most measured slice sizes
        (ties: the largest batch, the most GPU-bound run)."""
        found = [
            e
            for e in self.entries
            if e.model == model
            and (source is None or e.source == source)
            and (batch_size is None or e.batch_size == batch_size)
        ]
        if not found:
            raise InputError(
                f"no measured curve for model '{model}'"
                f"{f' at batch size {batch_size}' if batch_size is not None else ''}"
                f"{f' from {source}' if source else ''}; models: {', '.join(self.models())}",
                path=self.path,
            )
        return max(found, key=lambda e: (len(e.measured_sizes), e.batch_size, e.source)).curve

    def per_model(self, kind: str | None = None) -> tuple[ScalingCurve, ...]:
        """One curve per (source, model) chosen as :meth:`for_model` does."""
        keys = sorted({(e.source, e.model) for e in self.entries if kind is None or e.kind == kind})
        return tuple(self.for_model(model, source=source) for source, model in keys)


def _is_time_unit(unit: str) -> bool | None:
    """True for time per work, False for throughput, None when the unit is not understood."""
    top, sep, bottom = unit.partition("/")
    if not sep or not top or not bottom:
        return None
    if top in _TIME_UNITS:
        return True
    return False if bottom == "s" else None


def fill_speedups(speed_by_g: dict[int, float]) -> tuple[float, float, float, float, float]:
    """Speed-ups for g = 1, 2, 3, 4, 7 from measured speeds (any unit ∝ speed), by the module's rule."""
    sizes = sorted(speed_by_g)
    if len(sizes) < 2:
        raise ValueError("need at least two measured slice sizes")
    measured = np.array([speed_by_g[g] for g in sizes])
    speed_1 = speed_by_g[1] if 1 in speed_by_g else speed_by_g[sizes[0]] / sizes[0]
    out = []
    for g in COMPUTE_SIZES:
        if g in speed_by_g:
            out.append(speed_by_g[g] / speed_1)
            continue
        if g < sizes[0]:
            value = speed_by_g[sizes[0]] * g / sizes[0]
        elif g > sizes[-1]:
            value = speed_by_g[sizes[-1]]
        else:
            value = float(np.interp(g, sizes, measured))
        out.append(min(value / speed_1, float(g)))
    return (out[0], out[1], out[2], out[3], out[4])


def _strip(column: pd.Series) -> pd.Series:
    return column.str.strip()


def _read(path: str) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():  # a row longer than the header must not shift cells silently
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, index_col=False)
    except pd.errors.EmptyDataError:
        raise InputError("the file is empty (no header)", path=path) from None
    except (pd.errors.ParserError, pd.errors.ParserWarning, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable CSV file: {exc}", path=path) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    is_partitions = all(c in frame.columns for c in PARTITION_COLUMNS)
    for column in () if is_partitions else REQUIRED_COLUMNS:
        if column not in frame.columns:
            raise InputError(
                f"missing required column; found: {', '.join(frame.columns)}", path=path, column=column
            )
    if frame.empty:
        raise InputError("the file has a header but no data rows", path=path)
    return frame.apply(_strip)


def _check_row(path: str, row: int, rec: dict[str, str]) -> tuple[int, int, float, bool]:
    def fail(message: str, column: str) -> InputError:
        return InputError(message, path=path, row=row, column=column)

    for column in ("source", "model", "kind", "unit"):
        if not rec[column]:
            raise fail("empty value", column)
    try:
        batch = int(rec["batch_size"])
    except ValueError:
        raise fail(f"batch size must be a whole number, got {rec['batch_size']!r}", "batch_size") from None
    try:
        g = int(rec["slice_g"])
    except ValueError:
        g = -1
    if g not in COMPUTE_SIZES:
        raise fail(f"slice size must be one of {COMPUTE_SIZES}, got {rec['slice_g']!r}", "slice_g")
    try:
        value = float(rec["throughput_or_time"])
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise fail(f"value must be a number > 0, got {rec['throughput_or_time']!r}", "throughput_or_time")
    is_time = _is_time_unit(rec["unit"])
    if is_time is None:
        raise fail(f"unit {rec['unit']!r} is neither a time per work (s/…) nor a throughput (…/s)", "unit")
    return batch, g, value, is_time


def load_slice_speeds(path: str | Path, gpu: str = "h200-141gb") -> MeasuredLibrary:
    """Build the library from a slice-speed CSV, or from an SM-partition CSV (then mapped onto ``gpu``'s
    profiles); see the module docstring for the rules."""
    source_path = str(path)
    frame = _read(source_path)
    if all(c in frame.columns for c in PARTITION_COLUMNS):
        return _partition_library(source_path, frame, gpu)
    groups: dict[tuple[str, str, str, int], dict[tuple[str, bool], dict[int, float]]] = {}
    records: list[dict[str, str]] = frame.to_dict("records")  # type: ignore[assignment]
    for row, series in enumerate(records, start=1):
        batch, g, value, is_time = _check_row(source_path, row, series)
        key = (series["source"], series["model"], series["kind"], batch)
        by_g = groups.setdefault(key, {}).setdefault((series["unit"], is_time), {})
        if g in by_g:
            raise InputError(
                f"duplicate measurement for {':'.join(map(str, key))} at {g}g in {series['unit']}",
                path=source_path,
                row=row,
                column="slice_g",
            )
        by_g[g] = value
    entries: list[CurveEntry] = []
    dropped: list[str] = []
    for key, units in groups.items():
        source, model, kind, batch = key
        name = f"{source}:{model}:{kind}:b{batch}"
        # Throughput first (more digits), then the unit measuring the most sizes, then by name.
        (unit, is_time), values = min(units.items(), key=lambda kv: (kv[0][1], -len(kv[1]), kv[0][0]))
        if len(values) < 2:
            dropped.append(name)
            continue
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            speeds = {g: (1.0 / v if is_time else v) for g, v in values.items()}
            speedups = fill_speedups(speeds)
        if not all(math.isfinite(s) and s > 0 for s in speedups):
            raise InputError(
                f"the measurements of {name} give speed-ups outside the range of float64: {speedups}",
                path=source_path,
                column="throughput_or_time",
            )
        curve = ScalingCurve(Scaling.MEASURED, name, speedups)
        entries.append(CurveEntry(source, model, kind, batch, unit, tuple(sorted(values)), curve))
    if not entries:
        raise InputError("no group has two or more measured slice sizes", path=source_path, column="slice_g")
    return MeasuredLibrary(source_path, tuple(sorted(entries, key=lambda e: e.name)), tuple(sorted(dropped)))


def load_partition_speeds(path: str | Path, gpu: str = "h200-141gb") -> MeasuredLibrary:
    """The measured library of an SM-partition CSV (``partitions.csv``), mapped onto ``gpu``'s profiles."""
    source_path = str(path)
    return _partition_library(source_path, _read(source_path), gpu)


def _profile_sms(gpu_name: str) -> dict[int, int]:
    """SMs of the plain (smallest-memory, non-media) profile of each compute size of a catalogue GPU."""
    from wattsched.hardware.catalogue import load_gpu

    gpu = load_gpu(gpu_name)
    out: dict[int, int] = {}
    for profile in sorted(gpu.profiles, key=lambda p: (p.compute, p.memory_slots)):
        if not profile.media:
            out.setdefault(profile.compute, profile.sms)
    return out


def _partition_library(path: str, frame: pd.DataFrame, gpu: str) -> MeasuredLibrary:
    missing = [c for c in PARTITION_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", path=path, column=missing[0])
    sms_of = _profile_sms(gpu)
    by_workload: dict[str, dict[float, float]] = {}
    for row, rec in enumerate(frame.to_dict("records"), start=1):
        try:
            sms, rate = float(rec["sms"]), float(rec["iterations_per_s"])
        except (TypeError, ValueError):
            raise InputError(
                "expected numbers in sms and iterations_per_s", path=path, row=row, column="sms"
            ) from None
        if not (math.isfinite(sms) and sms > 0 and math.isfinite(rate) and rate > 0):
            raise InputError(
                f"sms and iterations_per_s must be finite and > 0, got {sms}, {rate}",
                path=path,
                row=row,
                column="iterations_per_s",
            )
        by_workload.setdefault(str(rec["workload"]), {})[sms] = rate
    entries = []
    dropped = []
    for workload, rates in sorted(by_workload.items()):
        name = f"sm-partitions:{workload}"
        points = sorted(rates)
        if len(points) < 2:
            dropped.append(name)
            continue
        speeds = {}
        measured = []
        for g in COMPUTE_SIZES:
            at = sms_of.get(g)
            if at is None or not points[0] <= at <= points[-1]:
                continue
            speeds[g] = float(np.interp(at, points, [rates[p] for p in points]))
            if at in rates:
                measured.append(g)
        speedups = fill_speedups(speeds)
        kind = "training" if "train" in workload else "inference"
        curve = ScalingCurve(Scaling.MEASURED, name, speedups)
        entries.append(CurveEntry("sm-partitions", workload, kind, 0, "iterations/s", tuple(measured), curve))
    if not entries:
        raise InputError("no workload has two or more SM counts", path=path, column="sms")
    return MeasuredLibrary(path, tuple(entries), tuple(dropped))


def family_of(curve: ScalingCurve, sms: dict[int, int] | None = None) -> str:
    """The P1 family a measured curve looks like: ``capped`` when 7g gains under 15 % over 3g, ``linear`` when
    4g reaches 90 % of linear (in SMs where ``sms`` maps sizes to SM counts, else in compute slices),
    ``sublinear`` otherwise. A descriptive label for reports, not a model input."""
    s = dict(zip(COMPUTE_SIZES, curve.speedups, strict=True))
    if s[7] <= 1.15 * s[3]:
        return "capped"
    ideal_4 = sms[4] / sms[1] if sms else 4.0
    return "linear" if s[4] >= 0.9 * ideal_4 else "sublinear"


def curves_summary(entries: Iterable[CurveEntry]) -> pd.DataFrame:
    """A table of curves (name, kind, measured sizes, S(g) per size) for reports."""
    return pd.DataFrame(
        [
            {
                "curve": e.name,
                "kind": e.kind,
                "unit": e.unit,
                "measured": ",".join(map(str, e.measured_sizes)),
                "family": family_of(e.curve),
                **{f"S({g})": s for g, s in zip(COMPUTE_SIZES, e.curve.speedups, strict=True)},
            }
            for e in entries
        ]
    )
