"""P2 reproduction: DVFS savings offline (vs U, per l and θ) and online (U = 1.6, per l and θ), energy split,
pairs used, Alg. 1's theoretical bound, and the model fit on the real GPU measurements (P2 Sec. VI).

A cell is one task set and one ``l``: ``(mode, U, l, replicate)``. Its tasks come from a seed that depends
only on (study seed, mode, U, replicate), so every ``l``, algorithm, θ and DVFS setting sees the same tasks
(common random numbers). Each cell schedules one run per (algorithm, θ, DVFS on/off, grouping, rules):
``rules = "p2"`` is P2's text (exact Alg. 1, the T = 0 batch packed, Alg. 3 or opening-order grouping),
``rules = "hkbu"`` every rule of the authors' code (:func:`wattsched.dvfs.hkbu.hkbu_configs`: their Alg. 1,
opening order, one pair per task at T = 0, their tie order). Placement depends on neither the idle power nor
the turn-on cost, so each schedule is accounted several times, one row each: under the paper's constants
(``constants = "paper"``: 37 W idle per pair, 90 W·slot per pair turn-on) and the authors' code's (``"code"``:
85 W, 200 W·slot per server), with ``idle_accounting`` continuous, and for the authors' rules also whole-slot
(their accounting). Two extra cells: ``bound`` (Alg. 1's mean single-task saving on the synthetic library)
and ``fit`` (per-application fits of the measurements in ``data/dvfs-measurements`` (not shipped) when that
folder exists; no rows otherwise).

Savings are fractions (0–1): ``1 − E_total(DVFS on) / E_total(same algorithm, grouping, rules, constants and
accounting, DVFS off)``, the mean over task sets. ``summary.json["dvfs"]`` keeps its keys, all from P2's rules
under the paper's constants: ``offline_saving_l1`` (EDL, θ = 1, Alg. 3 grouping, mean over U),
``online_saving_u16_l16`` (EDL, θ = 1, U = 1.6, l = 16), per-l and per-θ tables; ``like_for_like`` adds
the same per-l tables for every (rules, grouping, constants, accounting) variant.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wattsched.experiments.study import STUDIES, Row, Scale

__all__ = ["ACCOUNTINGS", "CONSTANTS", "ROW_DEFAULTS", "DvfsCell", "DvfsStudy", "dvfs_savings"]

#: Every row carries every column (typed defaults), so rows of all cells stack into one Parquet table.
ROW_DEFAULTS: dict[str, Any] = {
    "key": "",
    "mode": "",
    "util": math.nan,
    "l": -1,
    "replicate": -1,
    "algo": "",
    "theta": math.nan,
    "dvfs": False,
    "grouping": "",
    "rules": "",
    "constants": "",
    "idle_accounting": "",
    "energy_total_j": math.nan,
    "energy_run_j": math.nan,
    "energy_idle_j": math.nan,
    "energy_overhead_j": math.nan,
    "tasks": -1,
    "deadline_misses": -1,
    "pairs_used": -1,
    "turn_ons": -1,
    "servers_used": -1,
    "readjustments": -1,
    "wall_s": math.nan,
    "gpu": "",
    "app": "",
    "time_mape": math.nan,
    "power_mape": math.nan,
    "saving_wide": math.nan,
    "saving_narrow": math.nan,
}
_MODE_CODE = {"offline": 1, "online": 2, "bound": 3, "fit": 4}
#: Idle power (W per pair) and turn-on energy (W·slot; per pair, or per server) of each constants set.
CONSTANTS: dict[str, tuple[float, float, bool]] = {"paper": (37.0, 90.0, False), "code": (85.0, 200.0, True)}
#: How each rules' schedules are accounted: (constants, idle accounting) per row.
ACCOUNTINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "p2": (("paper", "continuous"), ("code", "continuous")),
    "hkbu": tuple((c, a) for a in ("whole-slot", "continuous") for c in ("paper", "code")),
}
#: A run of a cell: (algorithm, θ, DVFS on, grouping, rules).
Run = tuple[str, float, bool, str, str]


@dataclass(frozen=True)
class DvfsCell:
    """One task set (mode, U, replicate) scheduled on servers of ``l`` pairs by every configured run."""

    mode: str
    util: float
    l: int
    replicate: int
    seed: int
    pairs: int
    runs: tuple[Run, ...]

    @property
    def key(self) -> str:
        return f"{self.mode}/U{self.util:.2f}/l{self.l:02d}/r{self.replicate:03d}"


def _runs(
    algos: Sequence[str], thetas: Sequence[float], groupings: Sequence[str], hkbu_algos: Sequence[str] = ()
) -> tuple[Run, ...]:
    """P2's rules for each grouping and algorithm, then the authors' rules (opening order) for ``hkbu_algos``;
    DVFS off at θ = 1 and on at every θ for EDL (θ = 1 for the baselines)."""
    runs: list[Run] = []
    variants = [(grouping, "p2", algos) for grouping in groupings] + [("on_demand", "hkbu", hkbu_algos)]
    for grouping, rules, names in variants:
        for algo in names:
            runs.append((algo, 1.0, False, grouping, rules))
            for theta in thetas if algo == "edl" else (1.0,):
                runs.append((algo, theta, True, grouping, rules))
    return tuple(runs)


def _shared_measurements() -> Path | None:
    """The folder of the DVFS measurements (not redistributable, so never shipped): ``$WATTSCHED_DVFS_DATA``,
    else ``dvfs-measurements/`` in ``$WATTSCHED_DATA``, in the repository checkout's ``data/`` or in ``data/``
    of the working directory; None when none holds ``gtx1080ti.csv``."""
    candidates = [Path(env) for env in (os.environ.get("WATTSCHED_DVFS_DATA"),) if env]
    data = os.environ.get("WATTSCHED_DATA")
    if data:
        candidates.append(Path(data) / "dvfs-measurements")
    candidates += [
        Path(__file__).resolve().parents[3] / "data" / "dvfs-measurements",
        Path.cwd() / "data" / "dvfs-measurements",
    ]
    return next((c for c in candidates if (c / "gtx1080ti.csv").is_file()), None)


def _configs(cell: DvfsCell, run: Run) -> tuple[Any, Any]:
    from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig
    from wattsched.dvfs.hkbu import hkbu_configs

    _, theta, dvfs_on, grouping, rules = run
    if rules == "hkbu":
        return hkbu_configs(cell.pairs, cell.l, enabled=dvfs_on, theta=theta)
    cluster = ClusterConfig(pairs=cell.pairs, pairs_per_server=cell.l, grouping=grouping)
    return cluster, DvfsConfig(enabled=dvfs_on, theta=theta)


def _schedule_rows(cell: DvfsCell) -> list[Row]:
    from wattsched.dvfs.cluster import account
    from wattsched.dvfs.offline import initial_settings, run_offline
    from wattsched.dvfs.online import arrival_slots, run_online
    from wattsched.dvfs.tasks import generate_offline, generate_online

    seed = np.random.SeedSequence([cell.seed, _MODE_CODE[cell.mode], round(cell.util * 1000), cell.replicate])
    offline = cell.mode == "offline"
    tasks = (generate_offline if offline else generate_online)(cell.util, cell.pairs, seed)
    runner = run_offline if offline else run_online
    window = tasks.window_s if offline else tasks.deadline_s - arrival_slots(tasks, 60.0) * 60.0
    cached: dict[tuple[bool, str], Any] = {}
    rows: list[Row] = []
    for run in cell.runs:
        algo, theta, dvfs_on, grouping, rules = run
        cluster, dvfs = _configs(cell, run)
        if (dvfs_on, rules) not in cached:
            cached[dvfs_on, rules] = initial_settings(tasks, window, dvfs)
        start = time.perf_counter()
        result = runner(tasks, algo, cluster, dvfs, settings=cached[dvfs_on, rules], keep_schedule=True)
        wall_s = time.perf_counter() - start
        for constants, accounting in ACCOUNTINGS[rules]:
            idle_w, turn_on_w_slot, per_server = CONSTANTS[constants]
            per_pair_j = turn_on_w_slot * cluster.slot_s / (cluster.pairs_per_server if per_server else 1)
            priced = replace(
                cluster, idle_power_w=idle_w, turn_on_j_per_pair=per_pair_j, idle_accounting=accounting
            )
            assert result.schedule is not None
            energy = account(result.schedule, tasks.deadline_s, priced, result.readjustments, False).to_dict()
            for drop in ("capacity_exceeded", "end_s"):
                energy.pop(drop, None)
            rows.append(
                {
                    **ROW_DEFAULTS,
                    "key": cell.key,
                    "mode": cell.mode,
                    "util": cell.util,
                    "l": cell.l,
                    "replicate": cell.replicate,
                    "algo": algo,
                    "theta": theta,
                    "dvfs": dvfs_on,
                    "grouping": grouping,
                    "rules": rules,
                    "constants": constants,
                    "idle_accounting": accounting,
                    **energy,
                    "wall_s": wall_s,
                }
            )
    return rows


def _bound_rows(cell: DvfsCell) -> list[Row]:
    from wattsched.dvfs.solver import default_settings, solve
    from wattsched.dvfs.tasks import generate_offline
    from wattsched.hardware.dvfs import default_dvfs_gpu

    tasks = generate_offline(1.0, cell.pairs, np.random.SeedSequence([cell.seed, _MODE_CODE["bound"]]))
    gpu = default_dvfs_gpu()
    default_j = default_settings(tasks.model).energy_j
    savings = [
        float(np.mean(1 - solve(tasks.model, np.inf, iv).energy_j / default_j))
        for iv in (gpu.wide, gpu.narrow)
    ]
    return [
        {
            **ROW_DEFAULTS,
            "key": cell.key,
            "mode": "bound",
            "gpu": gpu.name,
            "app": "synthetic-library",
            "tasks": len(tasks),
            "saving_wide": savings[0],
            "saving_narrow": savings[1],
        }
    ]


def _fit_rows(cell: DvfsCell) -> list[Row]:
    from wattsched.dvfs.fitting import fit_measurements
    from wattsched.hardware.dvfs import load_dvfs_gpu

    folder = _shared_measurements()
    if folder is None:
        return []
    rows: list[Row] = []
    for file, gpu in (("gtx1080ti.csv", "gtx1080ti"), ("gtx2070s.csv", "rtx2070s")):
        if (folder / file).is_file():
            for fit in fit_measurements(folder / file, load_dvfs_gpu(gpu)):
                rows.append(
                    {
                        **ROW_DEFAULTS,
                        "key": cell.key,
                        "mode": "fit",
                        "gpu": fit.gpu,
                        "app": fit.app,
                        "time_mape": fit.time_mape,
                        "power_mape": fit.power_mape,
                        "saving_wide": fit.saving_wide,
                        "saving_narrow": fit.saving_narrow,
                    }
                )
    return rows


#: Every column that identifies a schedule's accounting apart from DVFS on/off.
_PAIR_KEYS = ["mode", "util", "l", "replicate", "algo", "grouping", "rules", "constants", "idle_accounting"]


def dvfs_savings(rows: pd.DataFrame) -> pd.DataFrame:
    """Per task set: ``saving = 1 − E_on / E_off`` of the same (mode, U, l, replicate, algo, grouping, rules,
    constants, idle accounting); a ``variant`` column names the rules (``p2_sorted``, ``p2_on_demand``,
    ``hkbu`` with whole-slot idle, ``hkbu_continuous``)."""
    from wattsched.dvfs.report_tables import variant_names

    sched = rows[rows["mode"].isin(["offline", "online"])]
    off = sched[~sched["dvfs"].astype(bool)][[*_PAIR_KEYS, "energy_total_j"]].rename(
        columns={"energy_total_j": "off_j"}
    )
    on = sched[sched["dvfs"].astype(bool)]
    merged = on.merge(off, on=_PAIR_KEYS, how="inner")
    merged["saving"] = 1.0 - merged["energy_total_j"] / merged["off_j"]
    merged["variant"] = variant_names(merged)
    return merged


def _mean(frame: pd.DataFrame, **where: Any) -> float:
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        values = frame[column].to_numpy()
        mask &= np.isclose(values.astype(float), value) if isinstance(value, float) else values == value
    return float(frame.loc[mask, "saving"].mean()) if mask.any() else math.nan


@dataclass
class DvfsStudy:
    name: str = "dvfs"
    seed: int = 2104
    pairs: int = 2048

    def cells(self, scale: Scale) -> Sequence[DvfsCell]:
        ls = (1, 2, 4, 8, 16)
        utils: tuple[float, ...]
        thetas: tuple[float, ...]
        online_algos: tuple[str, ...]
        if scale == "paper":
            utils, reps, online_reps = tuple(round(0.2 * k, 1) for k in range(1, 9)), 30, 30
            thetas = (1.0, 0.9, 0.7, 0.5, 0.3, 0.1)
            offline_algos, online_algos = (
                ("edl", "edf-bf", "edf-wf", "lpt-ff"),
                ("edl", "bin", "edf-bf", "edf-wf"),
            )
        else:
            utils, reps, online_reps = (0.4, 1.0, 1.6), 2, 2
            thetas = (1.0, 0.7, 0.3)
            offline_algos, online_algos = ("edl", "edf-bf", "edf-wf", "lpt-ff"), ("edl", "bin")
        cells: list[DvfsCell] = [
            DvfsCell("bound", 1.0, 1, 0, self.seed, 20000, ()),
            DvfsCell("fit", 0.0, 1, 0, self.seed, 0, ()),
        ]
        for util in utils:
            for l in ls:
                algos = offline_algos if (l in (1, 16) or scale == "paper") else ("edl",)
                # the authors' rules for every algorithm at l = 1 (pairs used), EDL elsewhere (savings)
                hkbu_algos = offline_algos if l == 1 else ("edl",)
                runs = _runs(algos, thetas, ("sorted", "on_demand"), hkbu_algos=hkbu_algos)
                cells += [DvfsCell("offline", util, l, r, self.seed, self.pairs, runs) for r in range(reps)]
        online_runs = _runs(online_algos, thetas, ("sorted",), hkbu_algos=("edl", "bin"))
        cells += [
            DvfsCell("online", 1.6, l, r, self.seed, self.pairs, online_runs)
            for l in ls
            for r in range(online_reps)
        ]
        return cells

    def run_cell(self, cell: DvfsCell) -> list[Row]:
        if cell.mode == "bound":
            return _bound_rows(cell)
        if cell.mode == "fit":
            return _fit_rows(cell)
        return _schedule_rows(cell)

    def summarize(self, rows: pd.DataFrame) -> dict[str, Any]:
        every = dvfs_savings(rows) if len(rows) else pd.DataFrame(columns=["saving", "variant", "constants"])
        # the existing keys: P2's rules under the paper's constants
        savings = every[(every["rules"] == "p2") & (every["constants"] == "paper")] if len(every) else every
        off = savings[savings["mode"] == "offline"] if len(savings) else savings
        onl = savings[savings["mode"] == "online"] if len(savings) else savings
        block: dict[str, Any] = {
            "offline_saving_l1": _mean(off, algo="edl", theta=1.0, grouping="sorted", l=1),
            "online_saving_u16_l16": _mean(onl, algo="edl", theta=1.0, util=1.6, l=16),
        }
        ls = sorted(int(x) for x in savings["l"].unique()) if len(savings) else []
        thetas = sorted({float(t) for t in savings["theta"].unique()}, reverse=True) if len(savings) else []
        for grouping in ("sorted", "on_demand"):
            block[f"offline_saving_by_l_{grouping}"] = {
                str(l): {
                    f"theta_{t:g}": _mean(off, algo="edl", theta=t, grouping=grouping, l=l) for t in thetas
                }
                for l in ls
            }
        block["online_saving_u16_by_l"] = {
            str(l): {f"theta_{t:g}": _mean(onl, algo="edl", theta=t, util=1.6, l=l) for t in thetas}
            for l in ls
        }
        block["online_saving_u16_l16_best_theta"] = max(
            (_mean(onl, algo="edl", theta=t, util=1.6, l=16) for t in thetas), default=math.nan
        )
        block["like_for_like"] = _like_for_like(every, ls, thetas)
        bound = rows[rows["mode"] == "bound"] if len(rows) else rows
        if len(bound):
            block["single_task_bound_wide"] = float(bound["saving_wide"].mean())
        fits = rows[rows["mode"] == "fit"] if len(rows) else rows
        for gpu, part in fits.groupby("gpu") if len(fits) else []:
            block[f"fit_{gpu}"] = {
                "apps": len(part),
                "time_mape": float(part["time_mape"].mean()),
                "power_mape": float(part["power_mape"].mean()),
                "saving_wide": float(part["saving_wide"].mean()),
                "saving_narrow": float(part["saving_narrow"].mean()),
            }
        return {"dvfs": _clean(block)}

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        from wattsched.dvfs.report import write_report

        savings = dvfs_savings(rows) if len(rows) else pd.DataFrame(columns=["saving"])
        return write_report(rows, savings, self.summarize(rows)["dvfs"], figures_dir)


def _like_for_like(every: pd.DataFrame, ls: list[int], thetas: list[float]) -> dict[str, Any]:
    """EDL savings per variant, constants, l and θ: offline (mean over U) and online at U = 1.6."""
    out: dict[str, Any] = {}
    for mode, name, extra in (("offline", "offline", {}), ("online", "online_u16", {"util": 1.6})):
        part = every[every["mode"] == mode] if len(every) else every
        variants = sorted(part["variant"].unique()) if len(part) else []
        out[name] = {
            variant: {
                constants: {
                    str(l): {
                        f"theta_{t:g}": _mean(
                            part, algo="edl", variant=variant, constants=constants, theta=t, l=l, **extra
                        )
                        for t in thetas
                    }
                    for l in ls
                }
                for constants in CONSTANTS
            }
            for variant in variants
        }
    return out


def _clean(value: Any) -> Any:
    """NaN -> None so that summary.json stays valid JSON."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


@STUDIES.register("dvfs")
def _make() -> DvfsStudy:
    return DvfsStudy()
