"""The MIG job model: one deadline job with a run time per slice compute size."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from wattsched.hardware.mig import COMPUTE_SIZES, FULL_GPU_INDEX

__all__ = ["DURATION_COLUMNS", "Job", "JobKind", "Scaling"]

#: Trace columns holding the per-size durations, in ``Job.durations_s`` order (without ``dur_full_s``).
DURATION_COLUMNS: tuple[str, ...] = tuple(f"dur_{g}g_s" for g in COMPUTE_SIZES)


class JobKind(enum.StrEnum):
    INFERENCE = "inference"
    TRAINING = "training"


class Scaling(enum.StrEnum):
    LINEAR = "linear"
    SUBLINEAR = "sublinear"
    CAPPED = "capped"
    MEASURED = "measured"


@dataclass(frozen=True, slots=True)
class Job:
    """A job of a MIG trace (CONTRACT §3).

    ``durations_s`` holds the run time alone on a slice of compute size 1, 2, 3, 4, 7 and, at index
    ``FULL_GPU_INDEX`` (5), on the GPU with MIG disabled.
    """

    job_id: str
    arrival_s: float
    deadline_s: float
    kind: JobKind
    scaling: Scaling
    durations_s: tuple[float, float, float, float, float, float]

    @staticmethod
    def default_full_duration(dur_7g_s: float, scaling: Scaling, speedup: float = 1.06) -> float:
        """``dur_full_s`` when a trace omits it: 6 % faster than 7g for linear jobs (P1 §A.3.5)."""
        return dur_7g_s / speedup if scaling == Scaling.LINEAR else dur_7g_s

    @property
    def dur_full_s(self) -> float:
        return self.durations_s[FULL_GPU_INDEX]

    def duration_for_size(self, compute_units: int) -> float:
        return self.durations_s[COMPUTE_SIZES.index(compute_units)]
