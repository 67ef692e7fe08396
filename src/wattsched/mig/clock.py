"""A GPU-wide clock level for the MIG simulator (``MigSimulation(clock=...)``).

On a MIG GPU the SM clock is one setting for the whole GPU, so the level is chosen per scheduling decision
from all running jobs: the governor gets the tightest *slack ratio* ``min_j (d_j − now) / (remaining time of
j at the default clock)`` (:func:`tightest_slack_ratio`) and returns a level; every running job then runs at
``speed[level]`` and the busy power above idle is scaled by ``power_scale[level]`` (idle power is unchanged).
:mod:`wattsched.cluster.clocks` builds the governor from P2's model.

The simulation indexes its power and speed tables by ``level · states + busy state``
(:func:`clock_tables`); it keeps the level in force and the levels entered so far itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from wattsched.hardware.power import PowerTable
from wattsched.mig.view import SchedulerView

__all__ = ["ClockGovernor", "clock_tables", "clocked_power", "tightest_slack_ratio"]


class ClockGovernor(Protocol):
    """Chooses a GPU-wide clock level (see the module docstring)."""

    @property
    def speed(self) -> Sequence[float]:
        """Speed of every running job at each level, relative to the default clock (1.0)."""

    @property
    def power_scale(self) -> Sequence[float]:
        """Busy power above idle at each level, relative to the default clock (1.0)."""

    @property
    def initial_level(self) -> int:
        """The level before the first decision."""

    def level_for(self, slack_ratio: float) -> int:
        """The level for the tightest slack ratio of the running jobs (``inf``: no running job)."""
        ...


def tightest_slack_ratio(state: SchedulerView, now_s: float) -> float:
    """``min_j (deadline − now) / remaining time at the default clock`` over the running jobs (``inf``:
    none with work left)."""
    ratio = math.inf
    remaining = state.remaining
    durations = state.durations_s
    slice_dix = state.slice_duration_index
    deadline = state.deadline_s
    s = 0
    for j in state.running:
        if j >= 0:
            need = remaining[j] * durations[j][slice_dix[s]]
            if need > 0.0:
                r = (deadline[j] - now_s) / need
                if r < ratio:
                    ratio = r
        s += 1  # noqa: SIM113 - as in the engine's loops
    return ratio


def clocked_power(watts: float, idle_w: float, scale: float) -> float:
    """A busy state's power at a clock level: its power above idle scaled by the level's ``power_scale``
    (idle power unchanged; NaN, an unreachable state, stays NaN)."""
    return watts if watts != watts else idle_w + (watts - idle_w) * scale


def clock_tables(table: PowerTable, clock: ClockGovernor) -> tuple[tuple[float, ...], tuple[float, ...], int]:
    """Power and speed of every (level, busy state), indexed ``level · states + state``, and the first
    level (computed once per table and governor: a cluster builds thousands of identical GPUs)."""
    # NaN (unreachable states) never equals itself: key on a NaN-free copy.
    key = (tuple(w if w == w else -1.0 for w in table.power_w), table.speed, id(clock))
    cached = _TABLES.get(key)
    if cached is not None and cached[0] is clock:
        return cached[1]
    tables = _clock_tables(table, clock)
    if len(_TABLES) >= 64:  # a bounded cache: schedules are few (one per GPU model and clock model)
        _TABLES.clear()
    _TABLES[key] = (clock, tables)
    return tables


_TABLES: dict[tuple[Any, ...], tuple[ClockGovernor, tuple[tuple[float, ...], tuple[float, ...], int]]] = {}


def _clock_tables(
    table: PowerTable, clock: ClockGovernor
) -> tuple[tuple[float, ...], tuple[float, ...], int]:
    idle = table.power_w[0]
    power: list[float] = []
    speed: list[float] = []
    for scale, level_speed in zip(clock.power_scale, clock.speed, strict=True):
        for state, watts in enumerate(table.power_w):
            power.append(clocked_power(watts, idle, scale))
            throttle = table.speed[state] if table.speed is not None else 1.0
            speed.append(throttle * level_speed)
    if not 0 <= clock.initial_level < len(clock.speed):
        raise ValueError(f"initial clock level {clock.initial_level} is not one of {len(clock.speed)}")
    return tuple(power), tuple(speed), clock.initial_level
