"""Golden-file check that a change to the MIG simulator leaves every result bit-for-bit identical.

    python benchmarks/check_sim_equivalence.py --write   # record the golden file from the current code
    python benchmarks/check_sim_equivalence.py           # compare the current code with it (exit 1 on a diff)

Covers, for ``--queues`` queues (seeds 0..N-1, cycling through the Table II conditions; the first
``--full-day`` of them 24 h long, the rest ``--hours`` long): every configuration 1-12 and ``no-mig`` × every
registered policy with ``record_jobs=True`` (all :class:`SimResult` fields and every :class:`JobRecord`). Plus
stepped runs that repartition every ``REPARTITION_EVERY``-th decision epoch in both repartition modes, with
snapshots along the way and a look-ahead fork run to the end (the RL code path).

Floats are compared through ``repr`` (exact, and NaN equals NaN). The golden file lives under
``benchmarks/out/`` (gitignored): it is a regression fixture of the local code, never a test expectation.

``--legacy`` compares with a golden file written by the code before the GPU catalogue (commit e80848b): slices
were then named by their 1-based compute slot (now: the NVML memory-slot start, one less on every A100-40GB
configuration), and snapshots had no job kind, scaling or GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from wattsched.hardware.catalogue import load_gpu
from wattsched.mig import POLICIES, JobRecord, JobView, SimSnapshot
from wattsched.mig.simulator import MigSimulation, simulate
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job

GOLDEN = Path(__file__).resolve().parent / "out" / "sim_golden.pkl"
#: (rate per minute, inference share): the four Table II conditions.
CONDITIONS = ((0.5, 0.8), (0.1, 0.8), (0.75, 0.8), (0.5, 0.2))
CONFIGURATIONS: tuple[int | str, ...] = (*load_gpu(None).configuration_ids, "no-mig")
REPARTITION_EVERY = 50
LEGACY = False


def canonical(value: Any) -> Any:
    """A comparable, exact form: floats as ``repr``, dataclasses and sequences as tuples."""
    if LEGACY and isinstance(value, JobRecord):
        slices = tuple((a, b, c, slot + 1) for a, b, c, slot in value.slices)
        fields = [getattr(value, f.name) for f in dataclasses.fields(value)]
        return (*(canonical(v) for v in fields[:-1]), canonical(slices))
    if LEGACY and isinstance(value, SimSnapshot):
        return tuple(
            canonical(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "gpu" and f.compare
        )
    if LEGACY and isinstance(value, JobView):
        skip = ("kind", "scaling")
        kept = [f.name for f in dataclasses.fields(value) if f.name not in skip]
        return tuple(canonical(getattr(value, name)) for name in kept)
    if isinstance(value, float):
        return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Fields left out of equality (a snapshot's fork_arrived callable) are left out here too.
        return tuple(canonical(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare)
    if isinstance(value, dict):
        return tuple((k, canonical(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(canonical(v) for v in value)
    return value


def queue(seed: int, hours: float) -> tuple[list[Job], float]:
    rate, share = CONDITIONS[seed % len(CONDITIONS)]
    spec = WorkloadSpec(rate_per_min=rate, inference_share=share, hours=hours)
    return generate_jobs(spec, seed), spec.horizon_s


def fixed_runs(queues: int, full_day: int, hours: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for seed in range(queues):
        jobs, horizon = queue(seed, 24.0 if seed < full_day else hours)
        for policy in POLICIES.available():
            for config in CONFIGURATIONS:
                result = simulate(jobs, config, policy, horizon_s=horizon, record_jobs=True)
                key = f"fixed/{seed}/{policy}/{config}"
                out[key] = (canonical(result.to_dict()), canonical(result.records))
    return out


def stepped_run(jobs: list[Job], horizon: float, policy: str, mode: str) -> Any:
    sim = MigSimulation(jobs, 1, policy, horizon_s=horizon, record_jobs=True, repartition_mode=mode)  # type: ignore[arg-type]
    trail: list[Any] = []
    epoch = 0
    switches = 0
    fork_result = None
    while sim.advance():
        epoch += 1
        if epoch % REPARTITION_EVERY == 0 and not sim.in_blackout:
            switches += 1
            target = CONFIGURATIONS[switches % len(CONFIGURATIONS)]
            trail.append((epoch, sim.repartition(target), canonical(sim.snapshot())))
            if switches == 3:
                fork_result = sim.fork().run()
    result = sim.result()
    return (
        canonical(trail),
        canonical(result.to_dict()),
        canonical(result.records),
        canonical(fork_result.to_dict() if fork_result else None),
        canonical(fork_result.records if fork_result else None),
    )


def stepped_runs(queues: int, hours: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for seed in range(queues):
        jobs, horizon = queue(seed, hours)
        for policy in POLICIES.available():
            for mode in ("blackout", "deadline_shift"):
                out[f"stepped/{seed}/{policy}/{mode}"] = stepped_run(jobs, horizon, policy, mode)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="record the golden file from the current code")
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument(
        "--full-day", type=int, default=8, help="how many of the queues last 24 h (keep as recorded)"
    )
    parser.add_argument("--hours", type=float, default=6.0, help="length of the other queues")
    parser.add_argument("--stepped-queues", type=int, default=8)
    parser.add_argument("--golden", type=Path, default=GOLDEN)
    parser.add_argument("--legacy", action="store_true", help="compare with a golden file of commit e80848b")
    args = parser.parse_args()
    global LEGACY
    LEGACY = args.legacy
    start = time.perf_counter()
    results = fixed_runs(args.queues, args.full_day, args.hours)
    results.update(stepped_runs(args.stepped_queues, 24.0))
    elapsed = time.perf_counter() - start
    if args.write:
        args.golden.parent.mkdir(parents=True, exist_ok=True)
        args.golden.write_bytes(pickle.dumps(results))
        print(f"wrote {len(results)} runs to {args.golden} in {elapsed:.1f} s")
        return 0
    golden = pickle.loads(args.golden.read_bytes())
    missing = sorted(results.keys() - golden.keys())
    if missing:  # a smaller --queues / --stepped-queues checks a subset of the golden runs
        print(f"not in the golden file (record it with the same options): {missing[:5]}")
        return 1
    bad = [key for key in results if golden[key] != results[key]]
    for key in bad[:10]:
        print(f"DIFFERS: {key}")
    print(f"{len(results) - len(bad)}/{len(results)} runs identical ({elapsed:.1f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
