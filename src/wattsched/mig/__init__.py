"""MIG scheduling: the event-driven simulator of one MIG GPU and its in-configuration policies."""

from __future__ import annotations

from wattsched.mig._results import JobRecord, JobView, SimResult, SimSnapshot
from wattsched.mig.policies import POLICIES, PolicyError, SchedulingPolicy
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
    "simulate",
]
