"""Where the DQN alone loses to the DQN + rollout (and to Day-Night): per hour of the day and per kind of
decision, on held-out days of the ``paper`` preset.

Each method runs the same held-out days as ``bench_dqn.py`` (seed 0, days 0 ..), through the same
simulator loop as :func:`~wattsched.mig.partition.runner.run_day`, with the energy and the accrued lateness
read at every decision epoch; their increments are summed per hour of the day (the idle tail after the last
epoch goes to the last epoch's hour). A day's ET ``(a·E + T̄)/(a + 1)`` (``T̄`` the mean tardiness in
minutes) is linear in the energy and the lateness, so it splits exactly into per-hour contributions
``(a·E_h + L_h/60/jobs)/(a + 1)`` that sum to the day's ET. ``a`` is pooled over No-MIG, Static,
Day-Night and the DQN on the same days (the ``pool4`` of ``bench_dqn.py``).

Decision kinds: at each epoch the choice relative to the configuration in force — ``stay``, ``more`` slices,
``fewer`` slices, or ``same`` number of slices of other sizes. For the DQN + rollout each epoch where the
rollout simulated its candidates (jobs present, more than one allowed candidate) is classified by the DQN's
choice (its first candidate) and the rollout's; ``est. saving`` is the rollout's own estimate of what the
override saves, ``cost(DQN's choice) - cost(chosen)`` in window-cost units ``a·E_dyn + L/N`` (0 when it
agrees), which divided by ``a + 1`` is in the units of a day's ET.

The time-indexed lower bound (``wattsched.mig.bound``) is one linear programme per day whose optimum is a
single number: an optimal solution's split over intervals is one of many optima and bounds no hour on its
own, so no per-hour bound is printed.

    .venv/bin/python benchmarks/dqn_where_it_loses.py --model benchmarks/out/dqn/model/dqn_model.zip
        [--days 40] [--seed 0] [--workers 2] [--scenarios 2]

Prints the tables and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition import PARTITIONERS, RolloutPartitioner
from wattsched.mig.partition.base import ConfigId, RepartitionPolicy
from wattsched.mig.partition.evaluate import DayStream, day_seed
from wattsched.mig.simulator import MigSimulation
from wattsched.workload.arrivals import PROFILES
from wattsched.workload.generators import WorkloadSpec, generate_jobs

RATE_MULTIPLIER = 2.5
METHODS = ("no-mig", "static", "day-night", "dynamic", "dynamic-rollout")
POOL = ("no-mig", "static", "day-night", "dynamic")
KINDS = ("stay", "more", "fewer", "same")


def _spec() -> WorkloadSpec:
    return WorkloadSpec(profile="alibaba-day", rate_multiplier=RATE_MULTIPLIER)


def _policy(method: str, model: str, scenarios: int) -> RepartitionPolicy:
    from wattsched.rl.partitioner import DQNPartitioner

    if method == "static":
        return PARTITIONERS.make("static", configuration=3)
    if method in ("no-mig", "day-night"):
        return PARTITIONERS.make(method)
    dqn = DQNPartitioner.from_file(model)
    if method == "dynamic":
        return dqn
    spec = _spec()
    norm = PROFILES.make("alibaba-day").expected_count(spec.horizon_s, RATE_MULTIPLIER)
    a = dqn.env.reward_spec().et_coefficient if dqn.env is not None else 0.0
    return RolloutPartitioner(dqn, a, norm, scenarios=scenarios, workload=spec, name=method)


def kind(gpu: MigGpu, current: ConfigId, choice: ConfigId) -> str:
    """The decision's kind relative to the configuration in force (module docstring)."""
    if choice == current:
        return "stay"
    before, after = len(gpu.configuration(current).slices), len(gpu.configuration(choice).slices)
    return "more" if after > before else "fewer" if after < before else "same"


def run_traced(method: str, model: str, scenarios: int, seed: int, day: int) -> dict[str, Any]:
    """One method on one held-out day with its per-hour energy, lateness, repartitions and decisions, and
    (for the rollout) each simulated decision's kinds and estimated saving."""
    gpu = load_gpu(None)
    spec = _spec()
    policy = _policy(method, model, scenarios)
    jobs = generate_jobs(spec, day_seed(seed, DayStream.HELD_OUT, day))
    policy.reset(gpu, day)
    sim = MigSimulation(
        list(jobs), policy.initial_configuration(), policy.scheduler, gpu=gpu, horizon_s=spec.horizon_s
    )
    energy = np.zeros(24)
    lateness = np.zeros(24)
    repartitions = np.zeros(24)
    kinds: Counter[str] = Counter()
    overrides: list[tuple[int, str, str, str, float]] = []
    last = (0, 0.0, 0.0)
    while sim.advance():
        snapshot = sim.snapshot()
        hour = int(snapshot.now_s // 3600) % 24
        energy[last[0]] += snapshot.energy_j - last[1]
        lateness[last[0]] += snapshot.accrued_tardiness_s - last[2]
        last = (hour, snapshot.energy_j, snapshot.accrued_tardiness_s)
        if isinstance(policy, RolloutPartitioner):
            plan = policy.plan(snapshot)
            choice = plan.choice
            if plan.costs:
                first = plan.candidates[0]
                saving = plan.costs[0] - plan.costs[plan.candidates.index(choice)]
                overrides.append(
                    (
                        hour,
                        kind(gpu, snapshot.configuration, first),
                        kind(gpu, snapshot.configuration, choice),
                        str(choice),
                        saving,
                    )
                )
        else:
            choice = policy.decide(snapshot)
        kinds[kind(gpu, snapshot.configuration, choice)] += 1
        repartitions[hour] += bool(sim.repartition(choice))
    result = sim.result()
    energy[last[0]] += result.energy_j - last[1]
    metrics = result.metrics()
    lateness[last[0]] += metrics["avg_tardiness_s"] * metrics["jobs"] - last[2]
    return {
        "method": method,
        "day": day,
        "energy_j": metrics["energy_j"],
        "avg_tardiness_s": metrics["avg_tardiness_s"],
        "jobs": metrics["jobs"],
        "energy_h": energy,
        "lateness_h": lateness,
        "repartitions_h": repartitions,
        "kinds": dict(kinds),
        "overrides": overrides,
    }


def _run(args: argparse.Namespace) -> list[dict[str, Any]]:
    tasks = [(m, str(args.model), args.scenarios, args.seed, d) for m in METHODS for d in range(args.days)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        futures = [pool.submit(run_traced, *task) for task in tasks]
        return [f.result() for f in futures]


def _pooled_a(rows: list[dict[str, Any]]) -> float:
    from wattsched.metrics import et_coefficient

    pool = [r for r in rows if r["method"] in POOL]
    return float(et_coefficient([r["energy_j"] for r in pool], [r["avg_tardiness_s"] for r in pool]))


def _hourly(rows: list[dict[str, Any]], method: str, a: float) -> dict[str, np.ndarray]:
    mine = [r for r in rows if r["method"] == method]
    et = np.mean([(a * r["energy_h"] + r["lateness_h"] / 60.0 / r["jobs"]) / (a + 1.0) for r in mine], axis=0)
    return {
        "energy_wh": np.mean([r["energy_h"] for r in mine], axis=0) / 3600.0,
        "lateness_min": np.mean([r["lateness_h"] for r in mine], axis=0) / 60.0,
        "repartitions": np.mean([r["repartitions_h"] for r in mine], axis=0),
        "et": et,
    }


def _print_hours(hours: dict[str, dict[str, np.ndarray]]) -> None:
    dn, dqn, ro = hours["day-night"], hours["dynamic"], hours["dynamic-rollout"]
    print("\nper hour of the day (mean over days): energy Wh, lateness accrued (job-min), ET contribution, ")
    print("repartitions; gap = ET(DQN) - ET(rollout) and ET(DQN) - ET(Day-Night)")
    head = f"{'h':>2} | {'E D-N':>6} {'E DQN':>6} {'E RO':>6} | {'L D-N':>6} {'L DQN':>6} {'L RO':>6} |"
    head += f" {'ET D-N':>6} {'ET DQN':>6} {'ET RO':>6} | {'rep DQN':>7} {'rep RO':>6} |"
    print(head + f" {'DQN-RO':>7} {'DQN-DN':>7}")
    for h in range(24):
        print(
            f"{h:>2} | {dn['energy_wh'][h]:6.1f} {dqn['energy_wh'][h]:6.1f} {ro['energy_wh'][h]:6.1f} | "
            f"{dn['lateness_min'][h]:6.1f} {dqn['lateness_min'][h]:6.1f} {ro['lateness_min'][h]:6.1f} | "
            f"{dn['et'][h]:6.3f} {dqn['et'][h]:6.3f} {ro['et'][h]:6.3f} | "
            f"{dqn['repartitions'][h]:7.1f} {ro['repartitions'][h]:6.1f} | "
            f"{dqn['et'][h] - ro['et'][h]:7.4f} {dqn['et'][h] - dn['et'][h]:7.4f}"
        )
    print(
        f"{'all':>2} | {dn['energy_wh'].sum():6.0f} {dqn['energy_wh'].sum():6.0f} "
        f"{ro['energy_wh'].sum():6.0f} | "
        f"{dn['lateness_min'].sum():6.0f} {dqn['lateness_min'].sum():6.0f} {ro['lateness_min'].sum():6.0f} | "
        f"{dn['et'].sum():6.3f} {dqn['et'].sum():6.3f} {ro['et'].sum():6.3f} | "
        f"{dqn['repartitions'].sum():7.1f} {ro['repartitions'].sum():6.1f} | "
        f"{dqn['et'].sum() - ro['et'].sum():7.4f} {dqn['et'].sum() - dn['et'].sum():7.4f}"
    )


def _overrides(rows: list[dict[str, Any]], a: float, days: int) -> dict[str, Any]:
    """Per (DQN kind, rollout kind) and per target configuration of an override: count per day and the
    rollout's estimated saving per day in ET units."""
    planned = [o for r in rows if r["method"] == "dynamic-rollout" for o in r["overrides"]]
    pairs: dict[str, list[float]] = defaultdict(list)
    targets: dict[str, list[float]] = defaultdict(list)
    by_hour = np.zeros((24, 2))
    for hour, first, chosen, target, saving in planned:
        overridden = saving > 0.0
        pairs[f"{first}->{chosen}" if overridden else f"{first} (kept)"].append(saving)
        if overridden:
            targets[target].append(saving)
        by_hour[hour] += (1, overridden)
    scale = 1.0 / (a + 1.0) / days
    table = {
        key: {"per_day": len(v) / days, "saving_et_per_day": sum(v) * scale}
        for key, v in sorted(pairs.items(), key=lambda kv: -sum(kv[1]))
    }
    return {
        "planned_per_day": len(planned) / days,
        "overridden_per_day": sum(1 for o in planned if o[4] > 0.0) / days,
        "pairs": table,
        "targets": {
            k: {"per_day": len(v) / days, "saving_et_per_day": sum(v) * scale}
            for k, v in sorted(targets.items(), key=lambda kv: -sum(kv[1]))
        },
        "override_share_by_hour": [float(n and o / n) for n, o in by_hour],
    }


def _print_overrides(table: dict[str, Any], kinds: dict[str, dict[str, float]]) -> None:
    print(
        "\ndecision kinds per day (all epochs): "
        + "; ".join(f"{m}: " + ", ".join(f"{k} {v:.0f}" for k, v in kinds[m].items()) for m in kinds)
    )
    print(
        f"\nrollout: {table['planned_per_day']:.0f} simulated decisions a day, "
        f"{table['overridden_per_day']:.0f} overrides of the DQN's choice"
    )
    print(f"{'DQN -> rollout':<18} {'per day':>8} {'est. saving (ET/day)':>21}")
    for key, row in table["pairs"].items():
        print(f"{key:<18} {row['per_day']:>8.1f} {row['saving_et_per_day']:>21.4f}")
    print(f"\n{'override target':<18} {'per day':>8} {'est. saving (ET/day)':>21}")
    for key, row in table["targets"].items():
        print(f"{'cfg ' + key:<18} {row['per_day']:>8.1f} {row['saving_et_per_day']:>21.4f}")
    shares = table["override_share_by_hour"]
    print("override share by hour: " + " ".join(f"{h}:{s:.0%}" for h, s in enumerate(shares)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--days", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scenarios", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = _run(args)
    a = _pooled_a(rows)
    hours = {m: _hourly(rows, m, a) for m in ("day-night", "dynamic", "dynamic-rollout")}
    et = {m: float(hours[m]["et"].sum()) for m in hours}
    print(f"{args.days} held-out days (seed {args.seed}), a = {a:.3e}/J (pool: {', '.join(POOL)})")
    print(
        "ET: "
        + ", ".join(f"{m} {v:.3f}" for m, v in et.items())
        + f"; gain vs Day-Night: DQN {1 - et['dynamic'] / et['day-night']:.1%}, "
        f"rollout {1 - et['dynamic-rollout'] / et['day-night']:.1%}"
    )
    _print_hours(hours)
    kinds = {
        m: {k: sum(r["kinds"].get(k, 0) for r in rows if r["method"] == m) / args.days for k in KINDS}
        for m in ("day-night", "dynamic", "dynamic-rollout")
    }
    table = _overrides(rows, a, args.days)
    _print_overrides(table, kinds)
    gap = hours["dynamic"]["et"] - hours["dynamic-rollout"]["et"]
    result = {
        "days": args.days,
        "seed": args.seed,
        "a_per_j": a,
        "et": et,
        "gap_dqn_minus_rollout_by_hour": [round(float(g), 5) for g in gap],
        "gap_dqn_minus_day_night_by_hour": [
            round(float(g), 5) for g in hours["dynamic"]["et"] - hours["day-night"]["et"]
        ],
        "energy_gap_wh": float(
            hours["dynamic"]["energy_wh"].sum() - hours["dynamic-rollout"]["energy_wh"].sum()
        ),
        "lateness_gap_min": float(
            hours["dynamic"]["lateness_min"].sum() - hours["dynamic-rollout"]["lateness_min"].sum()
        ),
        "kinds_per_day": kinds,
        "overrides": table,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
