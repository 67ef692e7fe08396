"""Repartitioning policies: which MIG configuration to use at each job arrival and completion.

Importing this package registers ``no-mig``, ``static``, ``day-night``, ``lookahead`` and ``rollout`` (a
base policy improved by simulating it ahead) in :data:`PARTITIONERS`;
``dynamic`` (a trained DQN) lives in :mod:`wattsched.rl.partitioner` and registers when that is imported
(``mig``
never imports ``rl``).
"""

from __future__ import annotations

from wattsched.mig.partition import day_night, fixed, lookahead, rollout
from wattsched.mig.partition.base import (
    PARTITIONERS,
    ConfigId,
    RepartitionPolicy,
    check_workload_source,
    hour_of_day,
)
from wattsched.mig.partition.day_night import DayNightPartitioner
from wattsched.mig.partition.fixed import NoMigPartitioner, StaticPartitioner
from wattsched.mig.partition.lookahead import LookaheadPartitioner
from wattsched.mig.partition.rollout import RolloutPartitioner
from wattsched.mig.partition.runner import DayRun, Decision, run_day

__all__ = [
    "PARTITIONERS",
    "ConfigId",
    "DayNightPartitioner",
    "DayRun",
    "Decision",
    "LookaheadPartitioner",
    "NoMigPartitioner",
    "RepartitionPolicy",
    "RolloutPartitioner",
    "StaticPartitioner",
    "check_workload_source",
    "hour_of_day",
    "run_day",
]

del day_night, fixed, lookahead, rollout
