"""`wattsched dvfs` commands: generate, solve (Alg. 1 per task), run (offline/online schedules), fit."""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from wattsched.cli._output import check_writable, print_json
from wattsched.cli._parsing import OneLineErrorParser
from wattsched.dvfs.cluster import GROUPINGS, IDLE_ACCOUNTINGS, INITIAL_PLACEMENTS, MAX_PAIRS, NEXT_STARTS
from wattsched.dvfs.tasks import MAX_TASKS
from wattsched.errors import ConfigError, InputError
from wattsched.io import file_format, write_table

if TYPE_CHECKING:
    from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig
    from wattsched.dvfs.model import TaskSet

__all__ = ["add_parser"]

LOG = logging.getLogger(__name__)


def _check_number(option: str, value: float | None, ok: Callable[[float], bool], rule: str) -> None:
    if value is not None and not (math.isfinite(value) and ok(value)):
        raise ConfigError(f"{option} {rule}, got {value:g}")


def _check_pairs(args: argparse.Namespace) -> None:
    if not 1 <= args.pairs <= MAX_PAIRS:
        raise ConfigError(f"--pairs must be in [1, {MAX_PAIRS:,}], got {args.pairs}")


def _check_generator_options(args: argparse.Namespace) -> None:
    """The options shared by ``generate`` and ``run``: --util, --pairs, --seed (ConfigError naming one)."""
    _check_number("--util", args.util, lambda v: v > 0, "must be a finite number > 0")
    _check_pairs(args)
    if args.util * args.pairs > MAX_TASKS:
        raise ConfigError(
            f"--util {args.util:g} x --pairs {args.pairs} = {args.util * args.pairs:.4g} tasks; "
            f"at most {MAX_TASKS:,} tasks can be generated"
        )
    if args.seed is None:
        args.seed = 0
    if args.seed < 0:
        raise ConfigError(f"--seed must be >= 0, got {args.seed}")


def _generated(args: argparse.Namespace, slot_s: float) -> TaskSet:
    from wattsched.dvfs.tasks import GeneratorSpec, generate_offline, generate_online

    make = generate_offline if args.mode == "offline" else generate_online
    tasks = make(args.util, args.pairs, args.seed, GeneratorSpec(slot_s=slot_s))
    if len(tasks) == 0:
        raise ConfigError(
            f"--util {args.util:g} on --pairs {args.pairs} gives no tasks (n = round(pairs x U))"
        )
    return tasks


def _generate(args: argparse.Namespace) -> int:
    from wattsched.dvfs.tasks import write_tasks

    file_format(args.output)  # a bad suffix fails before any work
    _check_generator_options(args)
    _check_number("--slot-s", args.slot_s, lambda v: v > 0, "must be a finite number > 0")
    tasks = _generated(args, args.slot_s)
    write_tasks(tasks, args.output)
    print(f"wrote {len(tasks)} tasks to {args.output}", file=sys.stderr)
    return 0


def _solve(args: argparse.Namespace) -> int:
    from wattsched.dvfs.solver import solve
    from wattsched.dvfs.tasks import read_tasks, tasks_to_frame
    from wattsched.hardware.dvfs import load_dvfs_gpu

    file_format(args.output)
    gpu = load_dvfs_gpu(args.gpu)
    tasks = read_tasks(args.tasks)
    interval = gpu.interval(args.interval)
    result = solve(tasks.model, tasks.window_s, interval, method=args.method, hkbu_grid=gpu.hkbu)
    frame = tasks_to_frame(tasks)
    for name in ("v", "f_core", "f_mem", "time_s", "power_w", "energy_j", "feasible"):
        frame[name] = getattr(result, name)
    _refuse_overflow({k: frame[k].to_numpy(float) for k in ("time_s", "power_w", "energy_j")}, args.tasks)
    write_table(frame, args.output)
    infeasible = int((~result.feasible).sum())
    print(
        f"solved {len(tasks)} tasks ({infeasible} with no setting meeting the window) -> {args.output}",
        file=sys.stderr,
    )
    return 0


def _refuse_overflow(values: dict[str, Any], source: str | None) -> None:
    """Results that are not finite (values near the float64 limit) cannot be written or printed as JSON."""
    bad = [key for key, value in values.items() if not np.all(np.isfinite(np.asarray(value, dtype=float)))]
    if bad:
        raise InputError(
            f"the computation overflowed ({', '.join(bad)} not finite): input values or options too large",
            path=source,
        )


def _rules(args: argparse.Namespace) -> dict[str, str]:
    """The scheduling rules: P2's text by default, every rule of the authors' code with --reproduce-hkbu;
    options given explicitly win either way."""
    authors = {
        "grouping": "on_demand",
        "idle_accounting": "whole-slot",
        "initial_placement": "one-per-pair",
        "next_start": "previous-finish",
    }
    paper = {
        "grouping": "sorted",
        "idle_accounting": "continuous",
        "initial_placement": "pack",
        "next_start": "previous-finish",
    }
    if args.mode == "offline" and args.initial_placement is not None:
        raise ConfigError("--initial-placement applies to online runs only (the T = 0 batch of a day)")
    base = authors if args.reproduce_hkbu else paper
    return {name: getattr(args, name) or value for name, value in base.items()}


def _run_configs(args: argparse.Namespace) -> tuple[ClusterConfig, DvfsConfig]:
    from wattsched.dvfs.cluster import MAX_DRS_SLOTS, MAX_SLOT_S, MIN_SLOT_S, ClusterConfig, DvfsConfig
    from wattsched.dvfs.hkbu import HKBU_IDLE_POWER_W, HKBU_TURN_ON_W_SLOT_PER_SERVER
    from wattsched.hardware.dvfs import load_dvfs_gpu

    _check_number(
        "--slot-s",
        args.slot_s,
        lambda v: MIN_SLOT_S <= v <= MAX_SLOT_S,
        f"must be in [{MIN_SLOT_S:g}, {MAX_SLOT_S:g}] s",
    )
    _check_number("--theta", args.theta, lambda v: 0 < v <= 1, "must be in (0, 1]")
    _check_number("--idle-power-w", args.idle_power_w, lambda v: v >= 0, "must be a finite number >= 0")
    _check_number(
        "--turn-on-j-per-pair", args.turn_on_j_per_pair, lambda v: v >= 0, "must be a finite number >= 0"
    )
    _check_number("--v-max", args.v_max, lambda v: v > 0, "must be a finite number > 0")
    _check_pairs(args)
    l = args.pairs_per_server
    if not 1 <= l <= args.pairs:
        raise ConfigError(f"--pairs-per-server must be in [1, --pairs = {args.pairs}], got {l}")
    if args.pairs % l:
        raise ConfigError(
            f"--pairs {args.pairs} must be a multiple of --pairs-per-server {l} "
            "(a server always holds l pairs)"
        )
    if args.drs_slots is not None and not 0 <= args.drs_slots <= MAX_DRS_SLOTS:
        raise ConfigError(f"--drs-slots must be in [0, {MAX_DRS_SLOTS:,}], got {args.drs_slots}")
    rules = _rules(args)
    gpu = load_dvfs_gpu(args.gpu)
    base = gpu.cluster
    slot_s = args.slot_s if args.slot_s is not None else base.slot_s
    if args.reproduce_hkbu:  # the authors' constants: idle 85 W per pair, 200 W·slot per server
        idle_w, per_pair_j = HKBU_IDLE_POWER_W, HKBU_TURN_ON_W_SLOT_PER_SERVER * slot_s / l
    else:
        idle_w, per_pair_j = base.idle_power_w, base.turn_on_j_per_pair / base.slot_s * slot_s
    cluster = ClusterConfig(
        pairs=args.pairs,
        pairs_per_server=args.pairs_per_server,
        idle_power_w=args.idle_power_w if args.idle_power_w is not None else idle_w,
        turn_on_j_per_pair=args.turn_on_j_per_pair if args.turn_on_j_per_pair is not None else per_pair_j,
        slot_s=slot_s,
        drs_idle_slots=args.drs_slots if args.drs_slots is not None else base.drs_idle_slots,
        allow_overflow=not args.strict_capacity,
        reproduce_hkbu=args.reproduce_hkbu,
        **rules,
    )
    interval = gpu.interval(args.interval)
    if args.v_max is not None:
        try:
            interval = interval.with_v_max(args.v_max)
        except ConfigError as exc:
            raise ConfigError(f"--v-max {args.v_max:g}: {exc}") from None
    dvfs = DvfsConfig(
        enabled=args.dvfs == "on",
        theta=args.theta,
        interval=interval,
        method=args.method,
        reproduce_hkbu=args.reproduce_hkbu,
        hkbu_grid=gpu.hkbu,
    )
    return cluster, dvfs


def _run(args: argparse.Namespace) -> int:
    from wattsched.dvfs.offline import run_offline
    from wattsched.dvfs.online import run_online
    from wattsched.dvfs.tasks import read_tasks

    if args.tasks:
        given = [f"--{n}" for n in ("util", "seed") if getattr(args, n) is not None]
        if given:
            raise ConfigError(f"{', '.join(given)} only apply to generated tasks, not to --tasks")
    else:
        if args.util is None:
            raise ConfigError("give --util U (to generate tasks) or --tasks FILE")
        _check_generator_options(args)
    cluster, dvfs = _run_configs(args)
    tasks = read_tasks(args.tasks) if args.tasks else _generated(args, cluster.slot_s)
    runner = run_offline if args.mode == "offline" else run_online
    settings = ("on", "off") if args.dvfs == "both" else (args.dvfs,)
    results: dict[str, dict[str, Any]] = {}
    for setting in settings:
        try:
            result = runner(tasks, args.algo, cluster, replace(dvfs, enabled=setting == "on"))
        except InputError as exc:
            if exc.path is None and args.tasks:
                raise InputError(exc.reason, path=args.tasks, row=exc.row, column=exc.column) from None
            raise
        numbers = {k: v for k, v in result.to_dict().items() if isinstance(v, float)}
        _refuse_overflow(numbers, args.tasks)
        results[setting] = result.to_dict()
    data: dict[str, Any] = {
        "mode": args.mode,
        "algo": args.algo,
        "dvfs": args.dvfs,
        "theta": args.theta,
        "pairs_per_server": args.pairs_per_server,
        "reproduce_hkbu": args.reproduce_hkbu,
        "idle_power_w": cluster.idle_power_w,
        "turn_on_j_per_pair": cluster.turn_on_j_per_pair,
        "grouping": cluster.grouping,
        "idle_accounting": cluster.idle_accounting,
        "next_start": cluster.next_start,
        **({"initial_placement": cluster.initial_placement} if args.mode == "online" else {}),
    }
    if args.dvfs == "both":
        on_j, off_j = float(results["on"]["energy_total_j"]), float(results["off"]["energy_total_j"])
        data.update(
            on=results["on"],
            off=results["off"],
            energy_saved_j=off_j - on_j,
            energy_saving=(off_j - on_j) / off_j if off_j > 0 else 0.0,
        )
    else:
        data.update(results[args.dvfs])
    if args.json:
        print_json(data)
    else:
        _print_run(data)
    for setting, result_dict in results.items():
        if result_dict.get("capacity_exceeded"):
            LOG.warning(
                "the schedule%s used %s pairs, more than --pairs %d: tasks that found no free pair opened "
                "new ones (--strict-capacity keeps to --pairs and makes them late instead)",
                f" with DVFS {setting}" if len(results) > 1 else "",
                result_dict.get("pairs_used"),
                args.pairs,
            )
    return 0


def _print_run(data: dict[str, Any]) -> None:
    """``dvfs run`` without ``--json``: one ``key value`` line each; ``--dvfs both``: both runs and the
    saving."""
    for key, value in data.items():
        if isinstance(value, dict):
            print(f"-- DVFS {key}")
            for inner, number in value.items():
                text = f"{number:.6g}" if isinstance(number, float) else str(number)
                print(f"  {inner:18s} {text}")
        elif key == "energy_saving":
            print(f"{key:20s} {value:.2%} of the energy without DVFS")
        else:
            print(f"{key:20s} {value:.6g}" if isinstance(value, float) else f"{key:20s} {value}")


def _warn_other_gpu(path: str, gpu: str, core_mhz: float, memory_mhz: float) -> None:
    """One warning when the measured clocks do not include ``--gpu``'s default clocks: the data were
    measured on another GPU (the fit normalises every clock by the GPU's defaults)."""
    import pandas as pd

    clocks = pd.read_csv(path, usecols=["coreF", "memF"])
    core, memory = set(clocks["coreF"].astype(float)), set(clocks["memF"].astype(float))
    if core_mhz not in core or memory_mhz not in memory:
        LOG.warning(
            "--data %s was not measured at --gpu %s's default clocks (core %g MHz, memory %g MHz; the data's "
            "clocks: core %g-%g MHz, memory %g-%g MHz): another GPU? The fit normalises by %s's clocks",
            path,
            gpu,
            core_mhz,
            memory_mhz,
            min(core),
            max(core),
            min(memory),
            max(memory),
            gpu,
        )


def _fit(args: argparse.Namespace) -> int:
    import pandas as pd

    from wattsched.dvfs.fitting import fit_measurements
    from wattsched.hardware.dvfs import load_dvfs_gpu

    if args.output:
        file_format(args.output)
        check_writable(args.output)
    gpu = load_dvfs_gpu(args.gpu)
    fits = fit_measurements(args.data, gpu)
    frame = pd.DataFrame([fit.to_dict() for fit in fits])
    numeric = frame.select_dtypes("number")
    _refuse_overflow({str(c): numeric[c].to_numpy(float) for c in numeric.columns}, args.data)
    if args.output:
        write_table(frame, args.output)
    if args.json:
        print_json(
            {
                "applications": frame.to_dict(orient="records"),
                "mean_saving_wide": float(np.mean(frame["saving_wide"])),
                "mean_saving_narrow": float(np.mean(frame["saving_narrow"])),
            }
        )
        _warn_other_gpu(args.data, gpu.name, gpu.core_clock_mhz, gpu.memory_clock_mhz)
        return 0
    print(
        f"{'application':28s} {'time MAPE':>9s} {'power MAPE':>10s} "
        f"{'saving wide':>11s} {'saving narrow':>13s}"
    )
    for fit in fits:
        print(
            f"{fit.app:28s} {fit.time_mape:9.2%} {fit.power_mape:10.2%} {fit.saving_wide:11.1%} "
            f"{fit.saving_narrow:13.1%}"
        )
    print(
        f"{'mean':28s} {frame['time_mape'].mean():9.2%} {frame['power_mape'].mean():10.2%} "
        f"{frame['saving_wide'].mean():11.1%} {frame['saving_narrow'].mean():13.1%}"
    )
    _warn_other_gpu(args.data, gpu.name, gpu.core_clock_mhz, gpu.memory_clock_mhz)
    return 0


def _add_generator_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mode",
        choices=("offline", "online"),
        default="offline",
        help="offline: every task at time 0; online: arrivals spread over the slots",
    )
    parser.add_argument(
        "--util", type=float, help="task-set utilisation U_J > 0 (n = pairs x U tasks, at most 10,000,000)"
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=2048,
        help="CPU-GPU pairs in the cluster (default 2048, at most 1,000,000)",
    )
    parser.add_argument("--seed", type=int, help="random seed >= 0 (default 0)")


def add_parser(groups: argparse._SubParsersAction) -> None:
    parser = groups.add_parser("dvfs", help="DVFS-aware deadline scheduling on CPU-GPU clusters (P2)")
    commands = parser.add_subparsers(
        dest="dvfs_command", metavar="COMMAND", parser_class=OneLineErrorParser, required=True
    )

    gen = commands.add_parser("generate", help="write a synthetic P2 task file ('wattsched schema tasks')")
    _add_generator_options(gen)
    gen.add_argument("--slot-s", type=float, default=60.0, help="slot length in s")
    gen.add_argument("-o", "--output", required=True, help="task file to write (.csv or .parquet)")
    gen.set_defaults(func=_generate, util=1.0)

    sol = commands.add_parser("solve", help="Alg. 1: minimum-energy V/f per task within its window")
    sol.add_argument("--tasks", required=True, help="task file (.csv or .parquet; 'wattsched schema tasks')")
    sol.add_argument("-o", "--output", required=True, help="output file (.csv or .parquet)")
    sol.add_argument("--gpu", default="gtx1080ti", help="DVFS GPU name or TOML file")
    sol.add_argument(
        "--interval",
        choices=("wide", "narrow"),
        default="wide",
        help="the GPU's DVFS interval of core/memory clocks",
    )
    sol.add_argument(
        "--method",
        choices=("exact", "hkbu"),
        default="exact",
        help="Alg. 1 search: exact, or the authors' grid",
    )
    sol.set_defaults(func=_solve)

    run = commands.add_parser("run", help="schedule tasks on the cluster and report the energy split")
    _add_generator_options(run)
    run.add_argument("--tasks", help="task file instead of generated tasks")
    run.add_argument(
        "--pairs-per-server", type=int, default=1, help="l, pairs per server; must divide --pairs"
    )
    run.add_argument(
        "--algo",
        choices=("edl", "edf-bf", "edf-wf", "lpt-ff", "bin"),
        default="edl",
        help="scheduling algorithm (edl: P2's)",
    )
    run.add_argument("--theta", type=float, default=1.0, help="θ of the readjustment (1 = off)")
    run.add_argument(
        "--dvfs",
        choices=("on", "off", "both"),
        default="on",
        help="scale V/f per task (on), run at the default clocks (off), or both on the same "
        "tasks and report the energy saving",
    )
    run.add_argument(
        "--grouping",
        choices=GROUPINGS,
        help="offline/initial grouping: Alg. 3 (sorted, paper; default) or opening order (on_demand)",
    )
    run.add_argument(
        "--idle-accounting",
        choices=IDLE_ACCOUNTINGS,
        help="idle energy from continuous busy time (default) or busy time rounded up to whole slots",
    )
    run.add_argument(
        "--initial-placement",
        choices=INITIAL_PLACEMENTS,
        help="online, DVFS on, T = 0: pack the batch (default) or one pair per deadline-meeting task",
    )
    run.add_argument(
        "--next-start",
        choices=NEXT_STARTS,
        help="a queued task starts at the previous finish (default, both codes) or the next slot (P2's text)",
    )
    run.add_argument("--gpu", default="gtx1080ti", help="DVFS GPU name or TOML file")
    run.add_argument(
        "--interval",
        choices=("wide", "narrow"),
        default="wide",
        help="the GPU's DVFS interval of core/memory clocks",
    )
    run.add_argument("--v-max", type=float, help="voltage ceiling (paper 1.2, authors' code 1.25)")
    run.add_argument("--method", choices=("exact", "hkbu"), default="exact", help="Alg. 1 search")
    run.add_argument(
        "--reproduce-hkbu",
        action="store_true",
        help="every rule and constant of the authors' code: idle 85 W, 200 W·slot per server, on_demand, "
        "whole-slot, one-per-pair, their Alg. 1 (grid of --gpu) and tie order; explicit options still win",
    )
    run.add_argument("--idle-power-w", type=float, help="idle power per pair (paper 37 W, authors' 85 W)")
    run.add_argument(
        "--turn-on-j-per-pair", type=float, help="Δ per pair in J (paper 90 W·slot; authors' 200 W·slot / l)"
    )
    run.add_argument("--slot-s", type=float, help="slot length (default 60 s)")
    run.add_argument("--drs-slots", type=int, help="ρ, idle slots before DRS turns a server off (default 2)")
    run.add_argument(
        "--strict-capacity",
        action="store_true",
        help="never open more than --pairs pairs (late tasks instead)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.set_defaults(func=_run)

    fit = commands.add_parser("fit", help="fit the P2 model to measured clocks/time/power per application")
    fit.add_argument("--data", required=True, help="measurement CSV (appName, coreF, memF, time/ms, power/W)")
    fit.add_argument("--gpu", default="gtx1080ti", help="GPU whose default clocks normalise the data")
    fit.add_argument("-o", "--output", help="write the fitted parameters (.csv or .parquet)")
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    fit.set_defaults(func=_fit)

    from wattsched.cli import dvfs_apply

    dvfs_apply.add_parsers(commands)
