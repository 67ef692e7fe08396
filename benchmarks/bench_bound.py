"""The lower bounds (wattsched.mig.bound): their cost and how far P1's methods are above them.

For held-out days of the Table III stream (seed 2025) at each preset: the programme's size and solve time at
each resolution, and the gap of No-MIG, Static (configuration 3) and Day-Night to the energy bound and to the
ET bound (``a`` from the pilot runs, as Table III's bound cells use it). Prints one table; nothing is timed
inside the test suite.

    .venv/bin/python benchmarks/bench_bound.py [--days 3] [--resolutions 3600 900]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from wattsched.experiments.presets import get_preset
from wattsched.experiments.protocol import Setting
from wattsched.hardware.catalogue import load_gpu
from wattsched.metrics import et_values
from wattsched.mig.bound import lower_bound
from wattsched.mig.partition.base import PARTITIONERS
from wattsched.mig.partition.evaluate import DayStream, day_seed
from wattsched.mig.partition.runner import run_day
from wattsched.workload.generators import WorkloadSpec, generate_jobs

METHODS = (("no-mig", {}), ("static", {"configuration": 3}), ("day-night", {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--resolutions", type=float, nargs="+", default=[3600.0, 900.0])
    parser.add_argument("--seed", type=int, default=2025)
    args = parser.parse_args()
    gpu = load_gpu(None)
    print(
        "preset  res_s  jobs  variables  energy_s  all_s  bound_kWh  ET_bound  "
        + "  ".join(f"{m}_E_gap {m}_ET_gap" for m, _ in METHODS)
    )
    for preset in ("literal", "paper"):
        spec = WorkloadSpec(profile="alibaba-day", rate_multiplier=get_preset(preset).rate_multiplier)
        a = Setting(args.seed, spec).pilot_coefficient()
        for resolution in args.resolutions:
            rows = []
            for day in range(args.days):
                jobs = generate_jobs(spec, day_seed(args.seed, DayStream.HELD_OUT, day))
                started = time.perf_counter()
                energy_only = lower_bound(jobs, gpu, spec.horizon_s, resolution_s=resolution, tardiness=False)
                energy_s = time.perf_counter() - started
                started = time.perf_counter()
                bound = lower_bound(jobs, gpu, spec.horizon_s, resolution_s=resolution, et_coefficient=a)
                all_s = time.perf_counter() - started
                assert bound.et is not None and energy_only.energy_j == bound.energy_j
                gaps = []
                for name, options in METHODS:
                    run = run_day(jobs, PARTITIONERS.make(name, **options), horizon_s=spec.horizon_s).result
                    et = float(et_values([run.energy_j], [run.avg_tardiness_s], a)[0])
                    gaps += [run.energy_j / bound.energy_j - 1.0, et / bound.et - 1.0]
                rows.append(
                    [len(jobs), bound.variables, energy_s, all_s, bound.energy_j / 3.6e6, bound.et, *gaps]
                )
            mean = np.mean(np.array(rows, dtype=float), axis=0)
            cells = "  ".join(f"{v:+7.1%}" for v in mean[6:])
            print(
                f"{preset:7} {resolution:6.0f} {mean[0]:5.0f} {mean[1]:10.0f} {mean[2]:8.1f} {mean[3]:6.1f} "
                f"{mean[4]:9.3f} {mean[5]:9.3f}  {cells}",
                flush=True,
            )


if __name__ == "__main__":
    main()
