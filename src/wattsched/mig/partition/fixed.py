"""Repartitioning baselines that never change configuration: no-mig and static (P1 Sec. V-C)."""

from __future__ import annotations

from dataclasses import dataclass

from wattsched.hardware.mig import NO_MIG, MigGpu
from wattsched.mig.partition.base import PARTITIONERS, ConfigId
from wattsched.mig.results import SimSnapshot

__all__ = ["NoMigPartitioner", "StaticPartitioner"]


@dataclass
class StaticPartitioner:
    """One fixed MIG configuration all day; jobs scheduled by restricted EDF-SS.

    ``configuration=None`` takes the GPU's "static" role (P1 on the A100-40GB: cfg 3, which P1 picked as the
    best of its 12 by ET; the Table III study repeats that selection).
    """

    configuration: ConfigId | None = None
    scheduler: str = "edf-ss-restricted"
    name: str = "static"
    _chosen: ConfigId | None = None

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        del seed
        chosen = self.configuration if self.configuration is not None else gpu.role("static")
        self._chosen = gpu.configuration(chosen).ident  # ConfigError when the GPU has no such configuration

    def initial_configuration(self) -> ConfigId:
        if self._chosen is None:
            raise RuntimeError("call reset(gpu) before initial_configuration()")
        return self._chosen

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        del snapshot
        return self.initial_configuration()


@dataclass
class NoMigPartitioner(StaticPartitioner):
    """The MIG-disabled GPU (6 % faster than 7g for linear jobs) under preemptive EDF.

    On a single slice EDF-FS and EDF-SS coincide and both are fully preemptive EDF (P1 Sec. V-C).
    """

    configuration: ConfigId | None = NO_MIG
    scheduler: str = "edf-fs"
    name: str = "no-mig"


@PARTITIONERS.register("static")
def _make_static(
    configuration: ConfigId | None = None, scheduler: str = "edf-ss-restricted"
) -> StaticPartitioner:
    return StaticPartitioner(configuration=configuration, scheduler=scheduler)


@PARTITIONERS.register("no-mig")
def _make_no_mig(scheduler: str = "edf-fs") -> NoMigPartitioner:
    return NoMigPartitioner(scheduler=scheduler)
