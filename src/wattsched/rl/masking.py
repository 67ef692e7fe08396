"""Action masking: which configurations the agent may choose in a state, as a pure function of the
observation.

Rule (``EnvConfig.mask_idle_slices``): staying in the current configuration is always allowed; switching is
allowed only to a configuration with at most ``max(1, n)`` slices, ``n`` the number of unfinished jobs. A
configuration with more slices than jobs leaves a slice idle while each job runs on a smaller, slower slice
than a configuration with fewer slices would give it; under P1's deadlines (``a + U(1, 1.5)·dur_7g``) that
makes jobs late for nothing, and paying a repartition (every running job preempted, 4 s blackout) to get there
is never worth it. Staying stays allowed because leaving would cost a repartition.

A smaller action set (``EnvConfig.balanced_actions``): :func:`balanced_configurations` keeps, for each
number of slices, the one configuration that splits the GPU most evenly (leximin over the slice sizes). With
``k`` jobs of similar urgency, the even split gives the smallest slice the most compute; the other
configurations with ``k`` slices only move compute from the smallest slice to a larger one.

The mask reads two blocks of the observation: the configuration one-hot and the job-count one-hot
(``count_bins``; its overflow bin counts as its lower edge). :class:`ActionMask` holds the table
``allowed[configuration, count bin, action]``; the DQN applies it to Q-values (greedy choice, the target's
maximum) and to exploration, the numpy partitioner to its greedy choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wattsched.hardware.mig import MigGpu
from wattsched.rl.observation import ObservationSpec

__all__ = ["ActionMask", "balanced_configurations"]


@dataclass(frozen=True)
class ActionMask:
    """``allowed[c, n, k]``: action ``k`` is allowed in configuration ``spec.configurations[c]`` with
    job-count bin ``n``. ``config_block`` and ``count_block`` are the (start, length) of the two observation
    blocks."""

    allowed: np.ndarray
    config_block: tuple[int, int]
    count_block: tuple[int, int]

    @classmethod
    def idle_slices(cls, gpu: MigGpu, spec: ObservationSpec, actions: Sequence[int | str]) -> ActionMask:
        """The idle-slice rule (module docstring) for ``actions`` (configuration ids of ``gpu``)."""
        if spec.count_bins < 2:
            raise ValueError("the idle-slice mask needs the job-count block (count_bins >= 2)")
        slices = np.asarray([len(gpu.configuration(a).slices) for a in actions])
        allowed = np.zeros((spec.n_configurations, spec.count_bins, len(actions)), dtype=bool)
        for c, current in enumerate(spec.configurations):
            stay = np.asarray([a == current for a in actions])
            for n in range(spec.count_bins):
                row = stay | (slices <= max(1, n))
                allowed[c, n] = row if row.any() else True
        return cls(allowed, (0, spec.n_configurations), (spec.p1_size, spec.count_bins))

    @property
    def n_actions(self) -> int:
        return int(self.allowed.shape[2])

    def of(self, observations: np.ndarray) -> np.ndarray:
        """Boolean mask, shape ``(batch, actions)`` (or ``(actions,)`` for one observation)."""
        obs = np.asarray(observations)
        (c0, cn), (n0, nn) = self.config_block, self.count_block
        config = obs[..., c0 : c0 + cn].argmax(axis=-1)
        count = obs[..., n0 : n0 + nn].argmax(axis=-1)
        mask: np.ndarray = self.allowed[config, count]
        return mask


def balanced_configurations(gpu: MigGpu) -> tuple[int | str, ...]:
    """Per number of slices, the configuration of ``gpu`` whose sorted slice sizes are largest in
    lexicographic order (leximin: the largest smallest slice, then the largest second smallest, ...);
    ties: the lower id. Ordered by number of slices. A100-40GB: 1, 2, 6, 9, 10, 11, 12."""
    best: dict[int, tuple[tuple[int, ...], int | str]] = {}
    for ident in gpu.configuration_ids:
        sizes = tuple(sorted(s.compute for s in gpu.configuration(ident).slices))
        count = len(sizes)
        if count not in best or sizes > best[count][0]:
            best[count] = (sizes, ident)
    return tuple(best[count][1] for count in sorted(best))
