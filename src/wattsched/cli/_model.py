"""What a run's numbers rest on: a measured or an estimated power model, and whether the GPUs honour the
clock option. Every command that simulates energy says it in its JSON and, when it matters, in one warning.

* ``power_model``: ``"measured"`` when every GPU's catalogue entry has measured power curves, else
  ``"estimated"`` (an entry marks borrowed or rescaled curves with ``estimated = true`` in its ``[power]``
  table, e.g. the H100's curves are the H200's).
* ``clocks``: ``False`` when not asked for; ``True`` when every GPU has a clock table (supported SM clocks);
  ``"unsupported"`` when none has one (the option then changes nothing); ``"partial"`` when only some do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wattsched.hardware.mig import MigGpu

__all__ = ["ModelNotes", "model_notes"]

LOG = logging.getLogger("wattsched.cli")


@dataclass(frozen=True)
class ModelNotes:
    power_model: str
    clocks: bool | str
    #: GPUs (catalogue names) with estimated curves, and those without a clock table when clocks were asked.
    estimated: tuple[str, ...]
    no_clock_table: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"power_model": self.power_model, "clocks": self.clocks}

    def warn(self) -> None:
        """One warning line per caveat."""
        if self.estimated:
            LOG.warning(
                "energy from an estimated power model (%s: curves not measured on this GPU model; "
                "see 'note' in its catalogue entry)",
                ", ".join(self.estimated),
            )
        if self.no_clock_table:
            LOG.warning(
                "clocks %s: %s has no clock table, so GPU clocks stay at their default there",
                self.clocks,
                ", ".join(self.no_clock_table),
            )


def model_notes(gpus: Iterable[MigGpu], *, clocks: bool = False) -> ModelNotes:
    """The notes of a run on ``gpus`` (repeats allowed) with the clock option ``clocks``."""
    distinct = list({gpu.name: gpu for gpu in gpus}.values())
    estimated = tuple(gpu.name for gpu in distinct if gpu.power.estimated)
    missing = tuple(gpu.name for gpu in distinct if gpu.clocks is None) if clocks else ()
    state: bool | str = clocks
    if clocks and missing:
        state = "unsupported" if len(missing) == len(distinct) else "partial"
    return ModelNotes("estimated" if estimated else "measured", state, estimated, missing)
