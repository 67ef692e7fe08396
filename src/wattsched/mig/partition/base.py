"""The repartitioning-policy protocol and its registry.

A repartitioning policy picks the MIG configuration at every decision epoch of the simulator (each job arrival
and completion outside a repartition blackout, papers.md §A.6.2). It reads a read-only snapshot and returns a
configuration id; the runner (:mod:`wattsched.mig.partition.runner`) applies it through the simulator's
``repartition`` (CONTRACT §4: 4 s blackout at P(0), every running job preempted; the current one is a no-op).
Jobs inside a configuration are scheduled by the policy's ``scheduler`` (``edf-ss-restricted`` for every MIG
method; preemptive EDF on the single full-GPU slice for no-mig).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from wattsched.registry import Registry

__all__ = [
    "MIG_CONFIGURATIONS",
    "PARTITIONERS",
    "ConfigId",
    "JobView",
    "RepartitionPolicy",
    "SnapshotView",
    "hour_of_day",
]

#: A configuration id: 1..12 or ``"no-mig"``.
ConfigId = int | str
#: The 12 MIG configurations a repartitioning policy may choose among (papers.md §A.2.2).
MIG_CONFIGURATIONS: tuple[int, ...] = tuple(range(1, 13))


class JobView(Protocol):
    """What a policy may read about one unfinished job of a snapshot."""

    @property
    def arrival_s(self) -> float: ...
    @property
    def deadline_s(self) -> float: ...
    @property
    def remaining_fraction(self) -> float: ...
    @property
    def durations_s(self) -> Sequence[float]: ...


class SnapshotView(Protocol):
    """The read-only state a policy decides on (the simulator's ``SimSnapshot``)."""

    @property
    def now_s(self) -> float: ...
    @property
    def configuration(self) -> ConfigId: ...
    @property
    def jobs(self) -> Sequence[Any]: ...


@runtime_checkable
class RepartitionPolicy(Protocol):
    """Chooses a configuration at each decision epoch; never called during a blackout."""

    name: str
    #: In-configuration scheduling policy name (``wattsched.mig.policies.POLICIES``).
    scheduler: str

    def reset(self, seed: int | None = None) -> None:
        """Forget per-day state before a new day (``seed`` drives any randomness of the policy)."""
        ...

    def initial_configuration(self) -> ConfigId:
        """The configuration at t = 0 (no repartition cost)."""
        ...

    def decide(self, snapshot: Any) -> ConfigId:
        """The configuration to use from now on; returning the current one keeps it at no cost."""
        ...


#: Registry of repartitioning-policy factories: ``PARTITIONERS.make("day-night", day_configuration=6)``.
PARTITIONERS: Registry[RepartitionPolicy] = Registry("repartitioning policy")


def hour_of_day(time_s: float) -> int:
    """Hour of the day 0..23 of a simulation time (days repeat every 86,400 s)."""
    return int(time_s // 3600.0) % 24
