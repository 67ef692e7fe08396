"""`wattsched sweep FILE.toml --out DIR`: the cross product of a sweep file's lists into one tidy table.

docs/howto/sweep.md. The file's keys are documented in :mod:`wattsched.experiments.sweep`, the outputs
(``runs.parquet``, ``runs.csv``, ``sweep.json``, the ``cache/`` store) in
:mod:`wattsched.experiments.sweep_run`.
Heavy modules (pandas, pyarrow, pydantic, Ray) are imported when the command runs, not at start-up.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wattsched.cli._parsing import add_executor_options, positive_finite_float

__all__ = ["add_parser"]


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = groups.add_parser(
        "sweep",
        help="run the cross product of a sweep file (GPUs, configurations, policies, ...) into one table",
        description="Run every combination of the lists in FILE.toml (gpus, configurations, policies, "
        "partitioners, seeds, a [workload] table, an optional [dvfs] grid) and write DIR/runs.parquet (one "
        "row per run, ET over the sweep's whole pool), DIR/sweep.json (the pool and the spec) and, with "
        "--csv, DIR/runs.csv. A re-run into the same DIR reuses every stored run of unchanged code.",
    )
    parser.add_argument("file", metavar="FILE.toml", type=Path, help="the sweep file")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    add_executor_options(parser)
    parser.add_argument("--csv", action="store_true", help="also write DIR/runs.csv (default: off)")
    parser.add_argument(
        "--yes",
        action="store_true",
        help="run a cross product larger than the limit of 10,000 cells (default: refuse)",
    )
    parser.add_argument(
        "--hours",
        type=positive_finite_float,
        default=None,
        metavar="H",
        help="override the arrival window of generated workloads, in hours (default: the file's)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from wattsched.experiments.sweep import load_sweep
    from wattsched.experiments.sweep_run import run_sweep

    spec, base = load_sweep(args.file)
    result = run_sweep(
        spec,
        base,
        args.out,
        where=str(args.file),
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        csv=args.csv,
        hours=args.hours,
        confirm=args.yes,
    )
    pools = "; ".join(
        f"{part} {pool['runs']} runs, a = {pool['a_per_j']:.4g}/J"
        for part, pool in result.summary["et_pool"].items()
    )
    print(
        f"sweep: {len(result.runs)} runs ({result.executed} ran, {result.reused} reused) in "
        f"{result.wall_s:.1f} s; et over the whole pool ({pools})",
        file=sys.stderr,
        flush=True,
    )
    for name in ("runs.parquet", "runs.csv", "sweep.json"):
        if (result.out_dir / name).is_file() and (name != "runs.csv" or args.csv):
            print(result.out_dir / name)
    return 0
