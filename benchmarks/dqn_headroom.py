"""How far is the trained DQN from what foresight of the day's arrivals would earn?

P1 reports Dynamic 26 % better than Day-Night; our DQN reaches less. This script measures on held-out days of
the ``paper`` preset whether more is possible in our simulator at all, with two *clairvoyant* planners that
see the day's future arrivals (so neither is a policy one could deploy; they bound what information about
arrivals is worth):

* ``rollout``: at each decision epoch, every configuration is tried on a copy of the real simulation (which
  holds the future arrivals); the DQN then decides on that copy for ``--window`` seconds, and the
  configuration with the lowest ET-style cost over the window is taken (``a·E_dyn + L/N``, the DQN's reward
  scalarisation: dynamic energy in J, lateness accrued in minutes, ``N`` the expected jobs per day).
* ``foresight-lookahead``: the lookahead planner with the day's real arrivals in its next ``--window``
  seconds instead of sampled ones (one fixed configuration per plan).

ET's ``a`` is pooled over No-MIG, Static, Day-Night and the DQN on the same days (as ``bench_dqn.py``).

    .venv/bin/python benchmarks/dqn_headroom.py --model benchmarks/out/dqn/model/dqn_model.zip
        [--days 20] [--window 1800] [--seed 0]

Prints one table and, last, one JSON line. About 20 s a day for the rollout with an 8-network DQN.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition.base import RepartitionPolicy
from wattsched.mig.partition.lookahead import LookaheadPartitioner
from wattsched.mig.simulator import MigSimulation
from wattsched.workload.generators import WorkloadSpec, generate_jobs

RATE_MULTIPLIER = 2.5
POOL = ("no-mig", "static", "day-night", "dynamic")


def _spec() -> WorkloadSpec:
    return WorkloadSpec(profile="alibaba-day", rate_multiplier=RATE_MULTIPLIER)


def _day_jobs(seed: int, day: int) -> list[Any]:
    from wattsched.mig.partition.evaluate import DayStream, day_seed

    return generate_jobs(_spec(), day_seed(seed, DayStream.HELD_OUT, day))


class ForesightLookahead(LookaheadPartitioner):
    """The lookahead planner given the real future arrivals of held-out day ``seed`` (clairvoyant)."""

    study_seed: int = 0

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        super().reset(gpu, seed)
        self._scenarios = [_day_jobs(self.study_seed, 0 if seed is None else seed)]


def _rollout_day(
    base: RepartitionPolicy, gpu: MigGpu, jobs: list[Any], window_s: float, a: float, norm: float
) -> dict[str, float]:
    """One day with the clairvoyant rollout over ``base``."""
    idle_w = gpu.power.idle_w

    def cost(sim: MigSimulation, choice: Any, start_s: float) -> float:
        copy = sim.fork()
        energy0, late0 = copy.energy_j, copy.accrued_tardiness_s
        copy.repartition(choice)
        while copy.advance() and copy.now_s < start_s + window_s:
            copy.repartition(base.decide(copy.snapshot()))
        dynamic_j = copy.energy_j - energy0 - idle_w * (copy.now_s - start_s)
        return a * dynamic_j + (copy.accrued_tardiness_s - late0) / 60.0 / norm

    sim = MigSimulation(
        list(jobs), base.initial_configuration(), base.scheduler, gpu=gpu, horizon_s=_spec().horizon_s
    )
    while sim.advance():
        snapshot = sim.snapshot()
        if not snapshot.jobs:
            choice = base.decide(snapshot)
        else:
            costs = {c: cost(sim, c, snapshot.now_s) for c in gpu.configuration_ids}
            choice = min(costs, key=lambda c: (costs[c], c != snapshot.configuration))
        sim.repartition(choice)
    result = sim.result()
    return {
        "energy_j": result.energy_j,
        "avg_tardiness_s": result.avg_tardiness_s,
        "repartitions": float(result.repartitions),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a model written by mig train / bench_dqn")
    parser.add_argument("--days", type=int, default=20, help="held-out days (default 20)")
    parser.add_argument("--window", type=float, default=1800.0, help="foresight window, s (default 1800)")
    parser.add_argument("--seed", type=int, default=0, help="held-out day seed (default 0)")
    args = parser.parse_args()

    from wattsched.hardware.catalogue import load_gpu
    from wattsched.metrics import et_coefficient, et_values
    from wattsched.mig.partition import PARTITIONERS
    from wattsched.mig.partition.evaluate import evaluate_policy, pilot_et_coefficient
    from wattsched.rl.partitioner import DQNPartitioner
    from wattsched.workload.arrivals import PROFILES

    spec = _spec()
    gpu = load_gpu(None)
    days = range(args.days)
    norm = PROFILES.make("alibaba-day").expected_count(spec.horizon_s, RATE_MULTIPLIER)
    dqn = DQNPartitioner.from_file(args.model)
    a_plan = pilot_et_coefficient(args.seed, 8, spec)
    foresight = ForesightLookahead(et_coefficient=a_plan, jobs_norm=norm, window_s=args.window)
    foresight.study_seed = args.seed
    methods: dict[str, RepartitionPolicy] = {
        "no-mig": PARTITIONERS.make("no-mig"),
        "static": PARTITIONERS.make("static", configuration=3),
        "day-night": PARTITIONERS.make("day-night"),
        "dynamic": dqn,
        "lookahead": PARTITIONERS.make("lookahead", et_coefficient=a_plan, jobs_norm=norm),
        "foresight-lookahead": foresight,
    }
    rows: dict[str, list[dict[str, float]]] = {}
    seconds: dict[str, float] = {}
    for name, policy in methods.items():
        started = time.perf_counter()
        rows[name] = evaluate_policy(name, policy, days, args.seed, spec)
        seconds[name] = time.perf_counter() - started
    started = time.perf_counter()
    rollout = []
    for day in days:
        dqn.reset(gpu, day)
        rollout.append(_rollout_day(dqn, gpu, _day_jobs(args.seed, day), args.window, a_plan, norm))
    rows["rollout"] = rollout
    seconds["rollout"] = time.perf_counter() - started

    pooled = [r for m in POOL for r in rows[m]]
    a = et_coefficient([r["energy_j"] for r in pooled], [r["avg_tardiness_s"] for r in pooled])
    et = {
        m: float(np.mean(et_values([r["energy_j"] for r in rs], [r["avg_tardiness_s"] for r in rs], a)))
        for m, rs in rows.items()
    }
    print(f"{args.days} held-out days, paper preset, a pooled over {', '.join(POOL)} = {a:.3e}/J")
    print(f"{'method':<22} {'ET':>7} {'vs Day-Night':>13} {'vs Static':>10} {'repart./day':>12} {'s':>7}")
    for method, value in et.items():
        repartitions = np.mean([r["repartitions"] for r in rows[method]])
        vs_day_night, vs_static = 1 - value / et["day-night"], 1 - value / et["static"]
        print(
            f"{method:<22} {value:>7.3f} {vs_day_night:>13.1%} {vs_static:>10.1%}"
            f" {repartitions:>12.0f} {seconds[method]:>7.1f}"
        )
    result = {
        "days": args.days,
        "window_s": args.window,
        "a_per_j": a,
        "et": et,
        "gain_vs_day_night": {m: 1 - v / et["day-night"] for m, v in et.items()},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
