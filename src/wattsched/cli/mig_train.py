"""`wattsched mig train` and `wattsched mig evaluate` (the DQN repartitioning agent, papers.md §A.6)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from wattsched.cli._parsing import int_at_least, positive_finite_float
from wattsched.errors import ConfigError

__all__ = ["add_parser"]

_METHODS = ("no-mig", "static", "day-night", "lookahead", "dynamic")
_ET_POOL = ("no-mig", "static", "day-night", "dynamic")


def add_parser(mig_commands: argparse._SubParsersAction) -> None:
    """Register ``train`` and ``evaluate`` under ``wattsched mig``."""
    train = mig_commands.add_parser("train", help="train the DQN repartitioning agent (stable-baselines3)")
    length = train.add_mutually_exclusive_group()
    length.add_argument("--days", type=int_at_least(1), help="training episodes (simulated days)")
    length.add_argument("--timesteps", type=int_at_least(1), help="training decision steps")
    train.add_argument(
        "--scale",
        choices=("quick", "paper"),
        default="quick",
        help="hyperparameter preset: quick (64-64 net, 120k steps) or paper (§A.6.4, 2000 days)",
    )
    train.add_argument("--seed", type=int_at_least(0), default=0)
    train.add_argument("--out", type=Path, default=Path("models"), help="output folder (default: models)")
    train.add_argument(
        "--et-coefficient",
        type=positive_finite_float,
        default=None,
        help="ET's a per joule for the reward (default: from pilot runs of the benchmarks)",
    )
    train.add_argument(
        "--checkpoint-every", type=int_at_least(1), default=None, help="checkpoint every N steps"
    )
    train.add_argument("--repartition-mode", choices=("blackout", "deadline_shift"), default="blackout")
    train.add_argument("--json", action="store_true", help="print one JSON object")
    train.set_defaults(func=_run_train)

    evaluate = mig_commands.add_parser(
        "evaluate", help="compare every repartitioning policy on held-out days"
    )
    evaluate.add_argument(
        "--model", type=Path, required=True, help="a model written by 'wattsched mig train'"
    )
    evaluate.add_argument("--days", type=int_at_least(1), default=20, help="held-out days (default: 20)")
    evaluate.add_argument("--seed", type=int_at_least(0), default=0)
    evaluate.add_argument(
        "--static-config", default=None, help="configuration of 'static' (default: the GPU's static role, "
        "P1's 3 on the A100-40GB)"
    )
    evaluate.add_argument(
        "--methods", default=",".join(_METHODS), help=f"comma-separated subset of {', '.join(_METHODS)}"
    )
    evaluate.add_argument("--repartition-mode", choices=("blackout", "deadline_shift"), default="blackout")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.set_defaults(func=_run_evaluate)


def _run_train(args: argparse.Namespace) -> int:
    from wattsched.mig.partition.evaluate import pilot_et_coefficient
    from wattsched.rl.dqn import DQNConfig, quick_config, train

    config = quick_config(seed=args.seed) if args.scale == "quick" else DQNConfig(seed=args.seed)
    if args.days:
        config = replace(config, episodes=args.days, total_timesteps=None)
    if args.timesteps:
        config = replace(config, total_timesteps=args.timesteps)
    if args.checkpoint_every:
        config = replace(config, checkpoint_every_steps=args.checkpoint_every)
    a = args.et_coefficient if args.et_coefficient is not None else pilot_et_coefficient(args.seed)
    if a < 0:
        raise ConfigError(f"--et-coefficient must be >= 0, got {a}")
    config = replace(
        config, env=replace(config.env, et_coefficient=a, repartition_mode=args.repartition_mode)
    )
    result = train(config, args.out)
    summary = {
        "model": str(result.model_path),
        "timesteps": result.timesteps,
        "wall_s": round(result.wall_s, 2),
        "et_coefficient": a,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"trained {result.timesteps} steps in {result.wall_s:.1f} s -> {result.model_path}")
    return 0


def _run_evaluate(args: argparse.Namespace) -> int:
    from wattsched.mig.partition import PARTITIONERS
    from wattsched.mig.partition.evaluate import et_by_method, evaluate_policy, pilot_et_coefficient
    from wattsched.rl.partitioner import DQNPartitioner

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(_METHODS))
    if unknown or not methods:
        raise ConfigError(f"unknown method(s) {', '.join(unknown) or '(none)'}; valid: {', '.join(_METHODS)}")
    policies: dict[str, Any] = {}
    for method in methods:
        if method == "dynamic":
            policies[method] = DQNPartitioner.from_file(args.model)
        elif method == "static":
            policies[method] = PARTITIONERS.make("static", configuration=args.static_config)
        elif method == "lookahead":
            policies[method] = PARTITIONERS.make("lookahead", et_coefficient=pilot_et_coefficient(args.seed))
        else:
            policies[method] = PARTITIONERS.make(method)
    rows: list[dict[str, Any]] = []
    for method, policy in policies.items():
        rows += evaluate_policy(
            method, policy, range(args.days), args.seed, repartition_mode=args.repartition_mode
        )
    pool = [m for m in _ET_POOL if m in policies] or methods
    ets, a = et_by_method(rows, pool)
    table = {
        m: {
            "et": ets[m],
            "energy_j": sum(r["energy_j"] for r in rows if r["method"] == m) / args.days,
            "avg_tardiness_s": sum(r["avg_tardiness_s"] for r in rows if r["method"] == m) / args.days,
            "repartitions": sum(r["repartitions"] for r in rows if r["method"] == m) / args.days,
        }
        for m in policies
    }
    if args.json:
        print(json.dumps({"days": args.days, "seed": args.seed, "et_coefficient": a, "methods": table}))
        return 0
    out = sys.stdout
    out.write(
        f"{args.days} held-out days, seed {args.seed}, ET a = {a:.3e} per J (pool: {', '.join(pool)})\n"
    )
    out.write(f"{'method':<10} {'ET':>8} {'energy kWh':>11} {'tardiness min':>14} {'repart./day':>12}\n")
    for m, v in table.items():
        out.write(
            f"{m:<10} {v['et']:>8.3f} {v['energy_j'] / 3.6e6:>11.3f} {v['avg_tardiness_s'] / 60:>14.3f} "
            f"{v['repartitions']:>12.1f}\n"
        )
    return 0
