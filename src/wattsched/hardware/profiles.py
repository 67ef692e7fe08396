"""MIG building blocks: GPU-instance profiles, placed slices and configurations (docs/howto/add-gpu.md).

Placements count **memory slots** as NVML does: ``(start, size)`` with 0-based ``start``. A configuration
lists
its slices in placement order (ascending ``start``). Only a slice's compute size matters to a job's run time
(P1's model, docs/concepts/mig-model.md); its SM count and memory are facts kept for reports, power models and
the NVML tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["NO_MIG", "Configuration", "InstanceProfile", "Slice"]

#: Id of the MIG-disabled "configuration" (the whole GPU as one device).
NO_MIG = "no-mig"


@dataclass(frozen=True)
class InstanceProfile:
    """A GPU-instance profile as NVML reports it (``1g.18gb``: 1 compute slice, 1 memory slot)."""

    name: str
    nvml_id: int
    compute: int
    memory_slots: int
    sms: int
    memory_mb: int
    #: ``(start, size)`` memory-slot placements NVML allows, ascending ``start``.
    placements: tuple[tuple[int, int], ...]
    #: Most instances of this profile at once (NVML's ``instanceCount``).
    max_instances: int
    #: ``+me`` profiles (media extensions): same compute as the plain profile; left out of derived sets.
    media: bool = False


@dataclass(frozen=True)
class Slice:
    """One placed GPU instance of a configuration.

    ``duration_index`` selects the job run time that applies on this slice: the position of ``compute`` in
    the GPU's ``compute_sizes`` (the MIG-disabled GPU uses one past the last size).
    """

    profile: str
    compute: int
    start: int
    size: int
    sms: int
    duration_index: int

    @property
    def label(self) -> str:
        """``profile@start``, e.g. ``2g.10gb@4``."""
        return f"{self.profile}@{self.start}"


@dataclass(frozen=True)
class Configuration:
    """A partition of the GPU into slices (placement order), or the MIG-disabled GPU (ident ``"no-mig"``)."""

    ident: int | str
    slices: tuple[Slice, ...]
    #: Free-text name (e.g. P1's slot layout), for reports only.
    description: str = field(default="", compare=False)

    @property
    def total_compute(self) -> int:
        return sum(s.compute for s in self.slices)

    @property
    def mig_enabled(self) -> bool:
        return self.ident != NO_MIG

    @property
    def compute_sizes(self) -> tuple[int, ...]:
        return tuple(s.compute for s in self.slices)

    @property
    def shape(self) -> tuple[str, ...]:
        """The profile names, largest first (a configuration's placement-free identity)."""
        return tuple(sorted((s.profile for s in self.slices), key=lambda p: (-_compute_of(self, p), p)))

    def label(self) -> str:
        """``4g.20gb@0 + 2g.10gb@4 + 1g.10gb@6`` (``no-mig`` for the whole GPU)."""
        if not self.mig_enabled:
            return NO_MIG
        return " + ".join(s.label for s in self.slices)


def _compute_of(config: Configuration, profile: str) -> int:
    return next(s.compute for s in config.slices if s.profile == profile)
