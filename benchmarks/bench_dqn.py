"""The DQN at the ``paper`` preset: training time, and ET against P1's baselines and the
lookahead planner on the same held-out days, with an ablation of each change.

Paper preset (docs/concepts/presets.md): P1's Fig. 5 day profile at rate multiplier 2.5 (~516 jobs/day),
Static = configuration 3 (the GPU's static role), Day-Night 6/2, P1's deadline rule. The DQN is
:func:`wattsched.rl.dqn.paper_config` with ET's ``a`` from pilot runs at that load.

Targets (P1 Table III): Dynamic better than Static by >= 29 %, than Day-Night by >= 23 %, than No-MIG by
>= 67 % (1 - ratio of mean ET over the days), with training <= 10 min on this 2-core machine.

ET pools ``a`` over P1's four methods (no-mig, static, day-night, dynamic: the Table III study's pool); the
gains are also shown with ``a`` pooled over the three benchmarks only. Intervals: 95 % paired bootstrap over
days of the ratio of means (``a`` held fixed). Training wall time excludes the pilot runs and evaluation; the
1-minute load average is printed beside it (the machine is shared).

The DQN is an ensemble (``paper_config``: 8 networks, seeds ``seed`` .. ``seed + 7``, of which the 3 with
the lowest validation cost act on their mean Q-values), trained ``--workers`` networks at a time (default 2,
one per core; the networks do not depend on it). Each network is also scored alone (rows ``member<k>``,
best first by validation cost, in no ET pool), which shows the spread between training seeds that the
choice narrows. ``--extra-seeds`` trains whole ensembles again: space the seeds by
the ensemble size (8, 16, ...) so that they share no network.

``--rollout K`` (default 2; 0: off) also scores ``dynamic-rollout``: the trained DQN improved at each decision
by rollouts (:class:`wattsched.mig.partition.rollout.RolloutPartitioner`): its 3 best-ranked configurations
are each tried on copies of the simulation holding only the jobs that have arrived plus the arrivals of K
sampled days of the same profile over the next 30 min, the DQN deciding the rest of the window; the cheapest
is taken. It never sees the day's real future arrivals; training is unchanged, the cost is at decision time
(~7 s of one core a day; its days are shared by ``--workers`` processes). Its gains are shown with ``a``
pooled over P1's four methods with it as Dynamic (``pool4r``), and with the DQN's and the benchmarks' pools.

Ablation: each change of the paper config switched off in turn (one at a time, at ``--ablation-steps`` and on
``--ablation-days`` held-out days, the first of the same days), one training per row.

    .venv/bin/python benchmarks/bench_dqn.py [--days 100] [--steps N] [--ablation-steps N]
        [--ablation-days 30] [--no-ablation] [--extra-seeds S ...] [--reuse] [--seed 0] [--workers 2]
        [--rollout 2] [--out benchmarks/out/dqn]

``--reuse`` skips the main run and runs ``--extra-seeds`` and the ablation (unless ``--no-ablation``) against
the finished run in ``--out`` (its ``days.csv``, ``summary.json`` and saved model config), so the parts can
be measured one after the other.

Writes ``<out>/days.csv`` (one row per method and day), ``<out>/ablation.csv``, ``<out>/summary.json`` and the
model (``<out>/model/dqn_model.zip``); prints tables and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from wattsched.mig.partition.base import RepartitionPolicy
from wattsched.rl.dqn import DQNConfig

HERE = Path(__file__).resolve().parent
RATE_MULTIPLIER = 2.5
#: P1 Table III: (method, required gain of Dynamic over it).
TARGETS = (("static", 0.29), ("day-night", 0.23), ("no-mig", 0.67))
TRAIN_BUDGET_S = 600.0
ET_POOL = ("no-mig", "static", "day-night", "dynamic")
BENCH_POOL = ("no-mig", "static", "day-night")
ROLLOUT = "dynamic-rollout"
#: P1's pool with the rollout as the Dynamic method.
ROLLOUT_POOL = ("no-mig", "static", "day-night", ROLLOUT)
BOOTSTRAP = 4000


def _load() -> float:
    return os.getloadavg()[0]


def _train(config: DQNConfig, out: Path, workers: int = 1) -> dict[str, Any]:
    from wattsched.rl.dqn import train

    load_before = _load()
    result = train(config, out, workers=workers)
    return {
        "model": str(result.model_path),
        "networks": result.members,
        "trained_networks": config.ensemble,
        "steps": result.timesteps,
        "wall_s": result.wall_s,
        "steps_per_s": result.timesteps / result.wall_s,
        "load_1min_before": load_before,
        "load_1min_after": _load(),
    }


def _rows(
    method: str, policy: RepartitionPolicy, days: Sequence[int], seed: int, workers: int = 1
) -> list[dict[str, Any]]:
    from wattsched.mig.partition.evaluate import evaluate_policy
    from wattsched.workload.generators import WorkloadSpec

    spec = WorkloadSpec(profile="alibaba-day", rate_multiplier=RATE_MULTIPLIER)
    keep = ("method", "day", "energy_j", "avg_tardiness_s", "repartitions", "late_jobs", "jobs")
    rows = evaluate_policy(method, policy, days, seed, spec, workers=workers)
    return [{k: r[k] for k in keep} for r in rows]


def _rollout(model_path: str, a: float, scenarios: int) -> RepartitionPolicy:
    """The DQN improved by rollouts over ``scenarios`` sampled days of the paper preset at each decision."""
    from wattsched.mig.partition import RolloutPartitioner
    from wattsched.rl.partitioner import DQNPartitioner
    from wattsched.workload.arrivals import PROFILES
    from wattsched.workload.generators import WorkloadSpec

    spec = WorkloadSpec(profile="alibaba-day", rate_multiplier=RATE_MULTIPLIER)
    norm = PROFILES.make("alibaba-day").expected_count(spec.horizon_s, RATE_MULTIPLIER)
    base = DQNPartitioner.from_file(model_path)
    return RolloutPartitioner(base, a, norm, scenarios=scenarios, workload=spec, name=ROLLOUT)


def _et_table(
    rows: Sequence[dict[str, Any]], pool: Sequence[str], a: float | None = None
) -> tuple[dict[str, np.ndarray], float]:
    """ET per day for each method (arrays in day order) and the pooled ``a``."""
    from wattsched.metrics import et_coefficient, et_values

    if a is None:
        chosen = [r for r in rows if r["method"] in pool]
        a = float(et_coefficient([r["energy_j"] for r in chosen], [r["avg_tardiness_s"] for r in chosen]))
    table: dict[str, np.ndarray] = {}
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["day"])
        table[method] = np.asarray(
            et_values([r["energy_j"] for r in mine], [r["avg_tardiness_s"] for r in mine], a), dtype=float
        )
    return table, a


def gain(ours: np.ndarray, other: np.ndarray, seed: int = 0) -> dict[str, float]:
    """``1 - mean(ours)/mean(other)`` over paired days, with a 95 % paired bootstrap interval."""
    rng = np.random.default_rng(seed)
    n = len(ours)
    picks = rng.integers(0, n, size=(BOOTSTRAP, n))
    samples = 1.0 - ours[picks].mean(axis=1) / other[picks].mean(axis=1)
    low, high = np.quantile(samples, [0.025, 0.975])
    return {
        "gain": float(1.0 - ours.mean() / other.mean()),
        "ci95_low": float(low),
        "ci95_high": float(high),
        "days_better": int((ours < other).sum()),
        "days": n,
    }


def _methods(seed: int, a: float, selection_days: int) -> dict[str, RepartitionPolicy]:
    from wattsched.mig.partition import PARTITIONERS
    from wattsched.mig.partition.evaluate import select_static
    from wattsched.workload.arrivals import PROFILES
    from wattsched.workload.generators import WorkloadSpec

    spec = WorkloadSpec(profile="alibaba-day", rate_multiplier=RATE_MULTIPLIER)
    best = select_static(seed, selection_days, spec)[0]
    norm = PROFILES.make("alibaba-day").expected_count(spec.horizon_s, RATE_MULTIPLIER)
    return {
        "no-mig": PARTITIONERS.make("no-mig"),
        "static": PARTITIONERS.make("static", configuration=3),
        f"static-best (cfg {best})": PARTITIONERS.make("static", configuration=best),
        "day-night": PARTITIONERS.make("day-night"),
        "lookahead": PARTITIONERS.make("lookahead", et_coefficient=a, jobs_norm=norm),
    }


def _env(**changes: Any) -> Callable[[DQNConfig], DQNConfig]:
    return lambda c: replace(c, env=replace(c.env, **changes))


def _p1(config: DQNConfig) -> DQNConfig:
    from wattsched.rl.dqn import p1_config

    return p1_config(
        seed=config.seed,
        total_timesteps=config.total_timesteps,
        env=replace(
            p1_config().env,
            rate_multiplier=config.env.rate_multiplier,
            et_coefficient=config.env.et_coefficient,
        ),
    )


#: Ablation rows: (name, what changes from the paper config, the change). The first row is the paper config.
ABLATIONS: tuple[tuple[str, str, Callable[[DQNConfig], DQNConfig]], ...] = (
    ("paper_config", "nothing (all changes on)", lambda c: c),
    (
        "- count block",
        "P1's state: no job-count block (so no mask either: it reads the count)",
        _env(count_bins=0, mask_idle_slices=False),
    ),
    ("- mask", "every configuration allowed in every state", _env(mask_idle_slices=False)),
    ("- shaping", "P1's reward, no potential-based shaping", _env(shaping_gamma=None)),
    ("- n-step", "one-step TD targets", lambda c: replace(c, n_steps=1)),
    (
        "- learning rate",
        "learning rate 1e-3 (the previous quick setting)",
        lambda c: replace(c, learning_rate=1e-3),
    ),
    ("P1 (all off)", "p1_config: P1's state and reward, all actions, 1-step, lr 1e-3", _p1),
    (
        "- ensemble",
        "one network (seed as the first trained)",
        lambda c: replace(c, ensemble=1, ensemble_keep=0),
    ),
    ("- choice", "all 8 networks act together (none left out)", lambda c: replace(c, ensemble_keep=0)),
    ("- 4 envs", "one environment (4x the gradient steps per env step)", lambda c: replace(c, n_envs=1)),
    ("+ double DQN", "added: double-DQN targets", lambda c: replace(c, double_q=True)),
    ("+ switch penalty 30 s", "added: 30 s of lateness charged per repartition", _env(switch_penalty_s=30.0)),
)


def _write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _evaluate_all(args: argparse.Namespace, a_pilot: float, model_path: str) -> list[dict[str, Any]]:
    from wattsched.rl.partitioner import DQNPartitioner

    days = range(args.days)
    rows: list[dict[str, Any]] = []
    policies = {
        **_methods(args.seed, a_pilot, args.selection_days),
        "dynamic": DQNPartitioner.from_file(model_path),
    }
    policies.update(_members(model_path))
    if args.rollout:
        policies[ROLLOUT] = _rollout(model_path, a_pilot, args.rollout)
    for method, policy in policies.items():
        started = time.perf_counter()
        workers = args.workers if method == ROLLOUT else 1
        rows += _rows(method, policy, days, args.seed, workers)
        wall_s = time.perf_counter() - started
        if method == ROLLOUT:
            args.rollout_wall_s = wall_s
        print(f"  evaluated {method:<22} on {args.days} days in {wall_s:6.1f} s", flush=True)
    return rows


def _members(model_path: str) -> dict[str, RepartitionPolicy]:
    """Each trained network of an ensemble alone ("member<k>", numbered best first by validation cost when
    the ensemble keeps the best; in no ET pool): the spread between training seeds."""
    from wattsched.rl.dqn import load_config, load_model, member_path
    from wattsched.rl.partitioner import DQNPartitioner

    config = load_config(model_path)
    if config.ensemble == 1:
        return {}
    # every trained network, the kept ones first (files best first by validation cost)
    env = config.env
    return {
        f"member{k}": DQNPartitioner.from_model(
            load_model(member_path(model_path, k)), env.initial_configuration, env
        )
        for k in range(config.ensemble)
    }


def _summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """ET per method for both pools, the gains of Dynamic and of the lookahead with intervals."""
    out: dict[str, Any] = {}
    rollout = any(r["method"] == ROLLOUT for r in rows)
    pools = (("pool4", ET_POOL), ("pool3", BENCH_POOL), *((("pool4r", ROLLOUT_POOL),) if rollout else ()))
    for label, pool in pools:
        table, a = _et_table(rows, pool)
        out[label] = {
            "pool": list(pool),
            "a_per_j": a,
            "et": {m: float(v.mean()) for m, v in table.items()},
            "dynamic_gain": {m: gain(table["dynamic"], table[m]) for m, _ in TARGETS},
            "lookahead_gain": {m: gain(table["lookahead"], table[m]) for m, _ in TARGETS},
            "rollout_gain": {m: gain(table[ROLLOUT], table[m]) for m, _ in TARGETS} if rollout else {},
            "member_gain": {
                member: {m: gain(table[member], table[m])["gain"] for m, _ in TARGETS}
                for member in table
                if member.startswith("member")
            },
            "dynamic_vs_lookahead": gain(table["dynamic"], table["lookahead"]),
        }
    return out


def _means(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    means: dict[str, dict[str, float]] = {}
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        means[method] = {
            key: float(np.mean([r[key] for r in mine]))
            for key in ("energy_j", "avg_tardiness_s", "repartitions")
        }
    return means


def _print_main(
    summary: dict[str, Any], means: dict[str, dict[str, float]], training: dict[str, Any]
) -> None:
    pool4, pool3 = summary["pool4"], summary["pool3"]
    print(
        f"\nET on {pool4['dynamic_gain']['static']['days']} held-out days (a pooled over "
        f"{', '.join(pool4['pool'])} = {pool4['a_per_j']:.3e}/J; "
        f"3-benchmark pool a = {pool3['a_per_j']:.3e}/J)"
    )
    print(f"{'method':<24} {'ET':>7} {'ET pool3':>9} {'kWh/day':>8} {'tardiness min':>14} {'repart/day':>11}")
    for method, et in pool4["et"].items():
        m = means[method]
        print(
            f"{method:<24} {et:>7.3f} {pool3['et'][method]:>9.3f} {m['energy_j'] / 3.6e6:>8.3f} "
            f"{m['avg_tardiness_s'] / 60:>14.3f} {m['repartitions']:>11.1f}"
        )
    print("\ngain = 1 - ET(ours)/ET(other), ratio of means, 95 % paired bootstrap interval")
    print(f"{'':<22} {'target':>7} {'dynamic (pool4)':>26} {'dynamic (pool3)':>26} {'lookahead (pool4)':>26}")
    for method, target in TARGETS:
        cells = []
        for block, key in ((pool4, "dynamic_gain"), (pool3, "dynamic_gain"), (pool4, "lookahead_gain")):
            g = block[key][method]
            cells.append(f"{g['gain']:6.1%} [{g['ci95_low']:6.1%}, {g['ci95_high']:6.1%}]")
        print(f"{'vs ' + method:<22} {target:>7.0%} {cells[0]:>26} {cells[1]:>26} {cells[2]:>26}")
    members = pool4["member_gain"]
    if members:
        spread = {m: [g[m] for g in members.values()] for m, _ in TARGETS}
        print(
            f"each of the {len(members)} networks alone (mean [min, max]): "
            + ", ".join(f"vs {m} {np.mean(v):.1%} [{min(v):.1%}, {max(v):.1%}]" for m, v in spread.items())
        )
    g = pool4["dynamic_vs_lookahead"]
    print(
        f"{'dynamic vs lookahead':<22} {'':>7} {g['gain']:6.1%} [{g['ci95_low']:6.1%}, {g['ci95_high']:6.1%}]"
        f" ({g['days_better']} of {g['days']} days better)"
    )
    if "pool4r" in summary:
        print(
            f"\n{ROLLOUT} (the DQN improved by rollouts at each decision; pool4r: P1's pool with it as "
            f"Dynamic, a = {summary['pool4r']['a_per_j']:.3e}/J)"
        )
        columns = ("rollout (pool4r)", "rollout (pool4)", "rollout (pool3)")
        print(f"{'':<22} {'target':>7} " + " ".join(f"{c:>26}" for c in columns))
        for method, target in TARGETS:
            cells = []
            for block in (summary["pool4r"], pool4, pool3):
                g = block["rollout_gain"][method]
                cells.append(f"{g['gain']:6.1%} [{g['ci95_low']:6.1%}, {g['ci95_high']:6.1%}]")
            print(f"{'vs ' + method:<22} {target:>7.0%} {cells[0]:>26} {cells[1]:>26} {cells[2]:>26}")
    print(
        f"\ntraining: {training['trained_networks']} network(s) trained ({training['networks']} act), "
        f"{training['steps']} steps in all in "
        f"{training['wall_s']:.1f} s "
        f"({training['steps_per_s']:.0f} steps/s), 1-min load average {training['load_1min_before']:.1f} "
        f"before / {training['load_1min_after']:.1f} after, on {os.cpu_count()} cores"
    )


def _ablation(
    args: argparse.Namespace,
    base: DQNConfig,
    reference: Sequence[dict[str, Any]],
    a: float,
    main_wall_s: float,
) -> list[dict[str, Any]]:
    """Train each ablation at the ablation budget; score on the first ``ablation_days`` days with ``a``. The
    paper-config row reuses the main model when the budgets are equal."""
    from wattsched.rl.partitioner import DQNPartitioner

    days = list(range(args.ablation_days))
    base_rows = [r for r in reference if r["day"] in days]
    table, _ = _et_table(base_rows, ET_POOL, a)
    out = []
    for name, what, change in ABLATIONS:
        config = change(replace(base, total_timesteps=args.ablation_steps))
        if config == base:
            rows = [r for r in base_rows if r["method"] == "dynamic"]
            trained: dict[str, Any] = {"steps": base.timesteps, "wall_s": main_wall_s}
        else:
            with tempfile.TemporaryDirectory(prefix="bench-dqn-") as tmp:
                trained = _train(config, Path(tmp), args.workers)
                rows = _rows("dynamic", DQNPartitioner.from_file(trained["model"]), days, args.seed)
        et, _ = _et_table(rows, ET_POOL, a)
        row = {
            "variant": name,
            "change": what,
            "steps": trained["steps"],
            "wall_s": round(trained["wall_s"], 1),
            "et": float(et["dynamic"].mean()),
            "gain_vs_static": gain(et["dynamic"], table["static"])["gain"],
            "gain_vs_day_night": gain(et["dynamic"], table["day-night"])["gain"],
            "gain_vs_no_mig": gain(et["dynamic"], table["no-mig"])["gain"],
            "repartitions_per_day": float(np.mean([r["repartitions"] for r in rows])),
        }
        out.append(row)
        print(
            f"{name:<22} {row['et']:>7.3f} {row['gain_vs_static']:>8.1%} "
            f"{row['gain_vs_day_night']:>8.1%} {row['gain_vs_no_mig']:>8.1%} "
            f"{row['repartitions_per_day']:>9.1f} {row['wall_s']:>8.1f}  {what}",
            flush=True,
        )
    return out


def _other_seeds(
    args: argparse.Namespace, base: DQNConfig, reference: Sequence[dict[str, Any]], a: float
) -> list[dict[str, Any]]:
    """The paper config trained with each of ``--extra-seeds``, scored on all held-out days with ``a``."""
    from wattsched.rl.partitioner import DQNPartitioner

    if not args.extra_seeds:
        return []
    table, _ = _et_table(reference, ET_POOL, a)
    print(f"\nother training seeds (same {args.days} held-out days, a = {a:.3e}/J)")
    out = []
    for seed in args.extra_seeds:
        with tempfile.TemporaryDirectory(prefix="bench-dqn-") as tmp:
            trained = _train(replace(base, seed=seed), Path(tmp), args.workers)
            rows = _rows("dynamic", DQNPartitioner.from_file(trained["model"]), range(args.days), args.seed)
        et, _ = _et_table(rows, ET_POOL, a)
        row = {
            "train_seed": seed,
            "wall_s": round(trained["wall_s"], 1),
            "et": float(et["dynamic"].mean()),
            **{f"gain_vs_{m}": gain(et["dynamic"], table[m])["gain"] for m, _ in TARGETS},
            "repartitions_per_day": float(np.mean([r["repartitions"] for r in rows])),
        }
        out.append(row)
        print(
            f"  seed {seed}: ET {row['et']:.3f}, gain vs static {row['gain_vs_static']:.1%}, "
            f"vs day-night {row['gain_vs_day-night']:.1%}, vs no-mig {row['gain_vs_no-mig']:.1%}, "
            f"{row['repartitions_per_day']:.0f} repartitions/day, trained in {row['wall_s']:.0f} s",
            flush=True,
        )
    return out


def _read_days(path: Path) -> list[dict[str, Any]]:
    """``days.csv`` back as rows (method and day typed, the rest floats)."""
    with path.open(newline="", encoding="utf-8") as handle:
        return [
            {k: (v if k == "method" else int(v) if k == "day" else float(v)) for k, v in row.items()}
            for row in csv.DictReader(handle)
        ]


def _reuse(args: argparse.Namespace) -> int:
    """Other seeds and/or the ablation against the finished run in ``args.out``; adds them to
    ``summary.json`` (the main run's rows, ``a`` and model config are read back, nothing is retrained)."""
    from wattsched.rl.dqn import load_config

    summary = json.loads((args.out / "summary.json").read_text(encoding="utf-8"))
    rows = _read_days(args.out / "days.csv")
    config = load_config(args.out / "model" / "dqn_model.zip")
    args.ablation_steps = args.ablation_steps or config.timesteps
    a = summary["summary"]["pool4"]["a_per_j"]
    if args.extra_seeds:
        summary["other_seeds"] = _other_seeds(args, config, rows, a)
    if not args.no_ablation:
        summary["ablation"] = _run_ablation(args, config, rows, a, summary["train_wall_s"])
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "summary"}))
    return 0


def _run_ablation(
    args: argparse.Namespace, config: DQNConfig, rows: Sequence[dict[str, Any]], a: float, wall_s: float
) -> list[dict[str, Any]]:
    print(
        f"\nablation: {args.ablation_steps} steps each, first {args.ablation_days} held-out days, "
        f"a = {a:.3e}/J (pool4 of the main run)"
    )
    print(
        f"{'variant':<22} {'ET':>7} {'vs stat':>8} {'vs D-N':>8} {'vs noMIG':>8} {'rep/day':>9} "
        f"{'train s':>8}"
    )
    ablation = _ablation(args, config, rows, a, wall_s)
    _write_csv(args.out / "ablation.csv", ablation)
    return ablation


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=100, help="held-out days (default 100)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: paper_config's)")
    parser.add_argument(
        "--ablation-steps", type=int, default=None, help="steps per ablation (default: --steps)"
    )
    parser.add_argument("--ablation-days", type=int, default=30)
    parser.add_argument("--no-ablation", action="store_true")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="no main run: --extra-seeds and the ablation against the finished run in --out",
    )
    parser.add_argument("--selection-days", type=int, default=20, help="days to pick the best static")
    parser.add_argument("--seed", type=int, default=0, help="held-out days and main training seed")
    parser.add_argument(
        "--extra-seeds",
        type=int,
        nargs="*",
        default=[],
        help="train the paper config again with these seeds, scored on the same days",
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="networks of the ensemble trained at once (default: 2)"
    )
    parser.add_argument(
        "--rollout",
        type=int,
        default=2,
        metavar="K",
        help=f"also score the DQN improved by rollouts over K sampled days ('{ROLLOUT}', ~7 s a day at "
        "K = 2, its days shared by --workers processes); 0: off (default 2)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "out" / "dqn")
    args = parser.parse_args()
    args.rollout_wall_s = None

    from wattsched.mig.partition.evaluate import pilot_et_coefficient
    from wattsched.rl.dqn import paper_config
    from wattsched.workload.generators import WorkloadSpec

    if args.reuse:
        return _reuse(args)
    args.out.mkdir(parents=True, exist_ok=True)
    spec = WorkloadSpec(profile="alibaba-day", rate_multiplier=RATE_MULTIPLIER)
    a_pilot = pilot_et_coefficient(args.seed, 8, spec)
    config = paper_config(seed=args.seed)
    config = replace(config, env=replace(config.env, et_coefficient=a_pilot))
    if args.steps is not None:
        config = replace(config, total_timesteps=args.steps)
    args.ablation_steps = args.ablation_steps or config.timesteps
    print(
        f"paper preset: x{RATE_MULTIPLIER} load, pilot a = {a_pilot:.3e}/J; "
        f"training {config.timesteps} steps",
        flush=True,
    )
    training = _train(config, args.out / "model", args.workers)
    print(f"trained {training['steps']} steps in {training['wall_s']:.1f} s", flush=True)
    rows = _evaluate_all(args, a_pilot, training["model"])
    _write_csv(args.out / "days.csv", rows)
    summary = _summarise(rows)
    means = _means(rows)
    _print_main(summary, means, training)
    seeds = _other_seeds(args, config, rows, summary["pool4"]["a_per_j"])
    ablation: list[dict[str, Any]] = []
    if not args.no_ablation:
        ablation = _run_ablation(args, config, rows, summary["pool4"]["a_per_j"], training["wall_s"])
    gains = summary["pool4"]["dynamic_gain"]
    met = {m: gains[m]["gain"] >= t for m, t in TARGETS}
    rollout: dict[str, Any] = {}
    if "pool4r" in summary:
        rollout_gains = summary["pool4r"]["rollout_gain"]
        rollout_met = {m: rollout_gains[m]["gain"] >= t for m, t in TARGETS}
        rollout = {
            "scenarios": args.rollout,
            "gains": {m: {k: round(v, 4) for k, v in g.items()} for m, g in rollout_gains.items()},
            "gains_pool4": {m: round(g["gain"], 4) for m, g in summary["pool4"]["rollout_gain"].items()},
            "gains_pool3": {m: round(g["gain"], 4) for m, g in summary["pool3"]["rollout_gain"].items()},
            "targets_met": rollout_met,
            "all_met": all(rollout_met.values()) and training["wall_s"] <= TRAIN_BUDGET_S,
            "eval_wall_s": round(args.rollout_wall_s, 1),
            "eval_workers": args.workers,
            "cpu_s_per_day": round(args.rollout_wall_s * min(args.workers, args.days) / args.days, 2),
        }
    result = {
        "preset": "paper",
        "rate_multiplier": RATE_MULTIPLIER,
        "days": args.days,
        "seed": args.seed,
        "train_networks": training["trained_networks"],
        "acting_networks": training["networks"],
        "train_steps": training["steps"],
        "train_wall_s": round(training["wall_s"], 1),
        "train_within_budget": training["wall_s"] <= TRAIN_BUDGET_S,
        "load_1min": [round(training["load_1min_before"], 2), round(training["load_1min_after"], 2)],
        "et": summary["pool4"]["et"],
        "gains": {m: {k: round(v, 4) for k, v in g.items()} for m, g in gains.items()},
        "gains_pool3": {m: round(g["gain"], 4) for m, g in summary["pool3"]["dynamic_gain"].items()},
        "lookahead_gains": {m: round(g["gain"], 4) for m, g in summary["pool4"]["lookahead_gain"].items()},
        "repartitions_per_day": {m: round(v["repartitions"], 1) for m, v in means.items()},
        "targets_met": met,
        "other_seeds": seeds,
        "all_met": all(met.values()) and training["wall_s"] <= TRAIN_BUDGET_S,
        "rollout": rollout,
        "ablation": ablation,
    }
    (args.out / "summary.json").write_text(
        json.dumps({**result, "summary": summary}, indent=2), encoding="utf-8"
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
