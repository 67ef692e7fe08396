"""The repartitioning-policy protocol and its registry.

A repartitioning policy picks the MIG configuration at every decision epoch of the simulator (each job arrival
and completion outside a repartition blackout). It is told the GPU at ``reset`` (its
configurations are the ids it may choose; configurations it names by role — "static", "day", "night",
"initial" — come from the GPU's catalogue entry), reads a typed read-only
:class:`~wattsched.mig.SimSnapshot` at each epoch and returns a configuration id; the runner
(:mod:`wattsched.mig.partition.runner`) applies it through the simulator's ``repartition``
(docs/concepts/mig-model.md: 4 s blackout at idle power, every running job preempted; the current one is a
no-op).
:func:`wattsched.mig.checks.check_partitioner` checks a partitioner against these rules.
Jobs inside a configuration are scheduled by the policy's ``scheduler`` (``edf-ss-restricted`` for every MIG
method; preemptive EDF on the single full-GPU slice for no-mig).
"""

from __future__ import annotations

from os import PathLike, fspath
from typing import Protocol, runtime_checkable

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig.results import SimSnapshot
from wattsched.registry import Registry

__all__ = [
    "NEEDS_GENERATED_WORKLOAD",
    "PARTITIONERS",
    "ConfigId",
    "RepartitionPolicy",
    "check_workload_source",
    "hour_of_day",
]

#: A configuration id as the GPU lists them (``wattsched mig configs --gpu G``), or ``"no-mig"``.
ConfigId = int | str


@runtime_checkable
class RepartitionPolicy(Protocol):
    """Chooses a configuration at each decision epoch; never called during a blackout."""

    name: str
    #: In-configuration scheduling policy name (``wattsched.mig.policies.POLICIES``).
    scheduler: str

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        """Prepare a new day on ``gpu`` (``seed`` drives any randomness of the policy)."""
        ...

    def initial_configuration(self) -> ConfigId:
        """The configuration at t = 0 (no repartition cost); called after :meth:`reset`."""
        ...

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        """The configuration to use from now on; returning the current one keeps it at no cost."""
        ...


#: Registry of repartitioning-policy factories: ``PARTITIONERS.make("day-night", day_configuration=6)``.
PARTITIONERS: Registry[RepartitionPolicy] = Registry(
    "repartitioning policy", entry_points="wattsched.partitioners"
)


def hour_of_day(time_s: float) -> int:
    """Hour of the day 0..23 of a simulation time (days repeat every 86,400 s)."""
    return int(time_s // 3600.0) % 24


#: Partitioners that cannot run on a trace: rollout simulates sampled days drawn from a generated workload
#: (a rate or a profile), which a trace does not have. Lookahead runs on a trace: by default it samples no
#: days, and weighs energy against lateness with its default ET coefficient and jobs per day.
NEEDS_GENERATED_WORKLOAD: frozenset[str] = frozenset({"rollout"})


def check_workload_source(partitioner: str, trace: str | PathLike[str] | None) -> None:
    """Refuse a partitioner that needs a generated workload on the trace ``trace`` (``None``: generated).

    The one check `mig day`, `cluster run` and sweeps (file and Python API) share, so a partitioner is
    accepted or refused on a trace the same way everywhere: ConfigError naming the partitioner and the
    trace."""
    if trace is not None and partitioner in NEEDS_GENERATED_WORKLOAD:
        raise ConfigError(
            f"partitioner '{partitioner}' needs a generated workload (a rate or a profile), not the trace "
            f"{fspath(trace)}: it simulates days drawn from that workload"
        )
