"""P2 like for like: the authors' simulator against ``wattsched`` in reproduction mode and against their CSVs.

Needs a checkout of GitHub ``HKBU-HPML/GPU-DVFS-Job-Schedule`` (measured at HEAD 7ae3c9c8; nothing of it is
copied here: this script imports it from ``--hkbu-code``). It runs their generator (``rand_gen``) and their
scheduler (``fast_offline`` / ``schedule``) in this process, with four changes that alter no decision:
Python's ``random`` and numpy's global generator are seeded before their generator (they never seed),
``job_json["app_name"] = "synthetic"`` is added (HEAD's ``sim_job`` reads it; ``rand_gen`` does not write
it), the job list is handed over in memory instead of their pickle path, and ``check_finished`` returns a set
(their ``not in`` on a list is O(n²) at 4,096 tasks). Each ``gpu.add_job`` call is recorded.

    python benchmarks/hkbu_crosscheck.py --hkbu-code DIR [--sets 10] [--json out.json]
        for task sets from their generator at full size (2048 GPUs): their code, ours with every rule of
        their code (``hkbu_configs``, initial grid of their code: 13 voltages at HEAD), the largest relative
        difference, and the means beside their published CSVs (csvs/*.csv of the checkout);
    python benchmarks/hkbu_crosscheck.py --hkbu-code DIR --export-fixture tests/dvfs/data
        writes the small task sets and reference outputs that tests/dvfs/test_hkbu_reproduction.py reads.

Their energies are in W·slot; ours in J with 60 s slots (J = 60 × W·slot). Printed energies are W·slot.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import io
import json
import logging
import math
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from wattsched.dvfs.cluster import account
from wattsched.dvfs.hkbu import hkbu_configs
from wattsched.dvfs.model import TaskModel, TaskSet
from wattsched.dvfs.offline import run_offline
from wattsched.dvfs.online import run_online
from wattsched.dvfs.tasks import write_tasks
from wattsched.hardware.dvfs import HkbuGrid

SLOT_S = 60.0
THEIR_ALGO = {"edl": "edf+spt", "edf-bf": "edf+bf", "edf-wf": "edf+wf", "lpt-ff": "lpt+ff", "bin": "edf+bin"}
#: The voltage grid of their initial solve at HEAD (``range(0, 13)``, the 2070 SUPER); 16 points at 8a0a2e0.
HEAD_GRID = HkbuGrid(0.5, 0.05, 1.1)


class Authors:
    """Their modules, imported from a checkout, with the harness changes of the module docstring."""

    def __init__(self, code_dir: Path) -> None:
        sys.path.insert(0, str(code_dir.resolve()))
        with contextlib.redirect_stdout(io.StringIO()):
            import cluster  # type: ignore[import-not-found]
            import job_master  # type: ignore[import-not-found]
        logging.getLogger().setLevel(logging.WARNING)  # their common.py logs every run at INFO
        self.cluster: ModuleType = cluster
        self.master: ModuleType = job_master
        self.records: dict[int, tuple[int, int, float, float, float, float]] = {}
        add_job = cluster.gpu.add_job
        records = self.records

        def recording_add_job(gpu: Any, job: Any, now: int) -> None:
            start = max(gpu.end_time, now)
            add_job(gpu, job, now)
            records[job.job_id] = (gpu.node_id, gpu.gpu_id, start, job.finish_time, job.t_hat, job.p_hat)

        cluster.gpu.add_job = recording_add_job
        check_finished = job_master.job_scheduler.check_finished
        job_master.job_scheduler.check_finished = lambda self: set(check_finished(self))

    def generate(self, kind: str, util: float, gpus: int, seed: int) -> list[dict[str, Any]]:
        """``rand_gen`` with ``NUM_GPUS = gpus``: ``int(gpus·U)`` tasks (online: + ``int(0.4·gpus)`` at 0)."""
        self.master.NUM_GPUS = gpus
        random.seed(seed)
        np.random.seed(seed)
        with contextlib.redirect_stdout(io.StringIO()):
            generator = self.master.job_generator(f"{kind}-{util}-synthetic")
            generator.rand_gen()
        jobs: list[dict[str, Any]] = generator.jobs
        for job in jobs:
            job["app_name"] = "synthetic"
        return jobs

    def run(self, jobs: list[dict[str, Any]], kind: str, algo: str, dvfs: bool, theta: float, l: int) -> dict:
        """One run of their scheduler on a 2048-GPU cluster of ``l`` GPUs per node."""
        self.records.clear()
        self.master.job_generator.load = lambda gen: setattr(gen, "jobs", copy.deepcopy(jobs))
        nodes = {"num_node": 2048 // l, "num_gpu": l, "gpu_mem": 8192, "cpu_mem": 16384}
        nodes |= {"node_idle_power": 0, "network_speed": 100}
        conf = f"{THEIR_ALGO[algo]}-{'on' if dvfs else 'off'}-{theta}"
        with contextlib.redirect_stdout(io.StringIO()):
            scheduler = self.master.job_scheduler(f"{kind}-1.0-synthetic", nodes, conf)
            if kind == "offline":
                scheduler.fast_offline(algo=THEIR_ALGO[algo], dvfs_on=dvfs, theta=theta)
            else:
                scheduler.schedule(algo=THEIR_ALGO[algo], dvfs_on=dvfs, theta=theta)
            run_e, idle_e, turn_on_e, total_e = scheduler.print_stat()
        turn_ons = round(turn_on_e / 200.0)
        return {"run": run_e, "idle": idle_e, "turn_on": turn_on_e, "total": total_e, "turn_ons": turn_ons}


def to_taskset(jobs: list[dict[str, Any]]) -> TaskSet:
    """Their job dicts in our units (slots × 60 s), ``deadline = arrival + t*/u`` as ``sim_job`` has it."""
    arrival = np.array([j["arrival"] for j in jobs], dtype=float)
    deadline = np.array([j["arrival"] + (j["t0"] + j["D"]) / j["utilization"] for j in jobs])
    model = TaskModel(
        np.array([j["power_basic"] for j in jobs]),
        np.array([j["gamma"] for j in jobs]),
        np.array([j["cg"] for j in jobs]),
        np.array([j["t0"] for j in jobs]) * SLOT_S,
        np.array([j["D"] for j in jobs]) * SLOT_S,
        np.array([j["delta"] for j in jobs]),
    )
    return TaskSet(tuple(j["job_name"] for j in jobs), arrival * SLOT_S, deadline * SLOT_S, model)


def run_ours(
    tasks: TaskSet,
    kind: str,
    algo: str,
    dvfs: bool,
    theta: float,
    l: int,
    grid: HkbuGrid,
    idle_w: float = 85.0,
) -> dict:
    cluster, config = hkbu_configs(2048, l, enabled=dvfs, theta=theta, grid=grid)
    runner = run_offline if kind == "offline" else run_online
    result = runner(tasks, algo, cluster, config, keep_schedule=True)
    assert result.schedule is not None
    repriced = account(result.schedule, tasks.deadline_s, replace(cluster, idle_power_w=idle_w), 0, False)
    variant = math.nan
    if kind == "online":  # their rules with the T = 0 batch packed and our deadline-keeping Alg. 1, at 37 W
        packed = replace(cluster, initial_placement="pack", idle_power_w=idle_w)
        keeps_deadlines = replace(config, reproduce_hkbu=False)
        variant = run_online(tasks, algo, packed, keeps_deadlines).energy_total_j / SLOT_S
    return {
        "variant_total": variant,
        "run": result.energy_run_j / SLOT_S,
        "idle": result.energy_idle_j / SLOT_S,
        "turn_on": result.energy_overhead_j / SLOT_S,
        "total": result.energy_total_j / SLOT_S,
        "turn_ons": result.turn_ons,
        "idle_repriced": repriced.energy_idle_j / SLOT_S,
        "pair": result.schedule.pair,
        "end_slots": result.schedule.end_s / SLOT_S,
    }


def published(code_dir: Path) -> dict[tuple[str, int, float, str, bool, float], dict[str, float]]:
    """Their CSV rows (offline.csv, online.csv, turnon.csv) keyed by (mode, l, U, algo, dvfs, θ)."""
    rows: dict[tuple[str, int, float, str, bool, float], dict[str, float]] = {}
    for name in ("turnon.csv", "offline.csv", "online.csv"):
        path = code_dir / "csvs" / name
        if not path.is_file():
            continue
        with path.open() as handle:
            for row in csv.DictReader(handle):
                key = (
                    row["mode"],
                    int(row["gpus_per_node"]),
                    float(row["util"]),
                    row["algo"],
                    row["dvfs_on"] == "1",
                    float(row["theta"]),
                )
                rows[key] = {
                    k: float(row[k]) for k in ("aver_run_E", "aver_idle_E", "aver_turnon_E", "aver_total_E")
                }
                rows[key]["half_ci"] = (float(row["max_total_E"]) - float(row["min_total_E"])) / 2
    return rows


def _mean_ci(values: list[float]) -> tuple[float, float]:
    array = np.asarray(values, dtype=float)
    half = 1.96 * float(array.std(ddof=1)) / math.sqrt(array.size) if array.size > 1 else math.nan
    return float(array.mean()), half


POINTS: tuple[tuple[str, float, int, str, bool, float], ...] = tuple(  # (mode, U, l, algorithm, DVFS, θ)
    [
        ("offline", u, l, "edl", d, t)
        for u in (0.2, 1.0, 1.6)
        for l in (1, 2, 16)
        for d, t in ((False, 1.0), (True, 1.0), (True, 0.7))
    ]
    + [
        ("online", 1.6, l, "edl", d, t)
        for l in (1, 2, 16)
        for d, t in ((False, 1.0), (True, 1.0), (True, 0.7))
    ]
)


MODES = ("offline", "online")


def crosscheck(
    authors: Authors,
    code_dir: Path,
    sets: int,
    grid: HkbuGrid,
    modes: tuple[str, ...] = MODES,
    ours_only: bool = False,
) -> list[dict[str, Any]]:
    csvs = published(code_dir)
    out = []
    for kind, util, l, algo, dvfs, theta in (p for p in POINTS if p[0] in modes):
        theirs, ours, worst, crashed = [], [], 0.0, 0
        start = time.perf_counter()
        for seed in range(1, sets + 1):
            jobs = authors.generate(kind, util, 2048, seed)
            mine = run_ours(to_taskset(jobs), kind, algo, dvfs, theta, l, grid, idle_w=37.0)
            ours.append(mine)
            if ours_only:
                continue
            try:
                reference = authors.run(jobs, kind, algo, dvfs, theta, l)
            except AttributeError:  # all 2048/l nodes on: their get_off_nodes() returns None
                crashed += 1
                continue
            worst = max(worst, *(abs(mine[k] - reference[k]) / abs(reference[k] or 1.0) for k in reference))
            theirs.append(reference)
        row: dict[str, Any] = {"mode": kind, "util": util, "l": l, "algo": algo, "dvfs": dvfs, "theta": theta}
        row["code_crashed_sets"] = crashed
        for part in ("run", "idle", "turn_on", "total"):
            row[f"code_{part}"], row[f"code_{part}_ci"] = _mean_ci([r[part] for r in theirs] or [math.nan])
        row["ours_total"] = float(np.mean([r["total"] for r in ours]))
        row["variant_total_37w"] = float(np.mean([r["variant_total"] for r in ours]))
        row["ours_pairs_opened_max"] = max(int(r["pair"].max()) + 1 for r in ours)
        row["max_rel_diff"] = worst
        row["code_idle_at_37w"] = float(np.mean([r["idle_repriced"] for r in ours]))
        row["code_turn_ons"] = float(np.mean([r["turn_ons"] for r in theirs])) if theirs else math.nan
        published_row = csvs.get((kind, l, util, THEIR_ALGO[algo], dvfs, theta))
        if published_row:
            row |= {f"csv_{k.split('_')[1].lower()}": v for k, v in published_row.items() if k != "half_ci"}
            row["csv_total_ci"] = published_row["half_ci"]
        row["wall_s"] = time.perf_counter() - start
        out.append(row)
        print(_line(row), flush=True)
    return out


def _line(row: dict[str, Any]) -> str:
    def m(x: float | None) -> str:
        return "—" if x is None or not math.isfinite(x) else f"{x / 1e6:.2f}"

    dvfs = f"on θ={row['theta']:g}" if row["dvfs"] else "off"
    return (
        f"| {row['mode']} | {row['util']:g} | {row['l']} | EDL {dvfs} | {m(row.get('csv_total'))} "
        f"| {m(row['code_total'])} ± {m(row['code_total_ci'])} | {row['max_rel_diff']:.1e} "
        f"| {m(row.get('csv_idle'))} | {m(row['code_idle'])} | {m(row['code_idle_at_37w'])} "
        f"| {row.get('csv_turnon', math.nan) / 200:.1f} | {row['code_turn_ons']:.1f} "
        f"| {m(row['ours_total'])} | {m(row['variant_total_37w'])} |"
        + (
            f" their code fails (all 2048 GPUs on) in {row['code_crashed_sets']} sets; ours opens up to "
            f"{row['ours_pairs_opened_max']} pairs |"
            if row["code_crashed_sets"]
            else ""
        )
    )


FIXTURE_RUNS: tuple[tuple[str, str, bool, float], ...] = tuple(
    [(a, "off", False, 1.0) for a in ("edl", "edf-bf", "edf-wf", "lpt-ff", "bin")]
    + [(a, "on", True, 1.0) for a in ("edl", "edf-bf", "edf-wf", "lpt-ff", "bin")]
    + [("edl", "on", True, 0.5)]
)
#: Runs whose per-task placement is kept as a reference (mode, algo, dvfs, θ, l).
PLACEMENT_RUNS = (
    ("offline", "edl", True, 0.5, 16),
    ("offline", "edf-bf", True, 1.0, 4),
    ("online", "edl", True, 1.0, 16),
    ("online", "edf-bf", True, 1.0, 4),
)


def export_fixture(authors: Authors, folder: Path) -> None:
    """Two small task sets from their generator and their code's outputs on them (module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    sets = {"offline": ("offline", 1.0, 256, 12), "online": ("online", 1.6, 128, 12)}
    rows, placements = [], []
    for kind, (mode, util, gpus, seed) in sets.items():
        jobs = authors.generate(mode, util, gpus, seed)
        tasks = to_taskset(jobs)
        write_tasks(tasks, folder / f"hkbu_{kind}.csv")
        for algo, _, dvfs, theta in FIXTURE_RUNS:
            if kind == "offline" and algo == "bin":
                continue
            for l in (1, 4, 16):
                ref = authors.run(jobs, kind, algo, dvfs, theta, l)
                rows.append(
                    [
                        kind,
                        algo,
                        "on" if dvfs else "off",
                        theta,
                        l,
                        *(ref[k] for k in ("run", "idle", "turn_on", "total")),
                        ref["turn_ons"],
                    ]
                )
                if (kind, algo, dvfs, theta, l) in PLACEMENT_RUNS:
                    for job_id, (node, gpu, start, end, _, _) in sorted(authors.records.items()):
                        placements.append([kind, algo, theta, l, f"j{job_id}", node * l + gpu, start, end])
    with (folder / "hkbu_reference.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(
            [
                "mode",
                "algo",
                "dvfs",
                "theta",
                "l",
                "run_w_slot",
                "idle_w_slot",
                "turn_on_w_slot",
                "total_w_slot",
                "turn_ons",
            ]
        )
        writer.writerows([[*r[:5], *(repr(float(x)) for x in r[5:9]), r[9]] for r in rows])
    with (folder / "hkbu_placement.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["mode", "algo", "theta", "l", "task_id", "pair", "start_slot", "end_slot"])
        writer.writerows([[*p[:6], repr(float(p[6])), repr(float(p[7]))] for p in placements])
    print(f"wrote {len(rows)} reference runs and {len(placements)} placements to {folder}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hkbu-code", type=Path, required=True, help="checkout of GPU-DVFS-Job-Schedule")
    parser.add_argument("--sets", type=int, default=10, help="task sets per point (their CSVs: 30)")
    parser.add_argument("--grid-v-max", type=float, default=1.1, help="their initial-solve grid (HEAD 1.1)")
    parser.add_argument("--json", type=Path, help="write the table as JSON")
    parser.add_argument("--modes", nargs="+", choices=("offline", "online"), default=["offline", "online"])
    parser.add_argument("--ours-only", action="store_true", help="their generator, our runs only (fast)")
    parser.add_argument("--export-fixture", type=Path, help="write the test fixture into this folder")
    args = parser.parse_args()
    authors = Authors(args.hkbu_code)
    if args.export_fixture:
        export_fixture(authors, args.export_fixture)
        return 0
    print("Energies in M W·slot; code = their current code (mean ± 95 % CI over the sets); diff = largest")
    print("relative difference between their code and ours (--reproduce-hkbu) over sets and energy parts;")
    print("ours = our reproduction; variant = their rules with the T = 0 batch packed and a deadline-keeping")
    print("Alg. 1 (ours, exact), idle at 37 W (online only).")
    print(
        "| mode | U | l | run | CSV total | code total | diff | CSV idle | code idle | code idle at 37 W "
        "| CSV turn-ons | code turn-ons | ours total | variant at 37 W |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    grid = HkbuGrid(0.5, 0.05, args.grid_v_max)
    rows = crosscheck(authors, args.hkbu_code, args.sets, grid, tuple(args.modes), args.ours_only)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
