"""Day-Night MIG: one configuration by day, another by night, switched at decision epochs (P1 §V-C)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wattsched.errors import ConfigError
from wattsched.mig.partition.base import PARTITIONERS, ConfigId

__all__ = ["DayNightPartitioner"]


@dataclass
class DayNightPartitioner:
    """``day_configuration`` in [day_start_h, day_end_h) of each day, ``night_configuration`` otherwise.

    P1: cfg 6 from 05:00 to 17:00, cfg 2 otherwise. The switch happens at the first job arrival or completion
    at or after the boundary (decisions are only taken at epochs), so a day costs about two repartitions.
    """

    day_configuration: ConfigId = 6
    night_configuration: ConfigId = 2
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

    def configuration_at(self, time_s: float) -> ConfigId:
        hour = (time_s % 86_400.0) / 3600.0
        return (
            self.day_configuration if self.day_start_h <= hour < self.day_end_h else self.night_configuration
        )

    def reset(self, seed: int | None = None) -> None:
        del seed

    def initial_configuration(self) -> ConfigId:
        return self.configuration_at(0.0)

    def decide(self, snapshot: Any) -> ConfigId:
        return self.configuration_at(float(snapshot.now_s))


@PARTITIONERS.register("day-night")
def _make_day_night(
    day_configuration: ConfigId = 6,
    night_configuration: ConfigId = 2,
    day_start_h: float = 5.0,
    day_end_h: float = 17.0,
) -> DayNightPartitioner:
    return DayNightPartitioner(day_configuration, night_configuration, day_start_h, day_end_h)
