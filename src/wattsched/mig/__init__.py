"""MIG scheduling: the event-driven simulator of one MIG GPU and its in-configuration policies."""

from __future__ import annotations

from wattsched.mig.policies import POLICIES, PolicyError, SchedulingPolicy
from wattsched.mig.results import JobRecord, JobView, SimResult, SimSnapshot
from wattsched.mig.simulator import MigSimulation, simulate
from wattsched.mig.view import Assignment, JobState, SchedulerView, ViewJob, build_view

__all__ = [
    "POLICIES",
    "Assignment",
    "JobRecord",
    "JobState",
    "JobView",
    "MigSimulation",
    "PolicyError",
    "SchedulerView",
    "SchedulingPolicy",
    "SimResult",
    "SimSnapshot",
    "ViewJob",
    "build_view",
    "records_frame",
    "simulate",
]


def __getattr__(name: str) -> object:
    """``records_frame`` (pandas) is imported on first use, so that ``import wattsched.mig`` stays light."""
    if name == "records_frame":
        from wattsched.mig.frames import records_frame

        return records_frame
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
