"""`wattsched mig train` and `wattsched mig evaluate` (the DQN repartitioning agent)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from wattsched.cli._output import print_json, progress_bar
from wattsched.cli._parsing import (
    add_gpu_option,
    add_preset_options,
    int_at_least,
    positive_finite_float,
    resolve_deadline_rule,
    resolve_gpu,
    resolve_preset,
)
from wattsched.errors import ConfigError
from wattsched.units import JOULES_PER_KWH

__all__ = ["add_parser"]

_METHODS = ("no-mig", "static", "static-best", "day-night", "lookahead", "dynamic", "dynamic-rollout")
#: Not in the default ``--methods``: slower, or a choice of their own.
_OPT_IN = ("static-best", "dynamic-rollout")
#: ET's pool (docs/concepts/et.md): P1's four Table III methods, where evaluated.
_ET_POOL = ("no-mig", "static", "day-night", "dynamic")


def _coefficient(text: str) -> float | str:
    """``--et-coefficient`` of evaluate: a fixed ``a`` per joule, or ``pilot``."""
    if text.strip().lower() == "pilot":
        return "pilot"
    return positive_finite_float(text)


def add_parser(mig_commands: argparse._SubParsersAction) -> None:
    """Register ``train`` and ``evaluate`` under ``wattsched mig``."""
    train = mig_commands.add_parser("train", help="train the DQN repartitioning agent (stable-baselines3)")
    length = train.add_mutually_exclusive_group()
    length.add_argument("--days", type=int_at_least(1), help="training episodes (simulated days)")
    length.add_argument("--timesteps", type=int_at_least(1), help="training decision steps (of each network)")
    train.add_argument(
        "--scale",
        choices=("quick", "paper"),
        default="quick",
        help="hyperparameter preset: quick (8 networks of 64-64, 120k steps each) or paper (the "
        "published agent's settings, 2000 days)",
    )
    train.add_argument(
        "--ensemble",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="networks trained with seeds seed, seed+1, ... acting on their mean Q-values "
        "(default: the scale's, 8 at quick, 1 at paper)",
    )
    train.add_argument(
        "--keep",
        type=int_at_least(0),
        default=None,
        metavar="K",
        help="of the --ensemble networks, act with this many, the best on validation days (0: all; "
        "default: the scale's, 3 at quick, or all when --ensemble is smaller)",
    )
    train.add_argument(
        "--workers",
        type=int_at_least(1),
        default=1,
        metavar="N",
        help="processes training ensemble members at once (the result does not depend on it; default: 1)",
    )
    train.add_argument(
        "--seed", type=int_at_least(0), default=0, help="random seed of the training days and the agent"
    )
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
    train.add_argument(
        "--repartition-mode",
        choices=("blackout", "deadline_shift"),
        default="blackout",
        help="a repartition stops the GPU for its blackout, or shifts deadlines instead",
    )
    add_preset_options(train, default="paper")
    add_gpu_option(train)
    train.add_argument("--json", action="store_true", help="print one JSON object")
    train.set_defaults(func=_run_train)

    evaluate = mig_commands.add_parser(
        "evaluate", help="compare every repartitioning policy on held-out days"
    )
    evaluate.add_argument(
        "--model", type=Path, required=True, help="a model written by 'wattsched mig train'"
    )
    evaluate.add_argument("--days", type=int_at_least(1), default=20, help="held-out days (default: 20)")
    evaluate.add_argument("--seed", type=int_at_least(0), default=0, help="random seed of the held-out days")
    evaluate.add_argument(
        "--static-config",
        default=None,
        help="configuration of 'static' (default: the GPU's static role, P1's choice)",
    )
    evaluate.add_argument(
        "--selection-days",
        type=int_at_least(1),
        default=20,
        help="selection days of 'static-best', the configuration with the lowest ET (default: 20)",
    )
    evaluate.add_argument(
        "--methods",
        default=",".join(m for m in _METHODS if m not in _OPT_IN),
        help=f"comma-separated subset of {', '.join(_METHODS)} (default: all but {' and '.join(_OPT_IN)}; "
        "dynamic-rollout: the DQN improved by rollouts over 2 sampled days, ~7 s a day at the paper load)",
    )
    evaluate.add_argument(
        "--et-coefficient",
        type=_coefficient,
        default=None,
        metavar="A|pilot",
        help="ET's a per joule: a fixed number, or 'pilot' (pilot runs of the benchmark methods); default: "
        f"pooled over the evaluated methods among {', '.join(_ET_POOL)}, so ET changes with --methods",
    )
    evaluate.add_argument(
        "--workers",
        type=int_at_least(1),
        default=1,
        metavar="N",
        help="processes the days of each method are shared among (same results)",
    )
    evaluate.add_argument(
        "--repartition-mode",
        choices=("blackout", "deadline_shift"),
        default="blackout",
        help="a repartition stops the GPU for its blackout, or shifts deadlines instead",
    )
    add_preset_options(evaluate, default=None)
    add_gpu_option(evaluate)
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.set_defaults(func=_run_evaluate)


def _run_train(args: argparse.Namespace) -> int:
    from wattsched.hardware.catalogue import DEFAULT_GPU
    from wattsched.mig.partition.evaluate import pilot_et_coefficient
    from wattsched.rl.dqn import DQNConfig, quick_config, train

    preset = resolve_preset(args)
    if args.deadline_rule not in (None, "p1"):
        raise ConfigError("mig train supports --deadline-rule p1 only (the environment draws P1's deadlines)")
    gpu = resolve_gpu(args)

    config = quick_config(seed=args.seed) if args.scale == "quick" else DQNConfig(seed=args.seed)
    if args.days:
        config = replace(config, episodes=args.days, total_timesteps=None)
    if args.timesteps:
        config = replace(config, total_timesteps=args.timesteps)
    if args.ensemble or args.keep is not None:
        ensemble = args.ensemble or config.ensemble
        if args.keep is not None and args.keep > ensemble:
            raise ConfigError(f"--keep {args.keep} is more than the {ensemble} networks trained (--ensemble)")
        config = config.with_ensemble(ensemble, args.keep)
    if args.checkpoint_every:
        config = replace(config, checkpoint_every_steps=args.checkpoint_every)
    workload = preset.day_workload()
    gpu_name = args.gpu or DEFAULT_GPU
    a = (
        args.et_coefficient
        if args.et_coefficient is not None
        else pilot_et_coefficient(args.seed, 8, workload, gpu_name)
    )
    if a < 0:
        raise ConfigError(f"--et-coefficient must be >= 0, got {a}")
    env = replace(
        config.env,
        et_coefficient=a,
        repartition_mode=args.repartition_mode,
        rate_multiplier=preset.rate_multiplier,
        gpu=gpu_name,
    )
    config = replace(config, env=env)
    bar = progress_bar(config.timesteps * config.ensemble, "step", "training")
    result = train(config, args.out, workers=args.workers, progress=bar)
    summary = {
        "model": str(result.model_path),
        "timesteps": result.timesteps,
        "networks": result.members,
        "trained_networks": config.ensemble,
        "wall_s": round(result.wall_s, 2),
        "et_coefficient": a,
        "preset": preset.name,
        "rate_multiplier": preset.rate_multiplier,
        "gpu": gpu.name,
    }
    if args.json:
        print_json(summary)
    else:
        if config.ensemble == 1:
            what = f"{result.timesteps} steps"
        else:
            acting = "all act" if result.members == config.ensemble else f"the best {result.members} act"
            what = f"{config.ensemble} networks, {result.timesteps} steps ({acting})"
        print(f"trained {what} in {result.wall_s:.1f} s -> {result.model_path}")
    return 0


def _evaluation_preset(args: argparse.Namespace) -> str:
    """``--preset``, else the preset of the model's training workload (its saved config), else ``paper``."""
    from wattsched.experiments.presets import PRESETS
    from wattsched.rl.dqn import load_config

    if args.preset is not None:
        return str(args.preset)
    if args.model.with_suffix(".json").is_file():
        multiplier = load_config(args.model).env.rate_multiplier
        for name, preset in PRESETS.items():
            if preset.rate_multiplier == multiplier:
                return name
    return "paper"


def _offset(update: Callable[[int], None], offset: int, done: int) -> None:
    update(offset + done)


def _run_evaluate(args: argparse.Namespace) -> int:
    from wattsched.experiments.presets import get_preset
    from wattsched.experiments.protocol import Method, Setting, build_policy, method_from_label, run_method
    from wattsched.hardware.catalogue import DEFAULT_GPU
    from wattsched.mig.partition.evaluate import et_by_method

    labels = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(labels) - set(_METHODS))
    if unknown or not labels:
        raise ConfigError(f"unknown method(s) {', '.join(unknown) or '(none)'}; valid: {', '.join(_METHODS)}")
    preset = get_preset(_evaluation_preset(args))
    rule = resolve_deadline_rule(args)
    gpu = resolve_gpu(args)
    setting = Setting(
        args.seed,
        preset.day_workload(rule),
        args.gpu or DEFAULT_GPU,
        selection_days=args.selection_days,
        model_path=str(args.model),
        repartition_mode=args.repartition_mode,
    )
    methods = [method_from_label(label) for label in dict.fromkeys(labels)]
    # The DQN is loaded once, before any day runs (a missing or broken model fails first).
    prebuilt = {m.label: build_policy(m, setting) for m in methods if m.kind == "dynamic"}
    if args.static_config is not None:
        gpu.configuration(args.static_config)  # ConfigError lists the valid ids
        methods = [
            Method("static", configuration=args.static_config) if m.label == "static" else m for m in methods
        ]
    results = []
    bar = progress_bar(len(methods) * args.days, "day", "evaluate")
    for index, method in enumerate(methods):
        done = None if bar is None else partial(_offset, bar, index * args.days)
        results += run_method(
            method, range(args.days), setting, prebuilt.get(method.label), args.workers, done
        )
    evaluated = [m.label for m in methods]
    pool: list[str]
    if isinstance(args.et_coefficient, float):
        a, source, pool = args.et_coefficient, "given", []
        ets, _ = et_by_method(results, evaluated, a)
    elif args.et_coefficient == "pilot":
        a, source, pool = setting.pilot_coefficient(), "pilot", []
        ets, _ = et_by_method(results, evaluated, a)
    else:
        pool = [m for m in _ET_POOL if m in evaluated] or evaluated
        ets, a = et_by_method(results, pool)
        source = "pooled"
    table = {
        label: {
            "et": ets[label],
            **{
                key: sum(getattr(r, key) for r in results if r.method == label) / args.days
                for key in ("energy_j", "avg_tardiness_s", "repartitions")
            },
        }
        for label in evaluated
    }
    if args.json:
        print_json(
            {
                "days": args.days,
                "seed": args.seed,
                "preset": preset.name,
                "rate_multiplier": preset.rate_multiplier,
                "deadline_rule": rule,
                "gpu": gpu.name,
                "et_coefficient": a,
                "et_coefficient_source": source,
                "et_pool": pool,
                "methods": table,
            }
        )
        return 0
    pool_text = {
        "given": "given with --et-coefficient",
        "pilot": "from pilot runs of no-mig, static, day-night",
    }
    out = sys.stdout
    out.write(
        f"{args.days} held-out days, seed {args.seed}, preset {preset.name} (x{preset.rate_multiplier:g}), "
        f"deadline rule {rule}, {gpu.name}\n"
        f"ET a = {a:.3e} per J ({pool_text.get(source, 'pooled over ' + ', '.join(pool))})\n"
    )
    out.write(f"{'method':<15} {'ET':>8} {'energy kWh':>11} {'tardiness min':>14} {'repart./day':>12}\n")
    for m, v in table.items():
        out.write(
            f"{m:<15} {v['et']:>8.3f} {v['energy_j'] / JOULES_PER_KWH:>11.3f} "
            f"{v['avg_tardiness_s'] / 60:>14.3f} "
            f"{v['repartitions']:>12.1f}\n"
        )
    return 0
