"""Wall time of the commands whose durations the README and the docs state: measured, not remembered.

    python benchmarks/bench_timings.py [--only tour train reproduce] [--out FILE.json]

* ``tour``: the README's five-minute tour without its DQN lines (the commands of its first code block that do
  not train or evaluate), in a fresh temporary folder;
* ``train``: ``wattsched mig train --scale quick --seed 0 --workers 2`` (the tour's DQN line);
* ``reproduce``: ``wattsched reproduce --scale quick`` into an empty folder (long: minutes).

Each is run once, in a subprocess, with the interpreter running this script, **cold**: with an empty cache
folder of its own (``WATTSCHED_CACHE_DIR`` in a temporary folder, so no trained network or result is reused;
the networks shipped with the package are used, as on a fresh clone; ``--no-shipped`` turns them off too). The
result is printed as one line per command and, with ``--out``, written as JSON with the date, the machine (CPU
count, platform, Python, the 1-minute load before and after) and the commit as metadata. Times depend on the
machine and on what else runs on it: state both with a figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WATTSCHED = [sys.executable, "-m", "wattsched"]


def tour_commands() -> list[str]:
    """The README tour's shell lines (the first ```bash block after '## A five-minute tour'), without the
    environment set-up, the DQN lines and comments; loops are kept as one line each."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## A five-minute tour", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    if block is None:
        raise SystemExit("README.md: no bash block in the tour")
    lines, pending = [], ""
    for raw in block.group(1).splitlines():
        line = re.split(r"\s+#\s", raw)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.startswith(("make venv", "mkdir", "cd ")) or " mig train" in line or " mig evaluate" in line:
            continue
        lines.append(line.strip())
    joined, loop = [], ""
    for line in lines:  # a `for ...; do` ... `done` loop becomes one command
        if loop or line.startswith("for "):
            loop += line + ("; " if not line.endswith("do") else " ")
            if line == "done":
                joined.append(loop.rstrip("; "))
                loop = ""
            continue
        joined.append(line)
    return joined


def _run(command: str, cwd: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), WATTSCHED_CACHE_DIR=str(cwd.parent / "cache"))
    shell = command.replace("wattsched ", " ".join(shlex.quote(a) for a in WATTSCHED) + " ")
    start = time.perf_counter()
    done = subprocess.run(["bash", "-c", shell], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {command}\n{done.stderr[-2000:]}")
    return took


def measure(which: list[str]) -> dict[str, object]:
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="wattsched-timings-") as folder:
        work = Path(folder) / "scratch"
        work.mkdir()
        (Path(folder) / "examples").symlink_to(REPO / "examples")
        if "tour" in which:
            steps = [(command, _run(command, work)) for command in tour_commands()]
            total = sum(t for _, t in steps)
            results["tour"] = {"total_s": total, "steps": [{"command": c, "s": t} for c, t in steps]}
            print(f"tour (without the DQN lines): {total:.1f} s in {len(steps)} commands")
        if "train" in which:
            command = "wattsched mig train --scale quick --seed 0 --out dqn --workers 2"
            took = _run(command, work)
            results["train"] = {"command": command, "s": took}
            print(f"{command}: {took / 60:.1f} min")
        if "reproduce" in which:
            command = "wattsched reproduce --scale quick --out results"
            took = _run(command, work)
            results["reproduce"] = {"command": command, "s": took}
            print(f"{command}: {took / 60:.1f} min")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", nargs="+", choices=("tour", "train", "reproduce"), default=["tour", "train"]
    )
    parser.add_argument("--out", type=Path, help="write the timings as JSON here")
    parser.add_argument("--no-shipped", action="store_true", help="train every DQN, as without shipped ones")
    args = parser.parse_args()
    if args.no_shipped:
        os.environ["WATTSCHED_SHIPPED_NETWORKS"] = "0"
    load_before = os.getloadavg()[0]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "commit": commit.stdout.strip() or None,
    }
    results = measure(args.only)
    meta["load_1min"] = {"before": load_before, "after": os.getloadavg()[0]}
    meta["shipped_networks"] = not args.no_shipped
    if args.out:
        args.out.write_text(json.dumps({**meta, **results}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
