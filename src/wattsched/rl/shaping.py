"""Potential-based reward shaping (Ng, Harada and Russell, 1999) from a projection of the jobs present.

The potential of a state is minus the cost the jobs *now in the system* would still cause if no other job
arrived and the configuration stayed as it is: ``Φ(s) = -scale·(a·E + L/60/N)/(a + 1)`` with ``E`` the energy
above idle power (joules) and ``L`` the lateness still to accrue (seconds), from simulating those jobs to
completion with the same in-configuration scheduler (their remaining work, starting now; running jobs are
placed afresh, as in the lookahead planner). The shaped reward of a step from ``s`` to ``s'`` is
``r + γ·Φ(s') - Φ(s)`` (``Φ = 0`` at the end of the day), with ``γ`` the agent's discount.

Why it helps: a switch changes how fast every present job finishes, but the unshaped reward only shows it as
lateness spread over many later steps, mixed with the lateness of later arrivals. The projection moves the
expected consequence to the step that caused it. Because the shaping term is a difference of a function of the
state, it changes no policy's ranking (the optimal policy is the same), and ET is still measured on the real
run; the potential uses no future arrival.
"""

from __future__ import annotations

from wattsched.hardware.mig import MigGpu
from wattsched.mig import JobView, SimSnapshot
from wattsched.rl.reward import RewardSpec, step_reward
from wattsched.workload.job import Job, JobKind, Scaling

__all__ = ["potential", "projected_cost"]


def _remaining_job(view: JobView, index: int, now_s: float, sizes: tuple[int, ...]) -> Job:
    """What is left of ``view``'s work, as a job arriving now with its own deadline."""
    fraction = float(view.remaining_fraction)
    durations = tuple(max(fraction * d, 1e-9) for d in view.durations_s)
    kind = view.kind or JobKind.INFERENCE
    scaling = view.scaling or Scaling.MEASURED
    return Job(
        f"r{index}", now_s, float(view.deadline_s), kind, scaling, durations[:-1], durations[-1], sizes
    )


def projected_cost(
    snapshot: SimSnapshot,
    gpu: MigGpu,
    scheduler: str,
    *,
    power_curve: str | None = None,
    power_cap: bool = False,
) -> tuple[float, float]:
    """``(energy above idle in J, lateness still to accrue in s)`` of the present jobs run to completion in
    the snapshot's configuration with no further arrival (power options as :func:`wattsched.mig.simulate`)."""
    from wattsched.mig.simulator import simulate

    present = snapshot.jobs
    if not present:
        return 0.0, 0.0
    now_s = float(snapshot.now_s)
    planned = [_remaining_job(v, i, now_s, gpu.compute_sizes) for i, v in enumerate(present)]
    result = simulate(
        planned,
        snapshot.configuration,
        scheduler,
        gpu=gpu,
        horizon_s=now_s,
        power_curve=power_curve,
        power_cap=power_cap,
    )
    energy_j = result.energy_j - gpu.power.idle_w * result.end_s
    # Σ max(0, c - d) minus what is already accrued, Σ max(0, now - d): the lateness after now.
    accrued_s = sum(max(0.0, now_s - float(v.deadline_s)) for v in present)
    lateness_s = result.avg_tardiness_s * result.jobs - accrued_s
    return max(energy_j, 0.0), max(lateness_s, 0.0)


def potential(
    snapshot: SimSnapshot,
    gpu: MigGpu,
    scheduler: str,
    spec: RewardSpec,
    *,
    power_curve: str | None = None,
    power_cap: bool = False,
) -> float:
    """``Φ(s)``: the reward the projected cost would give (module docstring; negative or zero)."""
    energy_j, lateness_s = projected_cost(
        snapshot, gpu, scheduler, power_curve=power_curve, power_cap=power_cap
    )
    return step_reward(energy_j, lateness_s, RewardSpec(spec.et_coefficient, spec.jobs_norm, spec.scale))
