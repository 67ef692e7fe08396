"""Instructions per simulated job, counted by valgrind (callgrind): the speed comparisons of
``bench_simulator.py`` and ``bench_cluster.py --cost`` without the noise of a shared machine.

CPU time on a machine shared with other work moves by ±10–20 % from run to run; the number of instructions a
run executes does not move at all. Each measurement runs a fresh Python under ``valgrind --tool=callgrind``
twice — once building the workload and simulating a few jobs (imports, caches), once doing that and then
simulating the workload — and divides the difference by the jobs simulated. Instructions are not time (cache
misses and branch mispredictions are not counted), but at equal work a smaller count is a faster engine.

* ``--engine``: one 24 h trace at 0.5 jobs/min on every configuration (1–12) of the A100-40GB, per policy, for
  this tree and ``--baseline`` (default ``e80848b``, as in ``bench_simulator.py``); ratio = baseline
  instructions / this tree's (above 1: this tree runs fewer).
* ``--cost``: a 64-GPU cluster (8 × 8, first-fit, static 3, restricted EDF-SS, always on) against the same
  per-GPU load run by ``simulate`` on 64 one-GPU days, 4 h of the paper preset (``bench_cluster.py --cost``
  at a size valgrind runs in a minute); ratio = cluster / one-GPU instructions per job.

Run: ``python benchmarks/bench_instructions.py [--engine] [--cost] [--baseline COMMIT]`` (needs ``valgrind``;
a few minutes: valgrind runs Python about 50× slower).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("edf-fs", "edf-ss", "edf-ss-restricted", "lalf", "llf")
HOURS = 4.0


def worker(task: str, run: bool) -> int:
    """Build the workload of ``task`` (and simulate it when ``run``); returns the jobs it simulates."""
    if task == "cost-cluster" or task == "cost-single":
        from wattsched.cluster import (
            ClusterOptions,
            ClusterSimulation,
            ClusterSpec,
            cluster_spec,
            preset_spec,
        )
        from wattsched.mig import simulate
        from wattsched.workload.generators import generate_jobs

        jobs = generate_jobs(cluster_spec(preset_spec("paper", hours=HOURS), 64), 1)
        singles = [generate_jobs(cluster_spec(preset_spec("paper", hours=HOURS), 1), s) for s in range(64)]
        options = ClusterOptions(keep_outcomes=False)
        # Warm-up in both runs (lazy imports, caches), so that only the measured work differs.
        ClusterSimulation(ClusterSpec.homogeneous(1, 8), options, horizon_s=60.0).run(jobs[:20])
        simulate(singles[0][:20], 3, "edf-ss-restricted")
        if run and task == "cost-cluster":
            ClusterSimulation(ClusterSpec.homogeneous(8, 8), options, horizon_s=HOURS * 3600.0).run(jobs)
        if run and task == "cost-single":
            for day in singles:
                simulate(day, 3, "edf-ss-restricted", horizon_s=HOURS * 3600.0)
        return len(jobs) if task == "cost-cluster" else sum(map(len, singles))
    from wattsched.mig import simulate
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    trace = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=24.0), 0)
    simulate(trace[:20], 3, task)  # warm-up in both runs (lazy imports, caches)
    if run:
        for configuration in range(1, 13):
            simulate(trace, configuration, task)
    return 12 * len(trace)


def count(src: Path, task: str, run: bool) -> tuple[int, int]:
    """``(instructions, jobs)`` of one worker run under callgrind, with ``src`` first on the path."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--worker",
        task,
    ] + (["--run"] if run else [])
    # A fixed hash seed and one BLAS thread: without them the same code's count moves by about 5 % a run.
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {done.stderr[-300:]}")
    return int(found.group(1).replace(",", "")), int(done.stdout.strip().splitlines()[-1])


def per_job(src: Path, task: str) -> float:
    base, _ = count(src, task, run=False)
    total, jobs = count(src, task, run=True)
    return (total - base) / jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="store_true", help="one-GPU engine per policy, against --baseline")
    parser.add_argument("--cost", action="store_true", help="64-GPU cluster against the one-GPU engine")
    parser.add_argument("--baseline", default="e80848b", help="commit for --engine (default e80848b)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(worker(args.worker, args.run))
        return 0
    if shutil.which("valgrind") is None:  # skipped, not failed: `make bench` runs every script
        print(
            "bench_instructions.py: skipped, valgrind is not installed (apt-get install valgrind)",
            file=sys.stderr,
        )
        return 0
    everything = not (args.engine or args.cost)
    if args.engine or everything:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / "baseline"
            git = ["git", "-C", str(ROOT), "worktree"]
            subprocess.run([*git, "add", "--detach", "-q", str(folder), args.baseline], check=True)
            try:
                print("One-GPU engine, instructions per job (24 h at 0.5/min, configurations 1-12):")
                print(f"{'policy':<20}{'this tree':>12}{args.baseline:>12}{'ratio':>8}")
                for policy in POLICIES:
                    mine, theirs = per_job(ROOT / "src", policy), per_job(folder / "src", policy)
                    print(f"{policy:<20}{mine:>12,.0f}{theirs:>12,.0f}{theirs / mine:>8.3f}")
            finally:
                subprocess.run([*git, "remove", "--force", str(folder)], check=False)
    if args.cost or everything:
        cluster, single = per_job(ROOT / "src", "cost-cluster"), per_job(ROOT / "src", "cost-single")
        print(
            f"Cost per job, {HOURS:g} h at the paper load: 64-GPU cluster {cluster:,.0f} instructions, "
            f"one-GPU engine {single:,.0f}: ratio {cluster / single:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
