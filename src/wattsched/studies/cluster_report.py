"""Summary, Markdown section and figures of the cluster study (:mod:`.cluster`). Draws tables only."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from wattsched.experiments.store import atomic_write_bytes
from wattsched.units import JOULES_PER_KWH

__all__ = ["report", "summarize"]

_PNG_METADATA: dict[str, str | None] = {"Software": None}
_COMPONENTS = (
    ("energy_run_j", "GPUs busy"),
    ("energy_idle_j", "idle (GPUs on, host)"),
    ("energy_overhead_j", "server turn-ons"),
)


def _label(row: pd.Series) -> str:
    if bool(row["baseline"]):
        return "baseline (no MIG, on, default)"
    power = "DRS" if bool(row["power_states"]) else "on"
    clocks = "DVFS" if bool(row["clocks"]) else "def"
    return f"{row['placement']}/{row['partitioner']}/{power}/{clocks}"


def _runs(rows: pd.DataFrame) -> pd.DataFrame:
    runs = rows[rows["part"] == "run"].copy()
    runs["label"] = [_label(r) for _, r in runs.iterrows()]
    return runs


def summarize(rows: pd.DataFrame) -> dict[str, Any]:
    """``{"cluster": {workload: {"baseline": {...}, "best_energy": {...}, "runs": {label: {...}}}}}``."""
    out: dict[str, Any] = {}
    if rows.empty:
        return {"cluster": out}
    runs = _runs(rows)
    for workload, group in runs.groupby("workload", sort=True):
        base = group[group["baseline"].astype(bool)]
        base_energy = float(base["energy_j"].iloc[0]) if len(base) else float("nan")
        entries = {}
        for _, r in group.iterrows():
            entries[r["label"]] = {
                "energy_kwh": float(r["energy_j"]) / JOULES_PER_KWH,
                "energy_saving_vs_baseline": 1.0 - float(r["energy_j"]) / base_energy if len(base) else None,
                "avg_tardiness_s": float(r["avg_tardiness_s"]),
                "late_share": float(r["late_jobs"]) / max(float(r["jobs"]), 1.0),
                "gpu_hours_on": float(r["gpu_hours_on"]),
                "server_turn_ons": int(r["server_turn_ons"]),
                "repartitions": int(r["repartitions"]),
            }
        best = group.sort_values("energy_j", kind="stable").iloc[0]
        out[str(workload)] = {
            "jobs": int(group["jobs"].iloc[0]),
            "gpus": int(group["gpus"].iloc[0]),
            "baseline": entries.get(_label(base.iloc[0])) if len(base) else None,
            "best_energy": {"configuration": best["label"], **entries[best["label"]]},
            "runs": entries,
        }
    return {"cluster": out}


def _save(fig: Any, path: Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata=_PNG_METADATA)
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _energy_figure(runs: pd.DataFrame, path: Path) -> Path:
    workloads = sorted(runs["workload"].unique())
    fig, axes = plt.subplots(len(workloads), 1, figsize=(11, 3.6 * len(workloads)), squeeze=False)
    for ax, workload in zip(axes.flat, workloads, strict=True):
        group = runs[runs["workload"] == workload].sort_values("energy_j")
        bottom = np.zeros(len(group))
        x = np.arange(len(group))
        for column, name in _COMPONENTS:
            values = group[column].to_numpy(dtype=float) / JOULES_PER_KWH
            ax.bar(x, values, 0.75, bottom=bottom, label=name)
            bottom += values
        ax.set_xticks(x, group["label"], rotation=75, ha="right", fontsize=7)
        ax.set_ylabel("energy (kWh)")
        ax.set_title(f"{workload}: energy by component, lowest first", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


def _picks(runs: pd.DataFrame) -> list[str]:
    """The baseline, the lowest-energy run and a few contrasting ones, per workload (labels)."""
    labels: list[str] = []
    for _, group in runs.groupby("workload", sort=True):
        ordered = group.sort_values("energy_j")
        chosen = [
            *group[group["baseline"].astype(bool)]["label"],
            ordered["label"].iloc[0],
            ordered["label"].iloc[len(ordered) // 2],
            ordered["label"].iloc[-1],
        ]
        labels += [c for c in chosen if c not in labels]
    return labels


def _cdf_figure(rows: pd.DataFrame, runs: pd.DataFrame, path: Path) -> Path:
    workloads = sorted(runs["workload"].unique())
    picks = _picks(runs)
    cdf = rows[rows["part"] == "cdf"]
    fig, axes = plt.subplots(1, len(workloads), figsize=(5.5 * len(workloads), 3.8), squeeze=False)
    for ax, workload in zip(axes.flat, workloads, strict=True):
        for _, run in runs[(runs["workload"] == workload) & runs["label"].isin(picks)].iterrows():
            points = cdf[cdf["key"] == run["key"]].sort_values("x")
            ax.step(points["y"].to_numpy() / 60.0, points["x"].to_numpy(), where="post", label=run["label"])
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlabel("tardiness (min, symlog)")
        ax.set_ylabel("share of jobs")
        ax.set_title(f"{workload}: tardiness CDF", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return _save(fig, path)


def _timeline_figure(rows: pd.DataFrame, runs: pd.DataFrame, path: Path) -> Path:
    workloads = sorted(runs["workload"].unique())
    picks = _picks(runs)
    timeline = rows[rows["part"] == "timeline"]
    fig, axes = plt.subplots(1, len(workloads), figsize=(5.5 * len(workloads), 3.8), squeeze=False)
    for ax, workload in zip(axes.flat, workloads, strict=True):
        for _, run in runs[(runs["workload"] == workload) & runs["label"].isin(picks)].iterrows():
            points = timeline[timeline["key"] == run["key"]].sort_values("x")
            days = points["x"].to_numpy() / 86_400.0
            ax.step(days, points["y"].to_numpy(), where="post", label=run["label"])
        ax.set_xlabel("time (days)")
        ax.set_ylabel("GPUs on (mean per bin)")
        if float(runs[runs["workload"] == workload]["gpus"].max()) > 500:
            ax.set_yscale("symlog", linthresh=10.0)
        ax.set_title(f"{workload}: GPUs on over time", fontsize=10)
        ax.set_ylim(bottom=0.0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return _save(fig, path)


def report(rows: pd.DataFrame, figures_dir: Path, gpu: str) -> str:
    from wattsched.experiments.report import markdown_table

    lines = ["## A data centre of MIG GPUs (cluster engine)", ""]
    if rows.empty:
        return "\n".join([*lines, "No cells ran.", ""])
    runs = _runs(rows)
    block = summarize(rows)["cluster"]
    lines += [
        f"Every GPU is a {gpu} (the catalogue entry with a clock table, so that DVFS applies; the Alibaba "
        "node models are all mapped to it). MIG runs: restricted EDF-SS, starting in the GPU's static "
        "configuration; `static` keeps it, `day-night` switches to the GPU's day configuration by day and "
        "its night one by night, per GPU (4 s blackout each). "
        "Baseline: MIG disabled (EDF-FS on the one slice), first-fit, every server always on, default "
        "clocks. `DRS`: P2's server power states (off after ρ idle 60 s slots, 5,400 J per GPU and 60 s to "
        "turn on); `DVFS`: a GPU-wide clock level from P2's model and Alg. 1 per scheduling decision (a "
        "model: see `wattsched.cluster.clocks`). Deadlines follow P1's rule (1-1.5 × the 7g run time), "
        "so a job on a smaller slice is late by construction: MIG trades tardiness for energy here, and "
        "DVFS has room only where a job has slack. Energy runs to the cluster's end (the last completion) "
        "on every GPU. The Alibaba replay leaves out pods observed running longer than 2 days (see the "
        "study module).",
        "",
    ]
    for workload, entry in block.items():
        base = entry["baseline"]
        lines += [f"### {workload}: {entry['jobs']:,} jobs on {entry['gpus']:,} GPUs", ""]
        if base is not None:
            best = entry["best_energy"]
            lines += [
                f"Baseline: {base['energy_kwh']:,.1f} kWh, mean tardiness {base['avg_tardiness_s'] / 60:.2f} "
                f"min. Lowest energy: `{best['configuration']}` with {best['energy_kwh']:,.1f} kWh "
                f"({100 * (best['energy_saving_vs_baseline'] or 0.0):.1f} % less), mean tardiness "
                f"{best['avg_tardiness_s'] / 60:.2f} min.",
                "",
            ]
        table = []
        group = runs[runs["workload"] == workload].sort_values("energy_j")
        for _, r in group.iterrows():
            e = entry["runs"][r["label"]]
            saving = e["energy_saving_vs_baseline"]
            table.append(
                [
                    r["label"],
                    f"{e['energy_kwh']:,.1f}",
                    f"{float(r['energy_run_j']) / JOULES_PER_KWH:,.1f}",
                    f"{float(r['energy_idle_j']) / JOULES_PER_KWH:,.1f}",
                    f"{float(r['energy_overhead_j']) / JOULES_PER_KWH:,.2f}",
                    f"{100 * saving:+.1f} %" if saving is not None else "n/a",
                    f"{e['avg_tardiness_s'] / 60:.2f}",
                    f"{100 * e['late_share']:.1f} %",
                    f"{e['gpu_hours_on']:,.0f}",
                    e["server_turn_ons"],
                    e["repartitions"],
                ]
            )
        lines += [
            markdown_table(
                [
                    "placement/partitioner/power/clocks",
                    "energy kWh",
                    "busy",
                    "idle",
                    "turn-on",
                    "vs baseline",
                    "tardiness min",
                    "late",
                    "GPU-h on",
                    "turn-ons",
                    "repartitions",
                ],
                table,
            ),
            "",
        ]
    figures_dir.mkdir(parents=True, exist_ok=True)
    energy = _energy_figure(runs, figures_dir / "cluster_energy_components.png")
    cdf = _cdf_figure(rows, runs, figures_dir / "cluster_tardiness_cdf.png")
    timeline = _timeline_figure(rows, runs, figures_dir / "cluster_gpus_on.png")
    lines += [
        f"![energy by component](figures/{energy.name})",
        "",
        f"![tardiness CDF](figures/{cdf.name})",
        "",
        f"![GPUs on over time](figures/{timeline.name})",
        "",
    ]
    return "\n".join(lines)
