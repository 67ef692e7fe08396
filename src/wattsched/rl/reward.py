"""The per-decision reward of the repartitioning agent as a pure function, with an optional switching cost.

``r_k = -scale·(a·E_k + (L_k + p·R_k) / 60 / N) / (a + 1)``: ``E_k`` the energy in joules consumed since the
previous decision (blackouts included), ``L_k`` the lateness newly accrued in that interval in seconds, ``N``
the expected number of jobs per day, ``R_k`` the repartitions started at the decision and ``p`` the switching
penalty in seconds of lateness per repartition (0: P1's reward). Summed over a day with ``p = 0``, ``-Σ r_k``
is the day's ET term ``(a·x + y)/(a + 1)`` (up to the normaliser being the expected rather than the realised
job count), so maximising return minimises ET.

The penalty is not part of ET: it is a shaping term that makes the agent pay for a switch up front. A
repartition's real cost (every running job preempted and delayed by the 4 s blackout) reaches the reward only
through later lateness, mixed with the noise of arrivals; ``p`` names it at the decision that causes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from wattsched.units import SECONDS_PER_MINUTE

__all__ = ["RewardSpec", "step_reward"]


@dataclass(frozen=True)
class RewardSpec:
    """``et_coefficient`` is ET's ``a`` (per joule) from pilot runs; ``jobs_norm`` the expected jobs per day.

    ``scale`` multiplies every reward (a pure rescaling that keeps Q-values near 1 for the network; it changes
    no ranking of policies). ``switch_penalty_s`` is charged as that many seconds of lateness per repartition.
    """

    et_coefficient: float
    jobs_norm: float = 207.0
    scale: float = 1.0
    switch_penalty_s: float = 0.0

    def __post_init__(self) -> None:
        if self.et_coefficient < 0 or self.jobs_norm <= 0 or self.scale <= 0 or self.switch_penalty_s < 0:
            raise ValueError(f"invalid reward spec {self}")


def step_reward(energy_j: float, lateness_s: float, spec: RewardSpec, repartitions: int = 0) -> float:
    """Reward for an interval with ``energy_j`` consumed, ``lateness_s`` newly accrued lateness (seconds) and
    ``repartitions`` started at its decision."""
    a = spec.et_coefficient
    charged_s = lateness_s + spec.switch_penalty_s * repartitions
    lateness_term = charged_s / SECONDS_PER_MINUTE / spec.jobs_norm
    return -spec.scale * (a * energy_j + lateness_term) / (a + 1.0)
