"""Simulator speed: simulated jobs per second per policy, and the cost ratio to a bare heapq loop.

Workload: 24 h traces at a constant 0.5 jobs/min (~720 jobs), one core (CPU time of this process, so other
load on the machine counts less). Prints a table: jobs/s on
configuration 3, jobs/s averaged over configurations 1-12, and per-job cost / bare-heap per-job cost, where
the bare loop pushes and pops two events (arrival, completion) per job with ``heapq``.

Run: ``python benchmarks/bench_simulator.py [--traces N]``.
"""

from __future__ import annotations

import argparse
import heapq
import time

import numpy as np

from wattsched.mig import POLICIES, simulate
from wattsched.workload.job import Job, JobKind, Scaling

RATE_PER_MIN = 0.5
HORIZON_S = 86_400.0


def _local_trace(seed: int) -> list[Job]:
    """Fallback generator: Poisson arrivals, exp(180 s) / U(600, 2400) s on 1g, linear, slack U(1, 1.5)."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    while True:
        t += rng.exponential(60.0 / RATE_PER_MIN)
        if t >= HORIZON_S:
            return jobs
        inference = rng.random() < 0.8
        base = rng.exponential(180.0) if inference else rng.uniform(600.0, 2400.0)
        durations = (*(base / g for g in (1, 2, 3, 4, 7)), base / 7 / 1.06)
        deadline = t + rng.uniform(1.0, 1.5) * durations[4]
        kind = JobKind.INFERENCE if inference else JobKind.TRAINING
        jobs.append(Job(f"j{len(jobs):06d}", t, deadline, kind, Scaling.LINEAR, durations))  # type: ignore[arg-type]


def make_traces(count: int) -> list[list[Job]]:
    try:
        from wattsched.workload.generators import WorkloadSpec, generate_jobs
    except ImportError:
        return [_local_trace(seed) for seed in range(count)]
    spec = WorkloadSpec(rate_per_min=RATE_PER_MIN, hours=HORIZON_S / 3600.0)
    return [generate_jobs(spec, seed) for seed in range(count)]


def bare_heap_seconds_per_job(traces: list[list[Job]], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        n = 0
        for jobs in traces:
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
            n += len(jobs)
        best = min(best, (time.process_time() - start) / n)
    return best


def jobs_per_second(traces: list[list[Job]], configuration: int, policy: str, repeats: int = 3) -> float:
    n = sum(len(jobs) for jobs in traces)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for jobs in traces:
            simulate(jobs, configuration, policy)
        best = min(best, time.process_time() - start)
    return n / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=4, help="24 h traces per measurement")
    args = parser.parse_args()
    traces = make_traces(args.traces)
    n_jobs = sum(len(t) for t in traces)
    bare = bare_heap_seconds_per_job(traces)
    print(f"{args.traces} traces, {n_jobs} jobs, rate {RATE_PER_MIN}/min over 24 h; "
          f"bare heapq loop: {bare * 1e6:.2f} us/job ({1 / bare:,.0f} jobs/s)")
    print(f"{'policy':<20}{'cfg 3 jobs/s':>14}{'ratio':>8}{'mean cfg 1-12 jobs/s':>22}{'ratio':>8}")
    for policy in POLICIES.available():
        on_3 = jobs_per_second(traces, 3, policy)
        per_config = [jobs_per_second(traces[:2], c, policy, repeats=1) for c in range(1, 13)]
        mean_cost = float(np.mean([1.0 / r for r in per_config]))
        mean_rate = 1 / mean_cost
        print(f"{policy:<20}{on_3:>14,.0f}{1 / on_3 / bare:>8.1f}{mean_rate:>22,.0f}{mean_cost / bare:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
