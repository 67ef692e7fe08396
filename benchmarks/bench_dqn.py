"""DQN training wall time to reach ET <= 0.8 x Static on held-out days (target: <= 10 min on 2 cores).

Trains the quick-scale DQN and, every ``--eval-every`` steps, evaluates the
greedy policy on ``--eval-days`` held-out days against Static (the best fixed configuration by ET on training
days, as in the Table III study). ET uses one fixed ``a`` from pilot runs so successive evaluations compare.
Reported training time excludes the evaluations. Prints a table and, last, one JSON line.

    .venv/bin/python benchmarks/bench_dqn.py [--max-steps 150000] [--eval-every 15000] [--eval-days 20]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from typing import Any

import numpy as np


def _et(rows: list[dict[str, Any]], a: float) -> float:
    from wattsched.metrics import et_values

    return float(np.mean(et_values([r["energy_j"] for r in rows], [r["avg_tardiness_s"] for r in rows], a)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=150_000)
    parser.add_argument("--eval-every", type=int, default=15_000)
    parser.add_argument("--eval-days", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.8, help="ET ratio to Static to reach")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=JSON",
        help="override a quick_config field, e.g. gamma=0.95",
    )
    args = parser.parse_args()

    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    from wattsched.mig.partition import PARTITIONERS
    from wattsched.mig.partition.evaluate import evaluate_policy, pilot_et_coefficient, select_static
    from wattsched.rl.dqn import quick_config, train
    from wattsched.rl.partitioner import DQNPartitioner

    torch.set_num_threads(1)
    a = pilot_et_coefficient(args.seed)
    static_config = select_static(args.seed, 20)[0]
    days = range(args.eval_days)
    static_rows = evaluate_policy(
        "static", PARTITIONERS.make("static", configuration=static_config), days, args.seed
    )
    static_et = _et(static_rows, a)
    print(
        f"static = cfg {static_config}, ET {static_et:.4f} on {args.eval_days} held-out days (a = {a:.3e}/J)"
    )
    print(f"{'steps':>8} {'train s':>8} {'ET':>8} {'ET/static':>10}")
    history: list[dict[str, float]] = []

    class Evaluate(BaseCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.started = time.perf_counter()
            self.eval_s = 0.0
            self.reached: dict[str, float] | None = None

        def _on_step(self) -> bool:
            if self.num_timesteps % args.eval_every:
                return True
            begin = time.perf_counter()
            train_s = begin - self.started - self.eval_s
            policy = DQNPartitioner.from_model(self.model)
            et = _et(evaluate_policy("dynamic", policy, days, args.seed), a)
            self.eval_s += time.perf_counter() - begin
            point = {"steps": self.num_timesteps, "train_s": train_s, "et": et, "ratio": et / static_et}
            history.append(point)
            print(
                f"{point['steps']:>8.0f} {point['train_s']:>8.1f} {et:>8.4f} {point['ratio']:>10.3f}",
                flush=True,
            )
            if self.reached is None and point["ratio"] <= args.target:
                self.reached = point
                return False
            return True

    callback = Evaluate()
    overrides = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    if "net_arch" in overrides:
        overrides["net_arch"] = tuple(overrides["net_arch"])
    config = quick_config(seed=args.seed, total_timesteps=args.max_steps, **overrides)
    config = replace(config, env=replace(config.env, et_coefficient=a))
    with tempfile.TemporaryDirectory() as tmp:
        train(config, tmp, callback=callback)
    reached = callback.reached
    if reached is None:
        print(f"target ET <= {args.target} x static NOT reached within {args.max_steps} steps")
    else:
        print(f"target reached after {reached['steps']:.0f} steps, {reached['train_s']:.1f} s of training")
    print(
        json.dumps(
            {
                "static_configuration": static_config,
                "static_et": static_et,
                "target": args.target,
                "reached": reached is not None,
                "reached_at": reached,
                "history": history,
                "torch_threads": 1,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
