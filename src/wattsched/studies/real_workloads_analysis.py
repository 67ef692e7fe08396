"""Summary and report of the real-workloads study (rows from ``real_workloads.run_real_workload``).

ET (docs/concepts/et.md) is pooled *within* one workload: for the in-configuration ranking over all its
policies × configurations × days, for repartitioning over its three methods × days. ETs of different workloads
are therefore not comparable with each other; rankings and relative gaps are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wattsched.hardware.catalogue import load_gpu
from wattsched.metrics import et_coefficient, et_values

__all__ = ["kendall_tau", "report", "summarize"]

BASELINE = "synthetic"


def _with_et(frame: pd.DataFrame) -> pd.DataFrame:
    a = et_coefficient(frame["energy_j"], frame["avg_tardiness_s"])
    return frame.assign(et=et_values(frame["energy_j"], frame["avg_tardiness_s"], a))


def kendall_tau(first: list[str], second: list[str]) -> float:
    """Kendall's rank correlation of two orderings of the same items (1 = same order, -1 = reversed)."""
    common = [x for x in first if x in second]
    pos = {x: second.index(x) for x in common}
    pairs = [(i, j) for i in range(len(common)) for j in range(i + 1, len(common))]
    if not pairs:
        return 1.0
    concordant = sum(1 if pos[common[i]] < pos[common[j]] else -1 for i, j in pairs)
    return concordant / len(pairs)


def _workloads(rows: pd.DataFrame) -> list[str]:
    from wattsched.studies.real_workloads import WORKLOADS

    present = set(rows.loc[rows["part"] != "profile", "workload"])
    return [w for w in WORKLOADS if w in present]


def summarize(rows: pd.DataFrame, data_dir: Path | None = None) -> dict[str, Any]:
    if rows.empty or "part" not in rows.columns:
        return {
            "real_workloads": {
                "available": False,
                "reason": "data files (traces/, mig-profiles/) not found" if data_dir is None else "no rows",
            }
        }
    in_config: dict[str, dict[str, float]] = {}
    detail: dict[str, dict[str, dict[str, float]]] = {}
    ranking: dict[str, list[str]] = {}
    best_config: dict[str, str] = {}
    repartitioning: dict[str, dict[str, float]] = {}
    rep_detail: dict[str, dict[str, dict[str, float]]] = {}
    facts: dict[str, dict[str, float]] = {}
    for workload in _workloads(rows):
        mine = rows[(rows["workload"] == workload) & (rows["part"] != "profile")]
        runs = _with_et(mine[mine["part"] == "in-config"])
        by_policy = runs.groupby("policy")
        in_config[workload] = {str(p): float(v) for p, v in by_policy["et"].mean().items()}
        detail[workload] = {
            str(p): {
                "energy_j": float(g["energy_j"].mean()),
                "avg_tardiness_s": float(g["avg_tardiness_s"].mean()),
                "preemptions": float(g["preemptions"].mean()),
                "late_share": float((g["late_jobs"] / g["jobs"]).mean()),
            }
            for p, g in by_policy
        }
        ranking[workload] = sorted(in_config[workload], key=lambda p: (in_config[workload][p], p))
        restricted = runs[runs["policy"] == "edf-ss-restricted"]
        if not restricted.empty:
            per_config = restricted.groupby("config")["et"].mean()
            best_config[workload] = str(per_config.idxmin())
        reps = mine[mine["part"] == "repartition"]
        if not reps.empty:
            reps = _with_et(reps)
            repartitioning[workload] = {
                str(m): float(v) for m, v in reps.groupby("method")["et"].mean().items()
            }
            rep_detail[workload] = {
                str(m): {
                    "energy_j": float(g["energy_j"].mean()),
                    "avg_tardiness_s": float(g["avg_tardiness_s"].mean()),
                    "repartitions": float(g["repartitions"].mean()),
                }
                for m, g in reps.groupby("method")
            }
        days = mine.drop_duplicates("iteration")
        facts[workload] = {
            "days": len(days),
            "rate_per_min": float(days["rate_per_min"].mean()),
            "offered_load": float(days["offered_load"].mean()),
            "inference_share": float(days["inference_share"].mean()),
        }
    agreement = {w: kendall_tau(ranking[BASELINE], r) for w, r in ranking.items() if BASELINE in ranking}
    return {
        "real_workloads": {
            "available": True,
            "in_config": in_config,
            "in_config_detail": detail,
            "ranking": ranking,
            "rank_agreement_vs_synthetic": agreement,
            "best_config_restricted": best_config,
            "repartitioning": repartitioning,
            "repartitioning_detail": rep_detail,
            "workloads": facts,
        }
    }


def _changes(block: dict[str, Any]) -> list[str]:
    """Plain sentences on what differs from the synthetic baseline."""
    out = []
    base_rank = block["ranking"].get(BASELINE, [])
    base_rep = block["repartitioning"].get(BASELINE, {})
    for workload, order in block["ranking"].items():
        if workload == BASELINE:
            continue
        tau = block["rank_agreement_vs_synthetic"].get(workload, float("nan"))
        moved = [
            f"{p} {base_rank.index(p) + 1}→{order.index(p) + 1}"
            for p in order
            if p in base_rank and base_rank.index(p) != order.index(p)
        ]
        text = f"- **{workload}**: best {order[0]} (synthetic: {base_rank[0] if base_rank else 'n/a'}); "
        text += (
            f"Kendall τ vs synthetic {tau:+.2f}; "
            + ("ranks moved: " + ", ".join(moved) if moved else "same order")
            + "."
        )
        best = block["best_config_restricted"].get(workload)
        if best is not None:
            text += (
                f" Best fixed configuration under restricted EDF-SS: cfg {best} "
                f"(synthetic: cfg {block['best_config_restricted'].get(BASELINE, 'n/a')})."
            )
        rep = block["repartitioning"].get(workload)
        if rep and base_rep:
            order_rep = sorted(rep, key=lambda m: rep[m])
            base_order = sorted(base_rep, key=lambda m: base_rep[m])
            text += f" Repartitioning order {' < '.join(order_rep)}" + (
                " (as synthetic)." if order_rep == base_order else f" (synthetic: {' < '.join(base_order)})."
            )
        out.append(text)
    return out


def _plot(rows: pd.DataFrame, block: dict[str, Any], figures_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures_dir.mkdir(parents=True, exist_ok=True)
    names = []
    workloads = list(block["in_config"])
    policies = sorted({p for w in workloads for p in block["in_config"][w]})
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    width = 0.8 / max(len(policies), 1)
    for k, policy in enumerate(policies):
        # ET relative to the workload's best policy: comparable across workloads.
        values = [block["in_config"][w][policy] / min(block["in_config"][w].values()) for w in workloads]
        axes[0].bar(np.arange(len(workloads)) + k * width, values, width, label=policy)
    axes[0].set_xticks(np.arange(len(workloads)) + 0.4 - width / 2, workloads, rotation=25, ha="right")
    axes[0].set_ylabel("ET / best ET of the workload")
    axes[0].set_title("In-configuration ranking (mean over configs and days)")
    axes[0].set_ylim(0, 1.5)
    axes[0].legend(fontsize=7, ncol=3, loc="upper center")
    reps = block["repartitioning"]
    methods = sorted({m for w in reps for m in reps[w]})
    width = 0.8 / max(len(methods), 1)
    rep_workloads = list(reps)
    for k, method in enumerate(methods):
        values = [reps[w].get(method, np.nan) / min(reps[w].values()) for w in rep_workloads]
        axes[1].bar(np.arange(len(rep_workloads)) + k * width, values, width, label=method)
    axes[1].set_xticks(
        np.arange(len(rep_workloads)) + 0.4 - width / 2, rep_workloads, rotation=25, ha="right"
    )
    axes[1].set_ylabel("ET / best ET of the workload")
    axes[1].set_title("Repartitioning methods")
    axes[1].legend(fontsize=7, ncol=3, loc="upper center")
    fig.tight_layout()
    fig.savefig(figures_dir / "real_workloads_et.png", dpi=110)
    plt.close(fig)
    names.append("real_workloads_et.png")
    profiles = rows[rows["part"] == "profile"]
    if not profiles.empty:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for name, group in profiles.groupby("workload"):
            hours = [*group["hour"], 24]  # close the last hour of the step plot
            rates = [*group["rate_profile_per_min"], group["rate_profile_per_min"].iloc[-1]]
            ax.step(hours, rates, where="post", label=str(name).removeprefix("profile:"))
        ax.set_xlabel("hour of day (Alibaba 2023: hours since trace start, mod 24)")
        ax.set_ylabel("jobs/min (mean scaled to P1's)")
        ax.set_title("Hourly arrival profiles derived from the traces vs P1 Fig. 5")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(figures_dir / "real_workloads_profiles.png", dpi=110)
        plt.close(fig)
        names.append("real_workloads_profiles.png")
    return names


def report(
    rows: pd.DataFrame, data_dir: Path | None, figures_dir: Path, max_duration_s: float = 14_400.0
) -> str:
    from wattsched.experiments.report import markdown_table

    lines = ["## Real workloads (Philly, Alibaba 2023, measured slice speeds)", ""]
    block = summarize(rows, data_dir)["real_workloads"]
    if not block["available"]:
        return "\n".join(
            [
                *lines,
                f"Not run: {block['reason']}. Download the Alibaba 2023 pod list "
                "(`openb_pod_list_default.csv`, not redistributable) into `data/traces/` (see "
                "`data/traces/README.md`), set `WATTSCHED_DATA` to a folder holding `traces/` and "
                "`mig-profiles/`, or pass `--study-option real-workloads.data_dir=DIR`.",
                "",
            ]
        )
    lines += [
        "Each replayed day is thinned to the job count of the synthetic day with the same seed and its "
        "durations scaled to the same offered load (jobs observed longer than "
        f"{max_duration_s / 3600:g} h are left out "
        "first); `-measured` workloads draw per-job speed-up curves from the measured slice-speed table "
        "instead of P1's linear/sublinear/capped families; `synthetic-openb-profile` uses the hourly arrival "
        "profile derived from the Alibaba 2023 pod list. ET is pooled within each workload, so compare "
        "rankings, not ET values across workloads.",
        "",
        "### Workloads",
        "",
        markdown_table(
            ["workload", "days", "jobs/min", "offered load", "inference share"],
            [
                [w, f["days"], f["rate_per_min"], f["offered_load"], f["inference_share"]]
                for w, f in block["workloads"].items()
            ],
        ),
        "### In-configuration ranking (ET, mean over all configurations and days)",
        "",
    ]
    workloads = list(block["in_config"])
    policies = block["ranking"].get(BASELINE) or sorted(block["in_config"][workloads[0]])
    lines += [
        markdown_table(
            ["policy", *workloads],
            [[p, *[block["in_config"][w].get(p, float("nan")) for w in workloads]] for p in policies],
        ),
        "",
    ]
    lines += [
        markdown_table(
            ["workload", "ranking (best first)", "τ vs synthetic", "best cfg (restricted EDF-SS)"],
            [
                [
                    w,
                    " < ".join(r),
                    f"{block['rank_agreement_vs_synthetic'].get(w, float('nan')):+.2f}",
                    block["best_config_restricted"].get(w, "n/a"),
                ]
                for w, r in block["ranking"].items()
            ],
        ),
        "",
    ]
    reps = block["repartitioning"]
    if reps:
        methods = sorted({m for w in reps for m in reps[w]})
        gpu = load_gpu(None)
        roles = f"Static = cfg {gpu.role('static')}, Day-Night = {gpu.role('day')}/{gpu.role('night')}"
        lines += [
            f"### Repartitioning (No-MIG, {roles} on the {gpu.name}; ET per workload)",
            "",
            markdown_table(
                ["workload", *methods, *[f"{m} avg tardiness min" for m in methods]],
                [
                    [
                        w,
                        *[reps[w].get(m, float("nan")) for m in methods],
                        *[block["repartitioning_detail"][w][m]["avg_tardiness_s"] / 60 for m in methods],
                    ]
                    for w in reps
                ],
            ),
            "Day-Night switches at 05:00 and 17:00 of the replayed clock; "
            "the Alibaba 2023 trace publishes no "
            "time of day, so its 'day' is hours 5-17 after the trace start (mod 24).",
            "",
        ]
    lines += ["### What changed against the synthetic baseline", "", *_changes(block), ""]
    for name in _plot(rows, block, figures_dir):
        lines.append(f"![{name}](figures/{name})")
    return "\n".join(lines) + "\n"
