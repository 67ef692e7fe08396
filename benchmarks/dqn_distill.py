"""Distilling the rollout into the DQN (:mod:`wattsched.rl.distill`) at the ``paper`` preset: does the network
alone, fine-tuned on the rollout's choices, reach the DQN + rollout's gains?

1. Label ``--days`` training-stream days (from ``DISTILL_DAY_OFFSET``, never a held-out day) with the rollout
   over the trained model ``--model`` (2 sampled days, its 3 best candidates: the study's rollout) acting;
   with ``--rounds 2`` a second block of days where the distilled network acts and the rollout labels.
2. Fine-tune the acting networks on the samples with each setting of the grid (``--temperatures`` ×
   ``--anchors``, ``--epochs``, ``--lr``) and score each on ``--validation-days`` validation-stream days
   (from index 2,000 of that stream: past the days the DQN's own choices used) by the reward-scale cost
   ``a·E + T`` (:func:`wattsched.rl.dqn.validation_cost`); the lowest is kept (the held-out days choose
   nothing). A later round starts from the kept setting's networks.
3. Score the kept distilled DQN *alone* (no rollout) on ``--held-out-days`` held-out days with
   ``bench_dqn.py``'s evaluation: the same days (seed 0, days 0 ..), ``a`` pooled over No-MIG, Static
   (cfg 3), Day-Night and the evaluated Dynamic, 95 % paired bootstrap of the ratio of mean ET; the
   original DQN alone beside it (its own pool).

Samples are saved (``<out>/round<r>.npz``) and reused when present (``--relabel`` labels again).

    .venv/bin/python benchmarks/dqn_distill.py --model benchmarks/out/distill/base/dqn_model.zip
        [--days 100] [--rounds 1] [--temperatures 0.1 1] [--anchors 1] [--epochs 10] [--lr 1e-4]
        [--validation-days 30] [--held-out-days 100] [--workers 2] [--out benchmarks/out/distill]

Prints tables and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench_dqn import TARGETS, _et_table, _rows, gain
from wattsched.hardware.mig import MigGpu
from wattsched.mig.partition import PARTITIONERS
from wattsched.mig.partition.base import ConfigId
from wattsched.mig.partition.evaluate import DayStream, day_seed
from wattsched.mig.partition.rollout import RolloutPartitioner
from wattsched.mig.partition.runner import run_day
from wattsched.mig.results import SimSnapshot
from wattsched.rl.distill import (
    DistillationSet,
    DistillConfig,
    expert_rollout,
    fine_tune,
    label_days,
    save_networks,
)
from wattsched.rl.dqn import load_config, load_model, member_path, validation_cost
from wattsched.rl.partitioner import DQNPartitioner
from wattsched.workload.generators import generate_jobs

HERE = Path(__file__).resolve().parent
#: First validation-stream index scored here (the DQN's best-weights check uses 0-9, its ensemble choice
#: 1,000-1,029 of that stream).
VALIDATION_FIRST = 2_002_000
POOL = ("no-mig", "static", "day-night", "dynamic")
#: The second rollout of the label-noise check draws its sampled days from the day's seed plus this.
NOISE_SEED_SHIFT = 1_000_003


def _labelled(args: argparse.Namespace, config: DistillConfig, round_index: int, actor: Path | None) -> Any:
    path = args.out / f"round{round_index}.npz"
    if path.exists() and not args.relabel:
        with np.load(path) as saved:
            return DistillationSet(**{k: saved[k] for k in saved.files}), 0.0
    first = config.first_day + round_index * config.days
    started = time.perf_counter()
    data = label_days(
        args.model, range(first, first + config.days), config, actor_path=actor, workers=args.workers
    )
    wall_s = time.perf_counter() - started
    np.savez_compressed(path, **asdict(data))
    return data, wall_s


def _validate(path: Path, days: int) -> float:
    return validation_cost(load_config(path), DQNPartitioner.from_file(path), VALIDATION_FIRST, days)


def _grid(
    args: argparse.Namespace,
    config: DistillConfig,
    data: DistillationSet,
    start: Path,
    tag: str,
    settings: Sequence[tuple[float, float]],
) -> Any:
    """Fine-tune from ``start`` with each (temperature, anchor weight); the validation cost of each; the
    best one's path. A setting already fitted and scored in ``args.out`` is read back (fitting is
    deterministic)."""
    base_config = load_config(start)
    results = []
    for temperature, anchor in settings:
        setting = replace(config, temperature=temperature, anchor_weight=anchor)
        out = args.out / f"{tag}-t{temperature:g}-w{anchor:g}-lr{config.learning_rate:g}-e{config.epochs}"
        done = out / "grid.json"
        if done.exists():
            row = json.loads(done.read_text(encoding="utf-8"))
        else:
            models = [load_model(member_path(start, k)) for k in range(base_config.networks)]
            started = time.perf_counter()
            losses = fine_tune(models, data, setting)
            path = save_networks(models, base_config, out)
            row = {
                "temperature": temperature,
                "anchor_weight": anchor,
                "learning_rate": config.learning_rate,
                "epochs": config.epochs,
                "loss_first": losses[0],
                "loss_last": losses[-1],
                "fit_s": round(time.perf_counter() - started, 1),
                "validation_cost": _validate(path, args.validation_days),
                "path": str(path),
            }
            done.write_text(json.dumps(row), encoding="utf-8")
        results.append(row)
        print(
            f"  {tag}: temperature {temperature:g}, anchor {anchor:g}, lr {config.learning_rate:g}, "
            f"{config.epochs} epochs: loss {row['loss_first']:.3f} -> {row['loss_last']:.3f}, "
            f"validation cost {row['validation_cost']:.4f}",
            flush=True,
        )
    best = min(results, key=lambda r: r["validation_cost"])
    return results, Path(best["path"])


@dataclass
class _TwoRollouts:
    """The expert rollout acting, a second one with other sampled days planning in the same states, and the
    networks' greedy choices there: how often do two draws of the rollout's label agree, and each network
    with the first?"""

    first: RolloutPartitioner
    second: RolloutPartitioner
    networks: dict[str, DQNPartitioner]
    name: str = "two-rollouts"
    rows: list[tuple[bool, ...]] = field(default_factory=list)

    @property
    def scheduler(self) -> str:
        return self.first.scheduler

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        self.first.reset(gpu, seed)
        self.second.reset(gpu, (seed or 0) + NOISE_SEED_SHIFT)
        for network in self.networks.values():
            network.reset(gpu, seed)

    def initial_configuration(self) -> ConfigId:
        return self.first.initial_configuration()

    def decide(self, snapshot: SimSnapshot) -> ConfigId:
        plan = self.first.plan(snapshot)
        if plan.costs:
            other = self.second.plan(snapshot).choice
            self.rows.append(
                (other == plan.choice, *(n.decide(snapshot) == plan.choice for n in self.networks.values()))
            )
        return plan.choice


def _label_noise(
    args: argparse.Namespace, config: DistillConfig, networks: dict[str, Path]
) -> dict[str, float]:
    """On ``--noise-days`` training-stream days after the labelled ones: agreement of a second rollout (other
    sampled days) and of each network with the rollout's choice, over the epochs where it simulated."""
    policy = _TwoRollouts(
        expert_rollout(args.model, config),
        expert_rollout(args.model, config),
        {name: DQNPartitioner.from_file(path) for name, path in networks.items()},
    )
    env = load_config(args.model).env
    spec = env.workload()
    first = config.first_day + args.rounds * config.days
    for day in range(first, first + args.noise_days):
        jobs = generate_jobs(spec, day_seed(0, DayStream.TRAINING, day))
        run_day(jobs, policy, horizon_s=spec.horizon_s, seed=day)
    table = np.asarray(policy.rows, dtype=float)
    names = ["second rollout", *networks]
    return {"planned_epochs": len(table), **{n: float(table[:, k].mean()) for k, n in enumerate(names)}}


def _held_out(args: argparse.Namespace, paths: dict[str, Path]) -> dict[str, Any]:
    days = range(args.held_out_days)
    rows: list[dict[str, Any]] = []
    for method in ("no-mig", "day-night"):
        rows += _rows(method, PARTITIONERS.make(method), days, 0)
    rows += _rows("static", PARTITIONERS.make("static", configuration=3), days, 0)
    for name, path in paths.items():
        rows += _rows(name, DQNPartitioner.from_file(path), days, 0, args.workers)
    scored = list(paths)
    if args.rollout_reference:
        rollout = expert_rollout(args.model, DistillConfig(scenarios=2, candidates=3))
        rows += _rows("dynamic-rollout", rollout, days, 0, args.workers)
        scored.append("dynamic-rollout")
    out: dict[str, Any] = {}
    for name in scored:
        renamed = [{**r, "method": "dynamic"} if r["method"] == name else r for r in rows]
        renamed = [r for r in renamed if r["method"] in POOL]
        table, a = _et_table(renamed, POOL)
        out[name] = {
            "a_per_j": a,
            "et": float(table["dynamic"].mean()),
            "gains": {m: gain(table["dynamic"], table[m]) for m, _ in TARGETS},
            "repartitions_per_day": float(np.mean([r["repartitions"] for r in rows if r["method"] == name])),
        }
    # each DQN against the original on the same days, ``a`` of the original's pool for both
    original = [r for r in rows if r["method"] in (*POOL[:3], "dynamic-original")]
    _, a = _et_table(
        [{**r, "method": "dynamic"} if r["method"] == "dynamic-original" else r for r in original], POOL
    )
    table, _ = _et_table(rows, POOL, a)
    for name in scored[1:]:
        out[name]["gain_vs_original"] = gain(table[name], table["dynamic-original"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--days", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--anchors", type=float, nargs="+", default=[1.0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--validation-days", type=int, default=30)
    parser.add_argument("--held-out-days", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--relabel", action="store_true")
    parser.add_argument(
        "--refit", action="store_true", help="after the rounds, fit the original networks on all samples"
    )
    parser.add_argument("--refit-temperatures", type=float, nargs="+", default=[0.3])
    parser.add_argument("--refit-anchors", type=float, nargs="+", default=[0.1])
    parser.add_argument("--refit-lr", type=float, default=3e-4)
    parser.add_argument("--refit-epochs", type=int, default=20)
    parser.add_argument(
        "--noise-days",
        type=int,
        default=0,
        help="days of the label-noise check (a second rollout's agreement with the first; 0: off)",
    )
    parser.add_argument(
        "--rollout-reference",
        action="store_true",
        help="also score the rollout over the original DQN on the held-out days (~7 s of one core a day)",
    )
    parser.add_argument("--skip-held-out", action="store_true", help="no held-out scoring")
    parser.add_argument(
        "--score-every-round",
        action="store_true",
        help="score each round's kept network on the held-out days (default: only the chosen one)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "out" / "distill")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    config = DistillConfig(days=args.days, rounds=args.rounds, epochs=args.epochs, learning_rate=args.lr)
    started = time.perf_counter()
    base_cost = _validate(args.model, args.validation_days)
    print(
        f"original DQN: validation cost {base_cost:.4f} on {args.validation_days} validation days", flush=True
    )
    parts: list[DistillationSet] = []
    rounds = []
    start, actor = args.model, None
    for round_index in range(args.rounds):
        data, label_s = _labelled(args, config, round_index, actor)
        parts.append(data)
        print(
            f"round {round_index + 1}: {len(data)} samples ({int(data.planned.sum())} planned), actor agrees "
            f"with the rollout on {data.agreement():.1%} of the planned ones; labelled in {label_s:.0f} s",
            flush=True,
        )
        grid, best = _grid(
            args,
            replace(config, seed=round_index),
            DistillationSet.concatenate(parts),
            start,
            f"r{round_index + 1}",
            [(t, w) for t in args.temperatures for w in args.anchors],
        )
        rounds.append(
            {
                "samples": len(data),
                "planned": int(data.planned.sum()),
                "agreement": data.agreement(),
                "label_s": round(label_s, 1),
                "grid": grid,
                "kept": str(best),
            }
        )
        start = actor = best
    assert actor is not None
    if args.refit:
        # one more fit on every round's samples, from the original networks, with its own grid
        refit = replace(config, learning_rate=args.refit_lr, epochs=args.refit_epochs, seed=args.rounds)
        settings = [(t, w) for t in args.refit_temperatures for w in args.refit_anchors]
        grid, best = _grid(args, refit, DistillationSet.concatenate(parts), args.model, "refit", settings)
        rounds.append({"refit": True, "grid": grid, "kept": str(best)})
    # every round's kept network is scored; the one with the lowest validation cost is the result
    kept = {
        "dynamic-distilled-" + ("refit" if r.get("refit") else f"r{k + 1}"): Path(r["kept"])
        for k, r in enumerate(rounds)
    }
    costs = {name: min(g["validation_cost"] for g in r["grid"]) for name, r in zip(kept, rounds, strict=True)}
    if not args.score_every_round:
        kept = {chosen_name: kept[chosen_name] for chosen_name in [min(costs, key=lambda n: costs[n])]}
        costs = {name: costs[name] for name in kept}
    chosen = min(costs, key=lambda name: costs[name])
    noise: dict[str, float] = {}
    if args.noise_days:
        noise = _label_noise(args, config, {"dynamic-original": args.model, **kept})
        print(
            f"label noise on {args.noise_days} days: agreement with the rollout's choice {noise}", flush=True
        )
    held = {} if args.skip_held_out else _held_out(args, {"dynamic-original": args.model, **kept})
    print(f"\n{args.held_out_days} held-out days (seed 0), DQN alone, a pooled over {', '.join(POOL)}:")
    for name, block in held.items():
        cells = ", ".join(
            f"vs {m} {g['gain']:.1%} [{g['ci95_low']:.1%}, {g['ci95_high']:.1%}]"
            for m, g in block["gains"].items()
        )
        print(
            f"  {name:<18} ET {block['et']:.3f}, {cells}, "
            f"{block['repartitions_per_day']:.0f} repartitions/day"
        )
        if "gain_vs_original" in block:
            g = block["gain_vs_original"]
            print(
                f"  {'':<18} vs the original DQN {g['gain']:.1%} [{g['ci95_low']:.1%}, {g['ci95_high']:.1%}] "
                f"({g['days_better']} of {g['days']} days better)"
            )
    result = {
        "model": str(args.model),
        "kept": str(kept[chosen]),
        "chosen_round": chosen,
        "distill": asdict(config),
        "validation_days": args.validation_days,
        "validation_cost_original": base_cost,
        "rounds": rounds,
        "label_noise": noise,
        "held_out_days": args.held_out_days,
        "held_out": held,
        "wall_s": round(time.perf_counter() - started, 1),
        "stream": DayStream.TRAINING.value,
    }
    (args.out / "summary.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
