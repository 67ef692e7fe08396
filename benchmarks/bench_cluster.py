"""Cluster engine speed: the Alibaba 2023 replay, cost per job against the one-GPU engine, jobs per
second from 1 to 4,096 GPUs (a plot), and a synthetic month on 1,024 GPUs at the ``paper`` load.

Every figure is CPU time of this process (``time.process_time``), printed as jobs per second and as ratios to
the stated targets; wall time is printed beside it (the machine may be shared).

* ``--alibaba``: ``cluster import`` of the pod and node lists (8,152 pods, 6,212 GPUs on 1,213 servers, every
  model a declared A100-40GB fallback) and the whole replay (~150 days): best-fit, static configuration 3,
  restricted EDF-SS, power states on. Target: import + run ≤ 60 s.
* ``--cost``: one paper-load day on 64 GPUs (8 × 8, first-fit, static 3, restricted EDF-SS, always on)
  against the same jobs per GPU simulated by the one-GPU engine (``simulate`` of 64 one-GPU days with the
  same seeds' per-GPU load). Target: cost per job ≤ 2× the one-GPU engine's. Best of ``--rounds``.
* ``--scaling``: jobs/s for 1, 4, 16, 64, 256, 1,024 and 4,096 GPUs at the paper load, about
  ``--jobs-per-point`` jobs each (a window of the day long enough for that many), saved as
  ``benchmarks/out/cluster_scaling.png`` and ``.json``.
* ``--month``: 1,024 GPUs (128 × 8) for ``--days`` days (default 30, ~16 M jobs) of the paper preset,
  streamed day by day (:func:`wattsched.cluster.stream_jobs`), finished jobs compacted, per-job outcomes not
  kept. Target: ≤ 15 min. Generation is included.

Run: ``python benchmarks/bench_cluster.py [--alibaba] [--cost] [--scaling] [--month [--days D]]`` (no
section flag: the first three).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from wattsched.cluster import (
    ClusterOptions,
    ClusterSimulation,
    ClusterSpec,
    PowerStates,
    cluster_spec,
    preset_spec,
    stream_jobs,
)
from wattsched.mig import simulate
from wattsched.workload.generators import generate_jobs

OUT = Path(__file__).resolve().parent / "out"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"
PAPER_JOBS_PER_GPU_HOUR = 2.5 * 207.0 / 24.0  # the paper preset: ~516 jobs per GPU-day


def _timed(work: Any) -> tuple[Any, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    value = work()
    return value, time.process_time() - cpu, time.perf_counter() - wall


def alibaba() -> dict[str, float]:
    from wattsched.cluster.nodes import read_node_list
    from wattsched.workload.adapters import ImportOptions, import_trace

    def replay() -> Any:
        nodes = read_node_list(SHARED / "openb_node_list_all_node.csv")
        jobs, report = import_trace("alibaba-2023", SHARED / "openb_pod_list_default.csv", ImportOptions())
        options = ClusterOptions(placement="best-fit", power_states=PowerStates(enabled=True))
        return ClusterSimulation(nodes.spec, options, horizon_s=report.horizon_s).run(jobs)

    result, cpu, wall = _timed(replay)
    print(
        f"Alibaba 2023 replay: {result.jobs:,} jobs on {result.gpus:,} GPUs ({result.servers:,} servers), "
        f"{result.end_s / 86_400:.0f} days: {cpu:.1f} s CPU ({wall:.1f} s wall) including the import; "
        f"target 60 s: {cpu / 60:.2f} of it; {result.jobs / cpu:,.0f} jobs/s"
    )
    return {"jobs": result.jobs, "gpus": result.gpus, "cpu_s": cpu, "wall_s": wall}


def cost(rounds: int) -> dict[str, float]:
    gpus = 64
    jobs = generate_jobs(cluster_spec(preset_spec("paper"), gpus), 1)
    singles = [generate_jobs(cluster_spec(preset_spec("paper"), 1), seed) for seed in range(gpus)]
    one_gpu_jobs = sum(len(day) for day in singles)
    best_cluster, best_single = float("inf"), float("inf")
    for _ in range(rounds):

        def run_cluster() -> Any:
            spec = ClusterSpec.homogeneous(8, 8)
            return ClusterSimulation(spec, ClusterOptions(keep_outcomes=False), horizon_s=86_400.0).run(jobs)

        _, cpu, _ = _timed(run_cluster)
        best_cluster = min(best_cluster, cpu / len(jobs))

        def run_singles() -> None:
            for day in singles:
                simulate(day, 3, "edf-ss-restricted", horizon_s=86_400.0)

        _, cpu, _ = _timed(run_singles)
        best_single = min(best_single, cpu / one_gpu_jobs)
    ratio = best_cluster / best_single
    print(
        f"Cost per job, paper load, one day: 64-GPU cluster {best_cluster * 1e6:.1f} µs "
        f"({1 / best_cluster:,.0f} jobs/s) vs one-GPU engine {best_single * 1e6:.1f} µs "
        f"({1 / best_single:,.0f} jobs/s): ratio {ratio:.2f} (target ≤ 2)"
    )
    return {"cluster_us": best_cluster * 1e6, "one_gpu_us": best_single * 1e6, "ratio": ratio}


def scaling(jobs_per_point: int) -> dict[str, list[float]]:
    sizes = [1, 4, 16, 64, 256, 1024, 4096]
    rates: list[float] = []
    counts: list[int] = []
    builds: list[float] = []
    for gpus in sizes:
        hours = min(24.0, max(0.5, jobs_per_point / (PAPER_JOBS_PER_GPU_HOUR * gpus)))
        jobs = generate_jobs(cluster_spec(preset_spec("paper", hours), gpus), 1)
        shape = ClusterSpec.homogeneous(max(gpus // 8, 1), min(gpus, 8))
        simulation, build, _ = _timed(
            lambda shape=shape, hours=hours: ClusterSimulation(
                shape, ClusterOptions(keep_outcomes=False), horizon_s=hours * 3600.0
            )
        )
        _, cpu, wall = _timed(lambda jobs=jobs, simulation=simulation: simulation.run(jobs))
        rates.append(len(jobs) / cpu)
        counts.append(len(jobs))
        builds.append(build)
        print(
            f"  {gpus:>5} GPUs: {len(jobs):>8,} jobs over {hours:5.2f} h: {cpu:6.2f} s CPU "
            f"({wall:.1f} s wall), {len(jobs) / cpu:>8,.0f} jobs/s; building the cluster {build:.2f} s"
        )
    data = {
        "gpus": [float(g) for g in sizes],
        "jobs": [float(c) for c in counts],
        "jobs_per_s": rates,
        "build_s": builds,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "cluster_scaling.json").write_text(json.dumps(data, indent=1) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5.5, 3.5))
    axes.plot(sizes, rates, marker="o")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("GPUs (paper load per GPU)")
    axes.set_ylabel("simulated jobs per CPU second")
    axes.set_ylim(bottom=0)
    axes.set_title("Cluster engine throughput against cluster size")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(OUT / "cluster_scaling.png", dpi=120)
    print(f"  plot: {OUT / 'cluster_scaling.png'}")
    return data


def month(days: float) -> dict[str, float]:
    gpus = 1024
    per_gpu = preset_spec("paper", hours=24.0 * days)

    def run() -> Any:
        options = ClusterOptions(keep_outcomes=False)
        simulation = ClusterSimulation(ClusterSpec.homogeneous(128, 8), options, horizon_s=per_gpu.horizon_s)
        return simulation.run(stream_jobs(per_gpu, gpus, seed=1), progress=_progress)

    result, cpu, wall = _timed(run)
    scale = 30.0 / days
    print(
        f"\n{days:g} days on 1,024 GPUs, paper load: {result.jobs:,} jobs in {cpu:.0f} s CPU "
        f"({wall:.0f} s wall), "
        f"{result.jobs / cpu:,.0f} jobs/s; a 30-day month: {cpu * scale / 60:.1f} min CPU (target 15 min: "
        f"{cpu * scale / 900:.2f} of it)"
    )
    import resource

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak memory {peak_mb:,.0f} MB")
    return {"days": days, "jobs": result.jobs, "cpu_s": cpu, "wall_s": wall, "peak_mb": peak_mb}


def _progress(done: int) -> None:
    if done % (1 << 20) < 4096:
        print(f"  ... {done:,} jobs placed", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alibaba", action="store_true")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--month", action="store_true")
    parser.add_argument("--days", type=float, default=30.0, help="month length in days (default 30)")
    parser.add_argument("--rounds", type=int, default=5, help="cost: best of this many rounds (5)")
    parser.add_argument("--jobs-per-point", type=int, default=60_000, help="scaling: jobs per size (60,000)")
    args = parser.parse_args()
    chosen = [args.alibaba, args.cost, args.scaling, args.month]
    everything = not any(chosen)
    results: dict[str, Any] = {}
    if (args.alibaba or everything) and SHARED.is_dir():
        results["alibaba"] = alibaba()
    if args.cost or everything:
        results["cost"] = cost(args.rounds)
    if args.scaling or everything:
        print(
            "Jobs per second against cluster size (paper load per GPU; first-fit, static 3, "
            "restricted EDF-SS):"
        )
        results["scaling"] = scaling(args.jobs_per_point)
    if args.month:
        results["month"] = month(args.days)
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_cluster.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
