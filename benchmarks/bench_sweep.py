"""One `wattsched sweep` against a shell loop of `wattsched mig run` calls (a loop of 13
configurations once took 28 s where the same 65 runs take 2.1 s from Python).

    python benchmarks/bench_sweep.py                  # 13 configurations x 5 policies, one 24 h day, seed 1
    python benchmarks/bench_sweep.py --loop-runs 65   # time every CLI call of the loop, not a sample

The sweep runs all 65 cells (13 configurations of the A100-40GB incl. no-mig × 5 policies) in one process
(``--workers 1``, like the loop) and on 2 workers, then once more into the same folder (every row reused).
The loop is timed over ``--loop-runs`` of the 65 ``mig run --json`` calls and scaled to 65 (said so in
the output). Prints wall times and the load average (the machine may be shared) and writes them as JSON to
``benchmarks/out/bench_sweep.json``. The sweep's rows are checked against the loop's JSON (same energies).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

POLICIES = ("edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf")
CONFIGURATIONS: tuple[int | str, ...] = (*range(1, 13), "no-mig")
SWEEP = """gpus = ["a100-40gb"]
configurations = [{configurations}]
policies = [{policies}]
seeds = [1]
[workload]
profile = "alibaba-day"
hours = 24
"""


def _cli() -> list[str]:
    return [str(Path(sys.executable).with_name("wattsched"))]


def _timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--loop-runs", type=int, default=13, help="mig run calls to time (1..65, default 13)")
    args = parser.parse_args()
    if not 1 <= args.loop_runs <= 65:
        parser.error("--loop-runs must be in [1, 65]")
    folder = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    sweep_file = folder / "sweep.toml"
    sweep_file.write_text(
        SWEEP.format(
            configurations=", ".join(json.dumps(c) for c in CONFIGURATIONS),
            policies=", ".join(json.dumps(p) for p in POLICIES),
        )
    )
    timings: dict[str, float] = {}
    for name, extra in (("sweep_1_worker_s", ["--workers", "1"]), ("sweep_2_workers_s", ["--workers", "2"])):
        timings[name], _ = _timed([*_cli(), "sweep", str(sweep_file), "--out", str(folder / name), *extra])
    timings["sweep_rerun_all_reused_s"], _ = _timed(
        [*_cli(), "sweep", str(sweep_file), "--out", str(folder / "sweep_2_workers_s")]
    )
    runs = pd.read_parquet(folder / "sweep_1_worker_s" / "runs.parquet").set_index(
        ["configuration", "policy"]
    )
    pairs = [(c, p) for c in CONFIGURATIONS for p in POLICIES][: args.loop_runs]
    loop_s = 0.0
    for configuration, policy in pairs:
        wall_s, out = _timed(
            [
                *_cli(),
                "mig",
                "run",
                "--config",
                str(configuration),
                "--policy",
                policy,
                "--profile",
                "alibaba-day",
                "--seed",
                "1",
                "--json",
            ]
        )
        loop_s += wall_s
        single = json.loads(out)
        assert abs(single["energy_j"] - runs.loc[(str(configuration), policy), "energy_j"]) < 1e-6, (
            configuration,
            policy,
        )
    timings["loop_measured_s"] = loop_s
    timings["loop_65_runs_s"] = loop_s * 65 / len(pairs)
    result = {
        "runs": 65,
        "loop_runs_timed": len(pairs),
        **{k: round(v, 2) for k, v in timings.items()},
        "cores": os.cpu_count(),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }
    for key, value in result.items():
        print(f"{key:28s} {value}")
    if len(pairs) < 65:
        print(f"(loop_65_runs_s scales {len(pairs)} timed calls to 65)")
    out_dir = Path(__file__).resolve().parent / "out"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "bench_sweep.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
