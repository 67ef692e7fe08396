"""Repartitioning policies: which MIG configuration to use at each job arrival and completion.

Importing this package registers every policy in :data:`PARTITIONERS`: ``no-mig``, ``static``, ``day-night``,
``lookahead`` and ``dynamic`` (a trained DQN; torch is imported only when a model is loaded).
"""

from __future__ import annotations

from wattsched.mig.partition import day_night, dqn, fixed, lookahead
from wattsched.mig.partition.base import (
    MIG_CONFIGURATIONS,
    PARTITIONERS,
    ConfigId,
    RepartitionPolicy,
    hour_of_day,
)
from wattsched.mig.partition.day_night import DayNightPartitioner
from wattsched.mig.partition.dqn import DQNPartitioner
from wattsched.mig.partition.fixed import NoMigPartitioner, StaticPartitioner
from wattsched.mig.partition.lookahead import LookaheadPartitioner
from wattsched.mig.partition.runner import DayRun, Decision, run_day

__all__ = [
    "MIG_CONFIGURATIONS",
    "PARTITIONERS",
    "ConfigId",
    "DQNPartitioner",
    "DayNightPartitioner",
    "DayRun",
    "Decision",
    "LookaheadPartitioner",
    "NoMigPartitioner",
    "RepartitionPolicy",
    "StaticPartitioner",
    "hour_of_day",
    "run_day",
]

del day_night, dqn, fixed, lookahead
