"""Day-Night MIG: one configuration by day, another by night, switched at decision epochs (P1 Sec. V-C)."""

from __future__ import annotations

from dataclasses import dataclass

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition.base import PARTITIONERS, ConfigId
from wattsched.mig.results import SimSnapshot

__all__ = ["DayNightPartitioner"]


@dataclass
class DayNightPartitioner:
    """``day_configuration`` in [day_start_h, day_end_h) of each day, ``night_configuration`` otherwise.

    ``None`` takes the GPU's "day" / "night" roles (P1 on the A100-40GB: cfg 6 from 05:00 to 17:00, cfg 2
    otherwise). The switch happens at the first job arrival or completion at or after the boundary (decisions
    are only taken at epochs), so a day costs about two repartitions.
    """

    day_configuration: ConfigId | None = None
    night_configuration: ConfigId | None = None
    day_start_h: float = 5.0
    day_end_h: float = 17.0
    scheduler: str = "edf-ss-restricted"
    name: str = "day-night"

    def __post_init__(self) -> None:
        if not 0.0 <= self.day_start_h < self.day_end_h <= 24.0:
            raise ConfigError(
                "day-night needs 0 <= day_start_h < day_end_h <= 24, "
                f"got {self.day_start_h}, {self.day_end_h}"
            )

    _day: ConfigId | None = None
    _night: ConfigId | None = None

    def configuration_at(self, time_s: float) -> ConfigId:
        if self._day is None or self._night is None:
            raise RuntimeError("call reset(gpu) before asking for a configuration")
        hour = (time_s % 86_400.0) / 3600.0
        return self._day if self.day_start_h <= hour < self.day_end_h else self._night

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        del seed
        day = self.day_configuration if self.day_configuration is not None else gpu.role("day")
        night = self.night_configuration if self.night_configuration is not None else gpu.role("night")
        self._day, self._night = gpu.configuration(day).ident, gpu.configuration(night).ident

    def initial_configuration(self) -> ConfigId:
        return self.configuration_at(0.0)

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        return self.configuration_at(float(snapshot.now_s))


@PARTITIONERS.register("day-night")
def _make_day_night(
    day_configuration: ConfigId | None = None,
    night_configuration: ConfigId | None = None,
    day_start_h: float = 5.0,
    day_end_h: float = 17.0,
) -> DayNightPartitioner:
    return DayNightPartitioner(day_configuration, night_configuration, day_start_h, day_end_h)
