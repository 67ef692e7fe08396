"""Simulator speed: simulated jobs per second per policy, side by side with an older commit, and the cost
ratio
to a bare heapq loop.

Workload: 24 h traces at a constant 0.5 jobs/min (~720 jobs), CPU time of one process (other load on the
machine
counts less). For each policy: jobs/s on configuration 3 and averaged over every configuration, for this
working tree and for ``--baseline`` (default ``e80848b``, the last commit before the GPU catalogue and the
engine's typed view), measured in the same run, alternating the two trees ``--rounds`` times and keeping each
one's best, so that drift of the machine hits both alike. The baseline is checked out into a temporary git
worktree and run in a subprocess with its own ``src`` on ``PYTHONPATH``.

Each round times every policy and configuration ``--repeat`` times in one process and keeps the best (as
``timeit`` does), and the last line is the geometric mean of the 60 policy × configuration ratios: the figure
of the "within 10 %" guard.

Run: ``python benchmarks/bench_simulator.py [--traces N] [--rounds R] [--repeat K]
[--baseline COMMIT | --no-baseline]``.

``--backlog``: cost per job under a growing backlog instead. One overloaded GPU (4 jobs/min on configuration
3, far beyond what it serves) for 48 / 96 / 192 h (11.5k / 23k / 46k jobs; ``--backlog-hours`` to change),
EDF-FS and LLF, CPU seconds and µs per job for both trees, and the growth of the cost per job at each
doubling (1.0: O(1) per job; the baseline's sorted-list inserts and deletes grow with the queue).
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RATE_PER_MIN = 0.5
HORIZON_S = 86_400.0
POLICY_NAMES = ("edf-fs", "edf-ss", "edf-ss-restricted", "lalf", "llf")


def worker(traces: int, configurations: list[int], repeat: int = 1) -> dict[str, dict[str, float]]:
    """Measure in this process (whatever ``wattsched`` is importable): jobs/s per policy and configuration,
    the best of ``repeat`` timings of each (after one untimed pass over every trace)."""
    from wattsched.mig import simulate
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    spec = WorkloadSpec(rate_per_min=RATE_PER_MIN, hours=HORIZON_S / 3600.0)
    jobs_by_trace = [generate_jobs(spec, seed) for seed in range(traces)]
    n = sum(len(jobs) for jobs in jobs_by_trace)
    out: dict[str, dict[str, float]] = {}
    for jobs in jobs_by_trace:
        simulate(jobs, 1, POLICY_NAMES[0])  # warm-up: imports, caches
    for policy in POLICY_NAMES:
        out[policy] = {}
        for config in configurations:
            best_s = math.inf
            for _ in range(repeat):
                start = time.process_time()
                for jobs in jobs_by_trace:
                    simulate(jobs, config, policy)
                best_s = min(best_s, time.process_time() - start)
            out[policy][str(config)] = n / best_s
    bare_start = time.process_time()
    for jobs in jobs_by_trace:
        heap: list[tuple[float, int, int, int]] = []
        seq = 0
        for i, job in enumerate(jobs):
            seq += 1
            heapq.heappush(heap, (job.arrival_s, 1, seq, i))
        while heap:
            when, kind, _, i = heapq.heappop(heap)
            if kind == 1:
                seq += 1
                heapq.heappush(heap, (when + jobs[i].durations_s[4], 0, seq, i))
    out["bare-heap"] = {"all": n / (time.process_time() - bare_start)}
    return out


BACKLOG_RATE_PER_MIN = 4.0
BACKLOG_POLICIES = ("edf-fs", "llf")


def backlog_worker(hours: list[float]) -> dict[str, dict[str, list[float]]]:
    """Per policy and length: ``[jobs, CPU seconds]`` of one overloaded GPU (configuration 3)."""
    from wattsched.mig import simulate
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    out: dict[str, dict[str, list[float]]] = {policy: {} for policy in BACKLOG_POLICIES}
    for length in hours:
        jobs = generate_jobs(WorkloadSpec(rate_per_min=BACKLOG_RATE_PER_MIN, hours=length), 1)
        for policy in BACKLOG_POLICIES:
            start = time.process_time()
            simulate(jobs, 3, policy)
            out[policy][str(length)] = [len(jobs), time.process_time() - start]
    return out


def run_tree(
    src: Path, traces: int, configurations: list[int], backlog: list[float] | None = None, repeat: int = 1
) -> Any:
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [
        sys.executable,
        __file__,
        "--worker",
        "--traces",
        str(traces),
        "--repeat",
        str(repeat),
        "--configurations",
        ",".join(map(str, configurations)),
    ]
    if backlog is not None:
        command += ["--backlog", "--backlog-hours", ",".join(map(str, backlog))]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def print_backlog(results: dict[str, dict[str, dict[str, list[float]]]], hours: list[float]) -> None:
    print(
        f"One overloaded GPU: {BACKLOG_RATE_PER_MIN} jobs/min on configuration 3 (CPU seconds; µs per job; "
        "growth of the cost per job at each doubling)"
    )
    print(f"{'policy':<8}{'tree':<20}" + "".join(f"{f'{h:g} h':>26}" for h in hours))
    for policy in BACKLOG_POLICIES:
        for name, result in results.items():
            cells = []
            previous = None
            for h in hours:
                jobs, seconds = result[policy][str(h)]
                per_job = seconds / jobs
                growth = f" x{per_job / previous:.2f}" if previous else ""
                cells.append(f"{int(jobs):,} {seconds:.2f} s {per_job * 1e6:.0f} µs{growth}")
                previous = per_job
            print(f"{policy:<8}{name:<20}" + "".join(f"{c:>26}" for c in cells))


def best(samples: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {k: {c: max(s[k][c] for s in samples) for c in samples[0][k]} for k in samples[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=4, help="24 h traces per measurement (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per tree (default 3)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="timings of each policy and configuration per round, best kept (default 3)",
    )
    parser.add_argument("--baseline", default="e80848b", help="commit to compare with (default e80848b)")
    parser.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--configurations", default="", help=argparse.SUPPRESS)
    parser.add_argument("--backlog", action="store_true", help="cost per job under a growing backlog")
    parser.add_argument("--backlog-hours", default="48,96,192", help="lengths in hours (default 48,96,192)")
    args = parser.parse_args()
    configurations = [int(c) for c in args.configurations.split(",") if c] or list(range(1, 13))
    backlog = [float(h) for h in args.backlog_hours.split(",")] if args.backlog else None
    if args.worker:
        if backlog is not None:
            print(json.dumps(backlog_worker(backlog)))
        else:
            print(json.dumps(worker(args.traces, configurations, args.repeat)))
        return 0
    trees = {"this tree": ROOT / "src"}
    with tempfile.TemporaryDirectory() as scratch:
        if not args.no_baseline:
            folder = Path(scratch) / "baseline"
            git = ["git", "-C", str(ROOT), "worktree"]
            subprocess.run([*git, "add", "--detach", "-q", str(folder), args.baseline], check=True)
            trees[f"baseline {args.baseline}"] = folder / "src"
        try:
            samples: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
            if backlog is not None:
                print_backlog({name: run_tree(src, 0, [], backlog) for name, src in trees.items()}, backlog)
                return 0
            for _ in range(args.rounds):
                for name, src in trees.items():
                    samples[name].append(run_tree(src, args.traces, configurations, repeat=args.repeat))
        finally:
            if not args.no_baseline:
                git = ["git", "-C", str(ROOT), "worktree"]
                subprocess.run([*git, "remove", "--force", str(folder)], check=False)
    results = {name: best(s) for name, s in samples.items()}
    mine = results["this tree"]
    print(
        f"{args.traces} traces at {RATE_PER_MIN}/min over 24 h, best of {args.rounds} alternating rounds x "
        f"{args.repeat} timings; bare heapq loop: {mine['bare-heap']['all']:,.0f} jobs/s"
    )
    header = (
        f"{'policy':<20}{'tree':<20}{'cfg 3 jobs/s':>14}{'mean all cfgs jobs/s':>22}"
        f"{'vs baseline (cfg 3 / mean)':>28}"
    )
    print(header)
    for policy in POLICY_NAMES:
        for name, result in results.items():
            on_3 = result[policy]["3"]
            mean_rate = len(configurations) / sum(1 / r for r in result[policy].values())
            ratio = ""
            if name == "this tree" and len(results) > 1:
                base = next(r for n, r in results.items() if n != "this tree")[policy]
                base_mean = len(configurations) / sum(1 / r for r in base.values())
                ratio = f"{on_3 / base['3']:.3f} / {mean_rate / base_mean:.3f}"
            print(f"{policy:<20}{name:<20}{on_3:>14,.0f}{mean_rate:>22,.0f}{ratio:>28}")
    if len(results) > 1:
        base = next(r for n, r in results.items() if n != "this tree")
        ratios = [mine[p][c] / base[p][c] for p in POLICY_NAMES for c in mine[p]]
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(
            f"geometric mean of the {len(ratios)} policy x configuration ratios: {geo:.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
