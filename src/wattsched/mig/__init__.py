"""MIG scheduling: the event-driven simulator of one MIG GPU and its in-configuration policies."""

from __future__ import annotations

from wattsched.mig._results import JobRecord, JobView, SimResult, SimSnapshot
from wattsched.mig.policies import POLICIES, PolicyError, SchedulingPolicy
from wattsched.mig.simulator import MigSimulation, simulate

__all__ = [
    "POLICIES",
    "JobRecord",
    "JobView",
    "MigSimulation",
    "PolicyError",
    "SchedulingPolicy",
    "SimResult",
    "SimSnapshot",
    "simulate",
]
