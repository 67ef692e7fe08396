"""The P2 section of ``report.md``: figures (matplotlib, Agg) and tables of measured values beside the
reference values of ``papers.md`` §B.6. Draws tables of study rows; never runs a simulation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["PAPER_OFFLINE", "PAPER_ONLINE", "write_report"]

#: Offline DVFS saving (%) per l: (θ = 1.0, θ = 0.7, θ <= 0.5), authors' CSVs (code constants).
PAPER_OFFLINE: dict[int, tuple[str, str, str]] = {
    1: ("33.4–33.6", "—", "—"),
    2: ("31.6–31.8", "30.7–31.3", "30.7–31.0"),
    4: ("29.0–29.2", "29.5–29.8", "29.6–30.1"),
    8: ("25.7–26.0", "28.5–28.8", "28.6–29.0"),
    16: ("22.3–22.9", "27.3–27.6", "27.7–28.0"),
}
#: Online DVFS saving (%) at U = 1.6 per l and θ (authors' online.csv).
PAPER_ONLINE: dict[int, dict[float, float]] = {
    1: {0.3: 32.9, 0.7: 33.0, 0.9: 33.4, 1.0: 33.5},
    2: {0.3: 32.6, 0.7: 32.6, 0.9: 32.8, 1.0: 32.8},
    4: {0.3: 30.8, 0.7: 31.0, 0.9: 30.6, 1.0: 30.2},
    8: {0.3: 30.2, 0.7: 30.3, 0.9: 28.8, 1.0: 27.6},
    16: {0.3: 30.6, 0.7: 30.5, 0.9: 28.1, 1.0: 26.1},
}
#: Occupied pairs at l = 1, DVFS off -> on (authors' turnon.csv).
PAPER_PAIRS = {
    (1.0, "edl"): "755 → 926",
    (1.0, "edf-bf"): "≈620 → 770",
    (1.0, "edf-wf"): "≈620 → 770",
    (1.0, "lpt-ff"): "1025 → 1276",
    (1.6, "edl"): "1218 → 1493",
    (1.6, "lpt-ff"): "1670 → 2080",
}


def _pct(value: float | None) -> str:
    return (
        "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"
    )


def _saving(savings: pd.DataFrame, **where: Any) -> float:
    part = savings
    for column, value in where.items():
        part = (
            part[np.isclose(part[column].astype(float), value)]
            if isinstance(value, float)
            else part[part[column] == value]
        )
    return float(part["saving"].mean()) if len(part) else math.nan


def _offline_figure(savings: pd.DataFrame, path: Path) -> None:
    off = savings[
        (savings["mode"] == "offline") & (savings["algo"] == "edl") & np.isclose(savings["theta"], 1.0)
    ]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for l, color in zip((1, 2, 4, 8, 16), plt.cm.viridis(np.linspace(0, 0.9, 5)), strict=True):
        for grouping, style in (("sorted", "-o"), ("on_demand", "--x")):
            part = off[(off["l"] == l) & (off["grouping"] == grouping)].groupby("util")["saving"].mean()
            if len(part):
                label = f"l={l} ({'Alg. 3' if grouping == 'sorted' else 'opening order'})"
                ax.plot(part.index, 100 * part.to_numpy(), style, color=color, label=label, markersize=4)
    ax.set_xlabel("task-set utilisation U")
    ax.set_ylabel("DVFS energy saving (%)")
    ax.set_title("Offline EDL, θ = 1: saving vs U")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _online_figure(savings: pd.DataFrame, path: Path) -> None:
    onl = savings[(savings["mode"] == "online") & (savings["algo"] == "edl")]
    thetas = sorted(onl["theta"].unique(), reverse=True)
    ls = sorted(onl["l"].unique())
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    width = 0.8 / max(len(thetas), 1)
    for k, theta in enumerate(thetas):
        values = [100 * _saving(onl, l=int(l), theta=float(theta)) for l in ls]
        ax.bar(np.arange(len(ls)) + k * width, values, width, label=f"θ={theta:g}")
    paper = [PAPER_ONLINE.get(int(l), {}).get(1.0, math.nan) for l in ls]
    ax.plot(np.arange(len(ls)) + 0.4 - width / 2, paper, "k*", markersize=9, label="paper θ=1 (code consts)")
    ax.set_xticks(np.arange(len(ls)) + 0.4 - width / 2, [f"l={int(l)}" for l in ls])
    ax.set_ylabel("DVFS energy saving (%)")
    ax.set_title("Online EDL, U = 1.6: saving per l and θ")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _breakdown_figure(rows: pd.DataFrame, path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8))
    panels = (
        ("offline", 1.0, "on_demand", "Offline U=1.0 (opening order)"),
        ("online", 1.6, "sorted", "Online U=1.6"),
    )
    for ax, (mode, util, grouping, title) in zip(axes, panels, strict=True):
        part = rows[
            (rows["mode"] == mode)
            & (rows["algo"] == "edl")
            & np.isclose(rows["theta"], 1.0)
            & np.isclose(rows["util"], util)
            & (rows["grouping"] == grouping)
        ]
        labels, run, idle, over = [], [], [], []
        for (l, dvfs), group in part.groupby(["l", "dvfs"]):
            labels.append(f"l={l}\n{'on' if dvfs else 'off'}")
            run.append(group["energy_run_j"].mean() / 1e9)
            idle.append(group["energy_idle_j"].mean() / 1e9)
            over.append(group["energy_overhead_j"].mean() / 1e9)
        x = np.arange(len(labels))
        ax.bar(x, run, label="run")
        ax.bar(x, idle, bottom=run, label="idle")
        ax.bar(x, over, bottom=np.add(run, idle), label="turn-on")
        ax.set_xticks(x, labels, fontsize=6)
        ax.set_ylabel("energy (GJ)")
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fit_figure(fits: pd.DataFrame, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(9.0, 3.6))
    part = fits[fits["gpu"] == "gtx1080ti"]
    x = np.arange(len(part))
    ax.bar(x - 0.2, 100 * part["saving_wide"], 0.4, label="wide interval")
    ax.bar(x + 0.2, 100 * part["saving_narrow"], 0.4, label="narrow (real) interval")
    ax.set_xticks(x, part["app"], rotation=75, fontsize=6)
    ax.set_ylabel("optimal single-task saving (%)")
    ax.set_title("GTX 1080 Ti applications, fitted from measurements")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _tables(rows: pd.DataFrame, savings: pd.DataFrame, block: dict[str, Any]) -> list[str]:
    off = savings[savings["mode"] == "offline"]
    lines = [
        "| l | paper θ=1 | ours θ=1 (Alg. 3 / opening order) | paper θ=0.7 | ours θ=0.7 | paper θ≤0.5 | "
        "ours θ=0.3 |",
        "|---|---|---|---|---|---|---|",
    ]
    for l, paper_offline in PAPER_OFFLINE.items():
        cells = []
        for theta in (1.0, 0.7, 0.3):
            a = _saving(off, algo="edl", l=l, theta=theta, grouping="sorted")
            b = _saving(off, algo="edl", l=l, theta=theta, grouping="on_demand")
            cells.append(f"{_pct(a)} / {_pct(b)}")
        lines.append(
            f"| {l} | {paper_offline[0]} | {cells[0]} | {paper_offline[1]} | {cells[1]} "
            f"| {paper_offline[2]} | {cells[2]} |"
        )
    lines += [
        "",
        "Offline pairs used at l = 1 (DVFS off → on), EDL/baselines:",
        "",
        "| U | algorithm | paper | ours |",
        "|---|---|---|---|",
    ]
    sched = rows[
        (rows["mode"] == "offline")
        & (rows["l"] == 1)
        & np.isclose(rows["theta"], 1.0)
        & (rows["grouping"] == "sorted")
    ]
    for (util, algo), paper_pairs in PAPER_PAIRS.items():
        part = sched[np.isclose(sched["util"], util) & (sched["algo"] == algo)]
        if len(part):
            off_pairs = part[~part["dvfs"].astype(bool)]["pairs_used"].mean()
            on_pairs = part[part["dvfs"].astype(bool)]["pairs_used"].mean()
            lines.append(f"| {util} | {algo} | {paper_pairs} | {off_pairs:.0f} → {on_pairs:.0f} |")
    onl = savings[savings["mode"] == "online"]
    lines += [
        "",
        "Online, U = 1.6, EDL DVFS saving (%) — paper (authors' code constants) / ours:",
        "",
        "| l | θ=1.0 | θ=0.7 | θ≤0.5 (ours 0.3) |",
        "|---|---|---|---|",
    ]
    for l, paper_online in PAPER_ONLINE.items():
        ours = [_pct(_saving(onl, algo="edl", l=l, theta=t)) for t in (1.0, 0.7, 0.3)]
        lines.append(
            f"| {l} | {paper_online[1.0]} / {ours[0]} | {paper_online[0.7]} / {ours[1]} "
            f"| {paper_online[0.3]} / {ours[2]} |"
        )
    return lines


def _idle_shares(rows: pd.DataFrame) -> list[str]:
    lines = []
    for l in (2, 16):
        part = rows[
            (rows["mode"] == "offline")
            & (rows["algo"] == "edl")
            & np.isclose(rows["theta"], 1.0)
            & np.isclose(rows["util"], 1.0)
            & (rows["l"] == l)
        ]
        for grouping in ("sorted", "on_demand"):
            g = part[part["grouping"] == grouping]
            shares = {
                d: float((x["energy_idle_j"] / x["energy_total_j"]).mean()) for d, x in g.groupby("dvfs")
            }
            if shares:
                lines.append(
                    f"- l = {l}, {grouping}: idle share {_pct(shares.get(True, math.nan))} % with DVFS, "
                    f"{_pct(shares.get(False, math.nan))} % without"
                )
    return lines


def write_report(rows: pd.DataFrame, savings: pd.DataFrame, block: dict[str, Any], figures_dir: Path) -> str:
    """Write the P2 figures into ``figures_dir`` and return the Markdown section."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    figures = {
        "dvfs_offline_saving_vs_u.png": lambda p: _offline_figure(savings, p),
        "dvfs_online_saving.png": lambda p: _online_figure(savings, p),
        "dvfs_energy_breakdown.png": lambda p: _breakdown_figure(rows, p),
    }
    fits = rows[rows["mode"] == "fit"]
    if len(fits):
        figures["dvfs_fit_savings.png"] = lambda p: _fit_figure(fits, p)
    if len(savings):
        for name, draw in figures.items():
            draw(figures_dir / name)
    lines = [
        "## P2: DVFS-aware deadline scheduling on CPU-GPU clusters",
        "",
        "Savings are `1 − E(DVFS on)/E(same algorithm, DVFS off)`, means over task sets; paper constants "
        "(idle 37 W per pair, Δ = 90 W·slot per pair, ρ = 2, slot 60 s, wide interval V ≤ 1.2). The paper's "
        "reference values come from the authors' released CSVs, made with their code's constants "
        "(idle 85, 200 per server) and with pairs grouped into servers in opening order.",
        "",
        f"- Offline saving at l = 1 (EDL, θ = 1): **{_pct(block.get('offline_saving_l1'))} %** "
        "(paper 33–35 %, CSV 33.4–33.6 %).",
        f"- Online saving at U = 1.6, l = 16 (EDL, θ = 1): **{_pct(block.get('online_saving_u16_l16'))} %** "
        "(paper CSV 26.1 %; best θ 30.6 %).",
        f"- Alg. 1 single-task bound on the synthetic library (wide): "
        f"{_pct(block.get('single_task_bound_wide'))} % (paper: at most 36 %).",
        "",
    ]
    if len(savings):
        lines += [
            "![offline](figures/dvfs_offline_saving_vs_u.png) ![online](figures/dvfs_online_saving.png)",
            "![breakdown](figures/dvfs_energy_breakdown.png)",
            "",
        ]
        lines += [*_tables(rows, savings, block), ""]
        lines += [
            "Offline idle share at U = 1.0, EDL θ = 1 (paper: l = 16 22 % with vs 9 % without DVFS; "
            "l = 2 about 5 %):",
            "",
        ]
        lines += _idle_shares(rows)
    for gpu in ("gtx1080ti", "rtx2070s"):
        fit = block.get(f"fit_{gpu}")
        if fit:
            lines.append(
                f"- Fit {gpu}: {fit['apps']} applications, mean MAPE time {_pct(fit['time_mape'])} %, "
                f"power {_pct(fit['power_mape'])} %; optimal single-task saving wide "
                f"{_pct(fit['saving_wide'])} %, narrow {_pct(fit['saving_narrow'])} % (paper: wide 23–44 %, "
                "mean ≈ 36 %; narrow 0.5–10 %)."
            )
    if len(fits):
        lines += ["", "![fit](figures/dvfs_fit_savings.png)"]
    lines += [
        "",
        "**Where we differ and why.**",
        "- With Alg. 3 (pairs sorted by busy time, then grouped) idle energy is almost nil, so the saving "
        "stays near the l = 1 value for every l. The authors' code instead groups pairs in opening order; "
        "with that grouping (`on_demand`) the saving falls with l as in their CSVs (≈ 22–23 % at l = 16, "
        "θ = 1) and θ < 1 helps at large l, as they report.",
        "- Online, the reference runs used idle 85 and 200 per server; "
        "with the paper's 37 W and 90 per pair, "
        "idle and turn-on energy weigh less, so savings at large l stay higher and θ < 1 gains little.",
        "- The fitted real applications give much smaller wide-interval savings than the paper's 23–44 %: "
        "the fitted constant power share P0/P* is 0.2–0.8 and γ/P* up to 0.75 (paper library 0.20–0.41 "
        "and 0.1–0.2), which leaves little to gain from lowering V. The narrow-interval savings (≈ 4 %) "
        "agree with the paper's 0.5–10 %. The paper kept '20 applications with good fitting results'; "
        "which 20, and its exact fitting details, are unknown.",
        "",
    ]
    return "\n".join(lines)
