"""Repartitioning baselines that never change configuration: no-mig and static (papers.md §A.7.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wattsched.hardware.mig import NO_MIG
from wattsched.mig.partition.base import PARTITIONERS, ConfigId

__all__ = ["NoMigPartitioner", "StaticPartitioner"]


@dataclass
class StaticPartitioner:
    """One fixed MIG configuration all day; jobs scheduled by restricted EDF-SS.

    P1 picked cfg 3 as the best of all 12 by ET; the Table III study repeats that selection.
    """

    configuration: ConfigId = 3
    scheduler: str = "edf-ss-restricted"
    name: str = "static"

    def reset(self, seed: int | None = None) -> None:
        del seed

    def initial_configuration(self) -> ConfigId:
        return self.configuration

    def decide(self, snapshot: Any) -> ConfigId:
        del snapshot
        return self.configuration


@dataclass
class NoMigPartitioner(StaticPartitioner):
    """The MIG-disabled GPU (6 % faster than 7g for linear jobs) under preemptive EDF.

    On a single slice EDF-FS and EDF-SS coincide and both are fully preemptive EDF (papers.md §A.7.2).
    """

    configuration: ConfigId = NO_MIG
    scheduler: str = "edf-fs"
    name: str = "no-mig"


@PARTITIONERS.register("static")
def _make_static(configuration: ConfigId = 3, scheduler: str = "edf-ss-restricted") -> StaticPartitioner:
    return StaticPartitioner(configuration=configuration, scheduler=scheduler)


@PARTITIONERS.register("no-mig")
def _make_no_mig(scheduler: str = "edf-fs") -> NoMigPartitioner:
    return NoMigPartitioner(scheduler=scheduler)
