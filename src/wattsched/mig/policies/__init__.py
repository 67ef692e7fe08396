"""In-configuration scheduling policies; importing this package registers all of them in ``POLICIES``."""

from __future__ import annotations

from wattsched.mig.policies.base import POLICIES, PolicyError, SchedulingPolicy, StarvedJobsError
from wattsched.mig.policies.edf_fs import EdfFastestSlice
from wattsched.mig.policies.edf_ss import EdfSlowestSlice
from wattsched.mig.policies.edf_ss_restricted import RestrictedEdfSlowestSlice
from wattsched.mig.policies.lalf import LeastAverageLaxityFirst
from wattsched.mig.policies.llf import LeastLaxityFirst

__all__ = [
    "POLICIES",
    "EdfFastestSlice",
    "EdfSlowestSlice",
    "LeastAverageLaxityFirst",
    "LeastLaxityFirst",
    "PolicyError",
    "RestrictedEdfSlowestSlice",
    "SchedulingPolicy",
    "StarvedJobsError",
]
