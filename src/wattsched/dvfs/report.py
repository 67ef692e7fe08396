"""The P2 section of ``report.md``: figures (matplotlib, Agg) and tables of measured values beside the
reference values of P2 Sec. VI. Draws tables of study rows; never runs a simulation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from wattsched.dvfs.report_tables import (
    CONSTANT_LABELS,
    PAPER_OFFLINE,
    PAPER_ONLINE,
    VARIANT_LABELS,
    csv_section,
    idle_share_table,
    offline_tables,
    online_tables,
    pairs_table,
    rules_legend,
    saving,
)
from wattsched.dvfs.report_tables import pct as _pct

__all__ = ["PAPER_OFFLINE", "PAPER_ONLINE", "write_report"]


def _p2_paper(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of P2's rules under the paper's constants (the study's original figures)."""
    if "rules" not in frame.columns or not len(frame):
        return frame
    return frame[(frame["rules"] == "p2") & (frame["constants"] == "paper")]


def _offline_figure(savings: pd.DataFrame, path: Path) -> None:
    savings = _p2_paper(savings)
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
    ax.set_title("Offline EDL, θ = 1: saving vs U (P2's rules, 37 W)")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _online_figure(savings: pd.DataFrame, path: Path) -> None:
    savings = _p2_paper(savings)
    onl = savings[(savings["mode"] == "online") & (savings["algo"] == "edl")]
    thetas = sorted(onl["theta"].unique(), reverse=True)
    ls = sorted(onl["l"].unique())
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    width = 0.8 / max(len(thetas), 1)
    for k, theta in enumerate(thetas):
        values = [100 * saving(onl, l=int(l), theta=float(theta)) for l in ls]
        ax.bar(np.arange(len(ls)) + k * width, values, width, label=f"θ={theta:g}")
    paper = [PAPER_ONLINE.get(int(l), {}).get(1.0, math.nan) for l in ls]
    ax.plot(np.arange(len(ls)) + 0.4 - width / 2, paper, "k*", markersize=9, label="authors' CSV θ=1")
    ax.set_xticks(np.arange(len(ls)) + 0.4 - width / 2, [f"l={int(l)}" for l in ls])
    ax.set_ylabel("DVFS energy saving (%)")
    ax.set_title("Online EDL, U = 1.6: saving per l and θ (P2's rules, 37 W)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _breakdown_figure(rows: pd.DataFrame, path: Path) -> None:
    rows = _p2_paper(rows)
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8))
    panels = (
        ("offline", 1.0, "on_demand", "Offline U=1.0, opening order, 37 W"),
        ("online", 1.6, "sorted", "Online U=1.6, P2's rules, 37 W"),
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


def _variants_figure(savings: pd.DataFrame, path: Path) -> None:
    """Offline EDL saving vs l (θ = 1, mean over U) for every rules variant under both constants."""
    off = savings[
        (savings["mode"] == "offline") & (savings["algo"] == "edl") & np.isclose(savings["theta"], 1.0)
    ]
    ls = (1, 2, 4, 8, 16)
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    colors = dict(zip(VARIANT_LABELS, plt.cm.tab10(np.arange(len(VARIANT_LABELS))), strict=True))
    for variant, label in VARIANT_LABELS.items():
        for constants, style in (("paper", "-o"), ("code", "--s")):
            values = [100 * saving(off, variant=variant, constants=constants, l=l) for l in ls]
            if not all(np.isnan(values)):
                ax.plot(
                    ls,
                    values,
                    style,
                    color=colors[variant],
                    markersize=4,
                    label=f"{label.replace('`', '')}, {CONSTANT_LABELS[constants].split(':')[0]}",
                )
    csv = [float(PAPER_OFFLINE[l][0].split("–")[0]) for l in ls]
    ax.plot(ls, csv, "k*", markersize=9, label="authors' CSV (lower end)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ls, [str(l) for l in ls])
    ax.set_xlabel("pairs per server l")
    ax.set_ylabel("DVFS energy saving (%)")
    ax.set_title("Offline EDL, θ = 1: rules and constants")
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(rows: pd.DataFrame, savings: pd.DataFrame, block: dict[str, Any], figures_dir: Path) -> str:
    """Write the P2 figures into ``figures_dir`` and return the Markdown section."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    figures = {
        "dvfs_offline_saving_vs_u.png": lambda p: _offline_figure(savings, p),
        "dvfs_offline_saving_vs_l_rules.png": lambda p: _variants_figure(savings, p),
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
        "Savings are `1 − E(DVFS on)/E(same algorithm, rules and constants, DVFS off)`, means over task "
        "sets; slot 60 s, wide interval V ≤ 1.2. The headline numbers use P2's text and the paper's "
        "constants (idle 37 W per pair, Δ = 90 W·slot per pair, ρ = 2). The reference values are the "
        "authors' released CSVs.",
        "",
        "- Offline saving at l = 1 (EDL, θ = 1; P2's rules, 37 W): "
        f"**{_pct(block.get('offline_saving_l1'))} %** (paper 33–35 %, CSV 33.4–33.6 %).",
        f"- Online saving at U = 1.6, l = 16 (EDL, θ = 1; P2's rules, 37 W): "
        f"**{_pct(block.get('online_saving_u16_l16'))} %** (CSV 26.1 %, not regenerable from their code).",
        f"- Alg. 1 single-task bound on the synthetic library (wide): "
        f"{_pct(block.get('single_task_bound_wide'))} % (paper: at most 36 %).",
        "",
        *rules_legend(),
    ]
    if len(savings):
        lines += [
            "![offline](figures/dvfs_offline_saving_vs_u.png) "
            "![rules](figures/dvfs_offline_saving_vs_l_rules.png)",
            "![online](figures/dvfs_online_saving.png) ![breakdown](figures/dvfs_energy_breakdown.png)",
            "",
            *offline_tables(savings),
            *pairs_table(rows),
            "",
            *online_tables(savings),
            *idle_share_table(rows),
            "",
        ]
    lines += [*csv_section(), ""]
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
    lines += ["", *(_differences(rows, savings) if len(savings) else []), ""]
    return "\n".join(lines)


def _idle_ratio(rows: pd.DataFrame, mode: str, l: int) -> float:
    """Continuous over whole-slot idle energy of the authors'-rules schedules (EDL, θ = 1, DVFS on, 37 W)."""
    part = rows[
        (rows["mode"] == mode)
        & (rows["rules"] == "hkbu")
        & (rows["constants"] == "paper")
        & (rows["algo"] == "edl")
        & np.isclose(rows["theta"], 1.0)
        & rows["dvfs"].astype(bool)
        & (rows["l"] == l)
    ]
    idle = part.groupby("idle_accounting")["energy_idle_j"].sum()
    if "whole-slot" not in idle or not idle["whole-slot"]:
        return math.nan
    return float(idle.get("continuous", math.nan) / idle["whole-slot"])


def _differences(rows: pd.DataFrame, savings: pd.DataFrame) -> list[str]:
    def off16(variant: str, constants: str) -> str:
        return _pct(
            saving(savings, mode="offline", algo="edl", theta=1.0, l=16, variant=variant, constants=constants)
        )

    def on16(variant: str, constants: str) -> str:
        return _pct(
            saving(savings, mode="online", algo="edl", theta=1.0, l=16, variant=variant, constants=constants)
        )

    ratio = {l: _idle_ratio(rows, "online", l) for l in (1, 16)} if "rules" in rows.columns else {}
    offline = savings[(savings["mode"] == "offline") & (savings["algo"] == "edl")]
    accounting = [
        abs(
            saving(offline, theta=1.0, l=l, variant="hkbu", constants=c)
            - saving(offline, theta=1.0, l=l, variant="hkbu_continuous", constants=c)
        )
        for l in (1, 2, 4, 8, 16)
        for c in ("paper", "code")
    ]
    offline_shift = max((x for x in accounting if not math.isnan(x)), default=math.nan)
    text = [
        f"""- **Rules, offline.** The saving at l = 16 (EDL, θ = 1) is {off16("p2_sorted", "paper")} % with
        Alg. 3 grouping, {off16("p2_on_demand", "paper")} % with servers filled in opening order and
        {off16("hkbu", "paper")} % with every rule of the authors' code, all at 37 W; the CSV has 22.3–22.9 %.
        The decline with l comes from the grouping rule, not from the constants: Alg. 3 leaves almost no idle
        time. At their code's 85 W the authors' rules would give {off16("hkbu", "code")} %; the CSVs were made
        at 37 W (cross-check above), so the 37 W rows are the like-for-like ones.""",
        f"""- **Rules, online.** With the authors' rules the l = 16 saving is {on16("hkbu", "paper")} % at
        37 W and {on16("hkbu", "code")} % at 85 W ({on16("p2_sorted", "paper")} % with P2's text): at T = 0
        every deadline-meeting task takes a pair of its own, and their Alg. 1 ignores deadlines, so each
        task whose optimum is late turns on a server with l − 1 idle pairs. P2's text packs the batch and
        solves under the deadline.""",
        f"""- **Idle accounting.** Counting busy time in whole slots (their code) instead of continuously
        moves offline savings by at most {100 * offline_shift:.2f} points; online the continuous count has
        {_pct(ratio.get(1, math.nan) - 1)} % more idle energy at l = 1 and {_pct(ratio.get(16, math.nan) - 1)}
        % more at l = 16 (authors' rules, 37 W), a small share of the total.""",
        """- **Constants.** Placement never depends on the idle power or the turn-on cost (ρ = 2 in both), so
        the study accounts every schedule under both sets; only idle and turn-on energy change.""",
        """- **Fits.** The fitted real applications give much smaller wide-interval savings than the paper's
        23–44 %: the fitted constant power share P0/P* is 0.2–0.8 and γ/P* up to 0.75 (paper library
        0.20–0.41 and 0.1–0.2), which leaves little to gain from lowering V. The narrow-interval savings
        (≈ 4 %) agree with the paper's 0.5–10 %. The paper kept '20 applications with good fitting results';
        which 20, and its exact fitting details, are unknown.""",
    ]
    return ["**Where we differ and why.**", *(" ".join(item.split()) for item in text)]
