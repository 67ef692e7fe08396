"""Wall time of the paper-scale Table II study (250 queues × 4 conditions × 5 policies × 12 configurations).

    python benchmarks/bench_table2.py                    # the full paper scale on 2 workers (target <= 600 s)
    python benchmarks/bench_table2.py --fraction 0.1     # 10 % of the queues, extrapolated (said so)
    python benchmarks/bench_table2.py --out DIR          # keep the results (DIR must be new or empty)

With ``--out DIR``, ``wattsched reproduce --scale paper --only table2 --out DIR`` afterwards reuses every
stored cell and writes the report and summary.json.

Prints wall time, CPU time, per-cell cost and the load average (the machine may be shared: the CPU time
divided by the workers is the uncontended estimate), and writes the same as JSON to
``benchmarks/out/bench_table2.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from wattsched.experiments.executors import LocalExecutor
from wattsched.experiments.runner import run_study
from wattsched.studies.table2 import Table2Study

TARGET_S = 600.0


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fraction", type=float, default=1.0, help="share of the 250 queues to run (0, 1]")
    parser.add_argument("--out", type=Path, default=None, help="keep results here (new or empty folder)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not 0 < args.fraction <= 1:
        parser.error("--fraction must be in (0, 1]")
    full = Table2Study()
    paper_iterations = full.config.iterations.paper
    iterations = max(1, math.ceil(paper_iterations * args.fraction))
    study = Table2Study(iterations=iterations)
    if args.out is not None and args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} is not empty: a benchmark must not resume stored cells")
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_table2_"))
    cells = len(study.cells("paper"))
    print(
        f"table2 paper scale: {iterations}/{paper_iterations} queues per condition, {cells} cells "
        f"({cells * 60} simulations), {args.workers} workers",
        flush=True,
    )
    cpu0, wall0 = _cpu_s(), time.perf_counter()
    run = run_study(study, "paper", out, LocalExecutor(workers=args.workers))
    wall_s, cpu_s = time.perf_counter() - wall0, _cpu_s() - cpu0
    scale = paper_iterations / iterations
    result = {
        "iterations": iterations,
        "paper_iterations": paper_iterations,
        "cells": cells,
        "executed": run.executed,
        "workers": args.workers,
        "cores": os.cpu_count(),
        "wall_s": round(wall_s, 1),
        "cpu_s": round(cpu_s, 1),
        "cpu_s_per_cell": round(cpu_s / max(1, run.executed), 3),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "paper_wall_s_estimate": round(wall_s * scale, 1),
        "paper_wall_s_uncontended_estimate": round(cpu_s * scale / args.workers, 1),
        "extrapolated": scale != 1.0,
        "target_s": TARGET_S,
    }
    for key, value in result.items():
        print(f"{key:36s} {value}")
    verdict = "within" if result["paper_wall_s_estimate"] <= TARGET_S else "OVER"
    how = f"extrapolated ×{scale:.1f} from {iterations} queues" if scale != 1 else "measured in full"
    print(
        f"paper-scale Table II: {result['paper_wall_s_estimate']:.0f} s wall ({how}); {verdict} the "
        f"{TARGET_S:.0f} s target",
        flush=True,
    )
    target = Path(__file__).resolve().parent / "out" / "bench_table2.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
