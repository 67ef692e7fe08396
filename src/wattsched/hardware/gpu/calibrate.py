"""``gpu calibrate``: whole-card power against the fraction of busy SMs (read-only; P1 Fig. 3 analogue).

The experiment of ``data/hardware/h200/README.md``: for u = 0..U busy compute slices (U = the GPU's
MIG compute slices, 7 on A100/H100/H200), ``round(u · SMs / U)`` SMs run a compute-bound kernel, then a
memory-bound one; each level settles, then is measured: power = energy-counter difference / wall time (the
sampled power integrated where the GPU has no counter). Nothing of the card is changed: clocks, power limit
and MIG mode stay as they are, and a GPU in MIG mode is refused (the experiment needs the whole card).

The kernels come from a :class:`LoadGenerator`: CuPy or PyTorch on a real GPU
(:mod:`~wattsched.hardware.gpu.loads`), or :class:`ReplayLoad` on the fake backend, which replays the
snapshot's recorded ``levels`` (or, without them, a linear estimate) by setting the fake's board power.

The CSV has one row per (curve, busy_units): ``curve, busy_units, busy_sms, power_w, seconds, energy_j,
energy_source, sm_clock_mhz, mem_clock_mhz, throughput, throughput_unit, load``; ``gpu snapshot
--power-curve`` reads it (``curve``, ``busy_units``, ``power_w``; busy_units 0 is the idle power).
"""

from __future__ import annotations

import csv
import io
import itertools
import logging
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

from tqdm.auto import tqdm

from wattsched.errors import InputError
from wattsched.hardware.gpu.backend import GpuBackend, GpuError
from wattsched.hardware.gpu.snapshot import MeasuredCurve

__all__ = [
    "KINDS",
    "CalibrationSettings",
    "LevelResult",
    "LoadGenerator",
    "ReplayLoad",
    "calibrate",
    "curves_from_csv",
    "curves_to_csv",
]

log = logging.getLogger(__name__)

#: A level whose SM clock is below this fraction of its curve's highest ran throttled (at the power cap).
THROTTLED_BELOW = 0.95
#: The two load kinds, as the curve names of the CSV and the catalogue entry.
KINDS: tuple[str, ...] = ("compute", "memory")


@dataclass(frozen=True)
class CalibrationSettings:
    """Seconds to settle and to measure each level (the H200 run: 1 s and 4 s; ``quick``: 0.5 s and 1.5 s)."""

    settle_s: float = 1.0
    measure_s: float = 4.0
    sample_interval_s: float = 0.05
    kinds: tuple[str, ...] = KINDS

    @classmethod
    def quick(cls) -> CalibrationSettings:
        return cls(settle_s=0.5, measure_s=1.5)


@dataclass(frozen=True)
class LevelResult:
    """One measured level: ``busy_units`` of the GPU's compute slices busy with ``curve``'s kernel."""

    curve: str
    busy_units: int
    busy_sms: int
    power_w: float
    seconds: float
    energy_j: float
    energy_source: str
    sm_clock_mhz: int
    mem_clock_mhz: int
    throughput: float | None
    throughput_unit: str
    load: str


class LoadGenerator(Protocol):
    """Keeps ``busy_sms`` SMs of one GPU busy with a compute- or memory-bound kernel until stopped."""

    name: str

    def start(self, kind: str, busy_sms: int) -> None:
        """Start the load in the background (``busy_sms`` 0: idle, with the GPU context open)."""
        ...

    def stop(self) -> tuple[float | None, str]:
        """Stop it and return its throughput over the run and the unit (``None``, "" at idle)."""
        ...

    def close(self) -> None: ...


class ReplayLoad:
    """The fake backend's load: sets the replayed board power of each level.

    Levels come from the snapshot's ``levels`` (the H200 file: ``idle_start``, ``fma_<k>of7``,
    ``copy_<k>of7``, with ``power_w``); a level the snapshot lacks is linear from the idle power to the
    enforced power limit, the same estimate ``gpu snapshot`` writes without a calibration.
    """

    name = "replay"

    def __init__(self, backend: object, index: int, units: int, sms: int) -> None:
        from wattsched.hardware.gpu.fake import FakeBackend

        if not isinstance(backend, FakeBackend):
            raise GpuError("the replay load runs on the fake backend only")
        self._backend, self._index, self._units, self._sms = backend, index, units, sms
        self._idle_w = backend.power_w(index)
        self._cap_w = backend.power_limits(index).enforced_w
        self._recorded: dict[tuple[str, int], float] = {}
        facts = backend.facts(index)
        prefixes = {"fma": "compute", "copy": "memory"}
        for level in facts.get("levels", []) if isinstance(facts.get("levels"), list) else []:
            match = re.fullmatch(r"(fma|copy)_(\d+)of(\d+)", str(level.get("level", "")))
            if level.get("level") == "idle_start":
                for kind in KINDS:
                    self._recorded[(kind, 0)] = float(level["power_w"])
            elif match and int(match.group(3)) == units:
                self._recorded[(prefixes[match.group(1)], int(match.group(2)))] = float(level["power_w"])

    def power_w(self, kind: str, busy_sms: int) -> float:
        units = round(busy_sms * self._units / self._sms) if self._sms else 0
        if (kind, units) in self._recorded:
            return self._recorded[(kind, units)]
        return self._idle_w + (self._cap_w - self._idle_w) * units / self._units

    def start(self, kind: str, busy_sms: int) -> None:
        self._backend.set_power_w(self._index, self.power_w(kind, busy_sms))

    def stop(self) -> tuple[float | None, str]:
        self._backend.set_power_w(self._index, self._idle_w)
        return None, ""

    def close(self) -> None:
        pass


def _measure_level(
    backend: GpuBackend,
    index: int,
    settings: CalibrationSettings,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> tuple[float, float, str]:
    """(seconds, energy J, source) over ``measure_s``: the counter, or the trapezoid of sampled power."""
    start_j, start_s = backend.energy_j(index), clock()
    samples = [(start_s, backend.power_w(index))]
    while clock() - start_s < settings.measure_s:
        sleep(min(settings.sample_interval_s, settings.measure_s - (clock() - start_s)))
        samples.append((clock(), backend.power_w(index)))
    end_j, end_s = backend.energy_j(index), clock()
    if start_j is not None and end_j is not None:
        return end_s - start_s, end_j - start_j, "counter"
    energy = sum((b - a) * (pa + pb) / 2 for (a, pa), (b, pb) in itertools.pairwise(samples))
    return end_s - start_s, energy, "sampled"


def calibrate(
    backend: GpuBackend,
    index: int,
    load: LoadGenerator,
    *,
    units: int,
    sms: int,
    settings: CalibrationSettings = CalibrationSettings(),
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    progress: bool = True,
) -> list[LevelResult]:
    """Measure every level of every kind on GPU ``index`` (see the module docstring); read-only."""
    if backend.mig_mode(index)[0]:
        raise GpuError(
            f"GPU {index} is in MIG mode: calibrate needs the whole card (MIG off); it never "
            "changes MIG mode itself"
        )
    levels = [(kind, u) for kind in settings.kinds for u in range(units + 1)]
    results = []
    bar = tqdm(levels, desc="calibrate", unit="level", disable=not progress)
    try:
        for kind, u in bar:
            busy_sms = round(u * sms / units)
            load.start(kind, busy_sms)
            try:
                sleep(settings.settle_s)
                seconds, energy_j, source = _measure_level(backend, index, settings, clock, sleep)
                clocks = backend.clocks(index)
            finally:
                throughput, unit = load.stop()
            results.append(
                LevelResult(
                    kind,
                    u,
                    busy_sms,
                    energy_j / seconds if seconds > 0 else 0.0,
                    seconds,
                    energy_j,
                    source,
                    clocks.sm_now_mhz,
                    clocks.mem_now_mhz,
                    throughput,
                    unit,
                    load.name,
                )
            )
            log.info("%s u=%d (%d SMs): %.1f W over %.2f s", kind, u, busy_sms, results[-1].power_w, seconds)
    finally:
        bar.close()
    return results


_COLUMNS = [f.name for f in fields(LevelResult)]


def curves_to_csv(results: Iterable[LevelResult]) -> str:
    """CSV text of the results (floats in round-trip form)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for result in results:
        row = asdict(result)
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return out.getvalue()


def curves_from_csv(path: str | Path, units: int | None = None) -> list[MeasuredCurve]:
    """The power curves of a calibration CSV (columns ``curve, busy_units, power_w`` at least).

    Every curve needs one row for each busy_units 0..N (N the same for all curves, and ``units`` if given);
    one InputError naming the file, the row and the column otherwise.
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("power-curve file not found", path=where) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read power-curve file: {exc}", path=where) from None
    reader = csv.DictReader(io.StringIO(text))
    missing = {"curve", "busy_units", "power_w"} - set(reader.fieldnames or [])
    if missing:
        raise InputError(f"missing column(s) {', '.join(sorted(missing))}", path=where)
    table: dict[str, dict[int, float]] = {}
    clocks: dict[str, dict[int, float]] = {}
    for row_number, row in enumerate(reader, start=1):
        curve = (row["curve"] or "").strip()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", curve):
            raise InputError(
                f"curve name {curve!r} must be a word (letters, digits, - or _)",
                path=where,
                row=row_number,
                column="curve",
            )
        try:
            busy = int(row["busy_units"])
            power = float(row["power_w"])
        except (TypeError, ValueError):
            raise InputError(
                "busy_units must be an integer and power_w a number", path=where, row=row_number
            ) from None
        if busy < 0 or not (0 <= power < 1e6):
            raise InputError(
                f"busy_units {busy} must be >= 0 and power_w {power} in [0, 1e6) W",
                path=where,
                row=row_number,
            )
        if busy in table.setdefault(curve, {}):
            raise InputError(f"curve '{curve}' has busy_units {busy} twice", path=where, row=row_number)
        table[curve][busy] = power
        try:
            clocks.setdefault(curve, {})[busy] = float(row.get("sm_clock_mhz") or "nan")
        except ValueError:
            raise InputError("sm_clock_mhz must be a number", path=where, row=row_number) from None
    if not table:
        raise InputError("no rows", path=where)
    return _complete_curves(table, clocks, units, where)


def _complete_curves(
    table: dict[str, dict[int, float]], clocks: dict[str, dict[int, float]], units: int | None, where: str
) -> list[MeasuredCurve]:
    curves = []
    for name, levels in table.items():
        top = max(levels)
        wanted = units if units is not None else top
        if sorted(levels) != list(range(wanted + 1)):
            raise InputError(
                f"curve '{name}' needs busy_units 0..{wanted} once each, has {sorted(levels)}",
                path=where,
                column="busy_units",
            )
        # A level ran throttled when its SM clock sat clearly below the curve's highest (the power cap).
        sm = [clocks[name][u] for u in range(wanted + 1)]
        top_mhz = max((c for c in sm if math.isfinite(c)), default=math.nan)
        throttled = tuple(math.isfinite(c) and c < THROTTLED_BELOW * top_mhz for c in sm)
        curves.append(
            MeasuredCurve(
                name,
                tuple(levels[u] for u in range(wanted + 1)),
                f"wattsched gpu calibrate ({Path(where).name})",
                throttled,
            )
        )
    return curves
