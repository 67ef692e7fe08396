"""Energy of real work on real GPUs: :func:`measure` (a context manager), :func:`run_measured` (a command)."""

from __future__ import annotations

from wattsched.energy.command import run_measured
from wattsched.energy.measure import EnergyMeter, GpuEnergy, Measurement, measure

__all__ = ["EnergyMeter", "GpuEnergy", "Measurement", "measure", "run_measured"]
