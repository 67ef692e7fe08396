"""Start-up of the ``wattsched`` command: this tree side by side with a baseline commit.

Two commands, each run as a fresh process (``python -c 'from wattsched.cli import main; ...' ARGS`` with the
tree's ``src`` first on ``PYTHONPATH``), timed from spawn to exit:

* ``help``: ``wattsched --help``;
* ``mig run``: ``wattsched mig run --config 3 --policy edf-fs --profile alibaba-day --seed 1 --json``
  (the README tour's workload options; the whole command, the simulation of the day included).

Also shown: the interpreter's floor (``python -c pass``) and ``python -c 'import numpy'`` (the simulator
needs numpy). Trees alternate, run after run, so that drift of the (shared) machine hits both alike; the
table shows the min and median of ``--runs`` runs per command and tree, with the load average, and the last
line is one JSON object. The baseline (default ``e80848b``, before the start-up work) is checked out into a
temporary git worktree.

Run: ``python benchmarks/bench_startup.py [--runs N] [--baseline COMMIT | --no-baseline]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The target: both commands in at most this many seconds.
TARGET_S = 0.4
COMMANDS: dict[str, list[str]] = {
    "help": ["--help"],
    "mig run": [
        "mig",
        "run",
        "--config",
        "3",
        "--policy",
        "edf-fs",
        "--profile",
        "alibaba-day",
        "--seed",
        "1",
        "--json",
    ],
}
FLOORS: dict[str, str] = {"python -c pass": "pass", "import numpy": "import numpy"}
ENTRY = "import sys; from wattsched.cli import main; sys.exit(main(sys.argv[1:]))"


def timed(code: str, argv: list[str], src: Path | None) -> float:
    """Seconds from spawn to exit of ``python -c code argv`` with ``src`` first on the path."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command and tree (default 15)")
    parser.add_argument("--baseline", default="e80848b", help="commit to compare with (default e80848b)")
    parser.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    args = parser.parse_args()
    trees: dict[str, Path] = {"this tree": ROOT / "src"}
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "baseline"
        if not args.no_baseline:
            git = ["git", "-C", str(ROOT), "worktree"]
            subprocess.run([*git, "add", "--detach", "-q", str(folder), args.baseline], check=True)
            trees[f"baseline {args.baseline}"] = folder / "src"
        try:
            for src in trees.values():  # warm the byte-code caches
                for argv in COMMANDS.values():
                    timed(ENTRY, argv, src)
            for _ in range(args.runs):
                for label, code in FLOORS.items():
                    samples.setdefault(("python", label), []).append(timed(code, [], None))
                for command, argv in COMMANDS.items():
                    for name, src in trees.items():
                        samples.setdefault((name, command), []).append(timed(ENTRY, argv, src))
        finally:
            if not args.no_baseline:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False
                )
    load = os.getloadavg()
    print(
        f"{args.runs} runs each, trees alternating; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        f"on {os.cpu_count()} CPUs; target <= {TARGET_S} s"
    )
    print(f"{'command':<16}{'tree':<22}{'min s':>8}{'median s':>10}{'vs baseline':>13}")
    summary: dict[str, dict[str, float]] = {}
    for (name, command), times in samples.items():
        row = {"min_s": min(times), "median_s": statistics.median(times)}
        summary[f"{command} | {name}"] = row
        ratio = ""
        base = [k for k in samples if k[1] == command and k[0].startswith("baseline")]
        if name == "this tree" and base:
            ratio = f"{statistics.median(samples[base[0]]) / row['median_s']:.1f}x faster"
        print(f"{command:<16}{name:<22}{row['min_s']:>8.3f}{row['median_s']:>10.3f}{ratio:>13}")
    met = all(summary[f"{c} | this tree"]["median_s"] <= TARGET_S for c in COMMANDS)
    print(
        json.dumps(
            {
                "bench": "startup",
                "runs": args.runs,
                "load_avg_1m": round(load[0], 2),
                "target_s": TARGET_S,
                "target_met": met,
                "results": {k: {m: round(v, 4) for m, v in r.items()} for k, r in summary.items()},
            },
            sort_keys=True,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
