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
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench_dqn import TARGETS, _et_table, _rows, gain
from wattsched.mig.partition import PARTITIONERS
from wattsched.mig.partition.evaluate import DayStream
from wattsched.rl.distill import DistillationSet, DistillConfig, fine_tune, label_days, save_networks
from wattsched.rl.dqn import load_config, load_model, member_path, validation_cost
from wattsched.rl.partitioner import DQNPartitioner

HERE = Path(__file__).resolve().parent
#: First validation-stream index scored here (the DQN's best-weights check uses 0-9, its ensemble choice
#: 1,000-1,029 of that stream).
VALIDATION_FIRST = 2_002_000
POOL = ("no-mig", "static", "day-night", "dynamic")


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
    args: argparse.Namespace, config: DistillConfig, data: DistillationSet, start: Path, tag: str
) -> Any:
    """Fine-tune from ``start`` with each setting; the validation cost of each; the best one's path."""
    base_config = load_config(start)
    results = []
    for temperature in args.temperatures:
        for anchor in args.anchors:
            setting = replace(config, temperature=temperature, anchor_weight=anchor)
            models = [load_model(member_path(start, k)) for k in range(base_config.networks)]
            started = time.perf_counter()
            losses = fine_tune(models, data, setting)
            out = args.out / f"{tag}-t{temperature:g}-w{anchor:g}"
            path = save_networks(models, base_config, out)
            cost = _validate(path, args.validation_days)
            row = {
                "temperature": temperature,
                "anchor_weight": anchor,
                "loss_first": losses[0],
                "loss_last": losses[-1],
                "fit_s": round(time.perf_counter() - started, 1),
                "validation_cost": cost,
                "path": str(path),
            }
            results.append(row)
            print(
                f"  {tag}: temperature {temperature:g}, anchor {anchor:g}: loss {losses[0]:.3f} -> "
                f"{losses[-1]:.3f}, validation cost {cost:.4f}",
                flush=True,
            )
    best = min(results, key=lambda r: r["validation_cost"])
    return results, Path(best["path"])


def _held_out(args: argparse.Namespace, paths: dict[str, Path]) -> dict[str, Any]:
    days = range(args.held_out_days)
    rows: list[dict[str, Any]] = []
    for method in ("no-mig", "day-night"):
        rows += _rows(method, PARTITIONERS.make(method), days, 0)
    rows += _rows("static", PARTITIONERS.make("static", configuration=3), days, 0)
    for name, path in paths.items():
        rows += _rows(name, DQNPartitioner.from_file(path), days, 0, args.workers)
    out: dict[str, Any] = {}
    for name in paths:
        renamed = [{**r, "method": "dynamic"} if r["method"] == name else r for r in rows]
        renamed = [r for r in renamed if r["method"] in POOL]
        table, a = _et_table(renamed, POOL)
        out[name] = {
            "a_per_j": a,
            "et": float(table["dynamic"].mean()),
            "gains": {m: gain(table["dynamic"], table[m]) for m, _ in TARGETS},
            "repartitions_per_day": float(np.mean([r["repartitions"] for r in rows if r["method"] == name])),
        }
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
    # every round's kept network is scored; the one with the lowest validation cost is the result
    kept = {f"dynamic-distilled-r{k + 1}": Path(r["kept"]) for k, r in enumerate(rounds)}
    costs = {name: min(g["validation_cost"] for g in r["grid"]) for name, r in zip(kept, rounds, strict=True)}
    chosen = min(costs, key=lambda name: costs[name])
    held = _held_out(args, {"dynamic-original": args.model, **kept})
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
    result = {
        "model": str(args.model),
        "kept": str(kept[chosen]),
        "chosen_round": chosen,
        "distill": asdict(config),
        "validation_days": args.validation_days,
        "validation_cost_original": base_cost,
        "rounds": rounds,
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
