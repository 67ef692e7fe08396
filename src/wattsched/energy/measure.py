"""Measure the GPU energy of a block of Python or of a command (``wattsched measure``, docs/howto/nvml.md).

Energy comes from NVML's total-energy counter (mJ since the driver loaded) where the GPU has one: the
difference between the start and the end. Where it has none, the board power is sampled every
``interval_s`` and integrated (trapezoids), and the result says ``"energy_source": "sampled"``. Power is
sampled in both cases for ``max_power_w``. On a GPU in MIG mode NVML reports the whole GPU's energy, not one
instance's; the result says so.

    with wattsched.measure() as m:
        train()
    print(m.result.energy_j)
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from wattsched.hardware.gpu import GpuBackend, GpuError, open_backend

__all__ = ["EnergyMeter", "GpuEnergy", "Measurement", "measure"]

log = logging.getLogger(__name__)

MIG_NOTE = "MIG mode is on: NVML reports the energy of the whole GPU, not of one MIG instance"


@dataclass(frozen=True)
class GpuEnergy:
    """One GPU's share of a measurement."""

    index: int
    name: str
    energy_j: float
    avg_power_w: float
    max_power_w: float
    energy_source: str  # "counter" or "sampled"
    samples: int
    mig_mode: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "energy_j": self.energy_j,
            "avg_power_w": self.avg_power_w,
            "max_power_w": self.max_power_w,
            "energy_source": self.energy_source,
            "samples": self.samples,
            "mig_mode": self.mig_mode,
        }


@dataclass(frozen=True)
class Measurement:
    """Energy over every measured GPU, wall time, mean and peak power, and the per-GPU parts."""

    energy_j: float
    time_s: float
    avg_power_w: float
    max_power_w: float
    gpus: tuple[GpuEnergy, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``wattsched measure --json``: its documented keys (docs/howto/nvml.md) plus the
        notes."""
        return {
            "energy_j": self.energy_j,
            "time_s": self.time_s,
            "avg_power_w": self.avg_power_w,
            "max_power_w": self.max_power_w,
            "gpus": [g.to_dict() for g in self.gpus],
            "notes": list(self.notes),
        }


class EnergyMeter:
    """A context manager that measures GPU energy between ``__enter__`` and ``__exit__``.

    ``backend``: a :class:`GpuBackend`, a ``--backend`` string, or ``None`` (``$WATTSCHED_GPU_BACKEND``, else
    NVML); a backend the meter opened itself is closed on exit. ``gpus``: indices (default all).
    ``interval_s``: power sampling period (default 0.1 s). ``clock``: seconds, monotonic (tests inject one).
    """

    def __init__(
        self,
        backend: GpuBackend | str | None = None,
        *,
        gpus: Sequence[int] | None = None,
        interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self._owned = backend is None or isinstance(backend, str)
        self.backend: GpuBackend = (
            open_backend(backend) if backend is None or isinstance(backend, str) else backend
        )
        count = self.backend.device_count()
        self.indices = tuple(range(count)) if gpus is None else tuple(gpus)
        for index in self.indices:
            if isinstance(index, bool) or not 0 <= index < count:
                raise GpuError(f"no GPU with index {index} ({self.backend.name} has {count}: 0..{count - 1})")
        self.interval_s = interval_s
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._samples: dict[int, list[tuple[float, float]]] = {i: [] for i in self.indices}
        self._start_j: dict[int, float | None] = {}
        self._start_s = 0.0
        self.result: Measurement | None = None

    def _sample(self) -> None:
        now = self._clock()
        for index in self.indices:
            self._samples[index].append((now, self.backend.power_w(index)))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._sample()
            except GpuError as exc:  # a failing read ends sampling; the counters still give the energy
                log.warning("power sampling stopped: %s", exc)
                return

    def start(self) -> EnergyMeter:
        """Read the counters and start sampling (``__enter__`` does this)."""
        self._start_s = self._clock()  # time first at the start, last at the end: the counters lie inside
        self._start_j = {i: self.backend.energy_j(i) for i in self.indices}
        self._sample()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="wattsched-measure", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> Measurement:
        """Stop sampling, read the counters and compute :attr:`result` (``__exit__`` does this)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        end_j = {i: self.backend.energy_j(i) for i in self.indices}
        time_s = max(self._clock() - self._start_s, 0.0)
        parts = []
        for index in self.indices:
            samples = self._samples[index]
            start_j, stop_j = self._start_j[index], end_j[index]
            if start_j is not None and stop_j is not None and stop_j >= start_j:
                energy_j, source = stop_j - start_j, "counter"
            else:
                energy_j, source = _integrate(samples), "sampled"
            parts.append(
                GpuEnergy(
                    index=index,
                    name=self.backend.identity(index).name,
                    energy_j=energy_j,
                    avg_power_w=energy_j / time_s if time_s > 0 else 0.0,
                    max_power_w=max(power for _, power in samples),
                    energy_source=source,
                    samples=len(samples),
                    mig_mode=self.backend.mig_mode(index)[0],
                )
            )
        notes = []
        if any(p.energy_source == "sampled" for p in parts):
            notes.append(
                "no NVML energy counter on GPU(s) "
                + ", ".join(str(p.index) for p in parts if p.energy_source == "sampled")
                + f": energy is sampled power integrated every {self.interval_s:g} s"
            )
        if any(p.mig_mode for p in parts):
            notes.append(MIG_NOTE)
        total = sum(p.energy_j for p in parts)
        self.result = Measurement(
            energy_j=total,
            time_s=time_s,
            avg_power_w=total / time_s if time_s > 0 else 0.0,
            max_power_w=sum(p.max_power_w for p in parts),
            gpus=tuple(parts),
            notes=tuple(notes),
        )
        if self._owned:
            self.backend.close()
        return self.result

    def __enter__(self) -> EnergyMeter:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def _integrate(samples: Sequence[tuple[float, float]]) -> float:
    return sum((b - a) * (pa + pb) / 2.0 for (a, pa), (b, pb) in itertools.pairwise(samples))


def measure(
    backend: GpuBackend | str | None = None, *, gpus: Sequence[int] | None = None, interval_s: float = 0.1
) -> EnergyMeter:
    """``with wattsched.measure() as m: ...``, then ``m.result`` (a :class:`Measurement`).

    See :class:`EnergyMeter` for the arguments.

    ``max_power_w`` of the whole measurement is the sum of the GPUs' peaks (an upper bound of the peak sum).
    """
    return EnergyMeter(backend, gpus=gpus, interval_s=interval_s)
