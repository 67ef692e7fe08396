"""The per-decision reward of papers.md §A.6.3 as a pure function.

``r_k = -(a·E_k + L_k) / (a + 1)``: ``E_k`` the energy in joules consumed since the previous decision
(blackouts
included), ``L_k`` the lateness newly accrued in that interval, in minutes, divided by the expected number
of jobs
per day. Summed over a day, ``-Σ r_k`` is the day's ET term ``(a·x + y)/(a + 1)`` (up to the normaliser being
the expected rather than the realised job count), so maximising return minimises ET.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattsched.units import SECONDS_PER_MINUTE

__all__ = ["RewardSpec", "step_reward"]


@dataclass(frozen=True)
class RewardSpec:
    """``et_coefficient`` is ET's ``a`` (per joule) from pilot runs; ``jobs_norm`` the expected jobs per day.

    ``scale`` multiplies every reward (a pure rescaling that keeps Q-values near 1 for the network; it changes
    no ranking of policies).
    """

    et_coefficient: float
    jobs_norm: float = 207.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        if self.et_coefficient < 0 or self.jobs_norm <= 0 or self.scale <= 0:
            raise ValueError(f"invalid reward spec {self}")


def step_reward(energy_j: float, lateness_s: float, spec: RewardSpec) -> float:
    """Reward for an interval with ``energy_j`` consumed and ``lateness_s`` newly accrued lateness
    (seconds)."""
    a = spec.et_coefficient
    lateness_term = lateness_s / SECONDS_PER_MINUTE / spec.jobs_norm
    return -spec.scale * (a * energy_j + lateness_term) / (a + 1.0)
