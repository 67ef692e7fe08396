"""Table III summaries: ET per method of each variant; the preset, deadline-rule and GPU blocks.

Blocks (``summarize``):

* ``table3``, ``table3_detail``, ``table3_extra`` — the chosen preset's A100 variant under P1's deadline rule
  (the keys of ``mig run --json``; ``table3_extra.preset`` says which preset);
* ``presets.<preset>.{table3, table3_detail, table3_extra}`` — every preset under P1's deadline rule;
* ``deadline_rules.<rule>.<preset>.{table3, table3_detail}`` — every deadline rule (A100);
* ``gpus.<gpu>.{table3, table3_detail}`` — every GPU at :data:`GPU_PRESET` under P1's deadline rule;
* ``table3_sensitivity`` — :mod:`.table3_sensitivity`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from wattsched.experiments.protocol import compare, et_frame, per_day_et, stacked
from wattsched.studies.table3 import DEFAULT_GPU
from wattsched.studies.table3_sensitivity import sensitivity_block

__all__ = [
    "ET_POOL",
    "GPU_PRESET",
    "METHODS",
    "PAPER_CLAIMS",
    "PAPER_TABLE3",
    "bound_block",
    "flag",
    "summarize",
    "variant_block",
]

#: P1 Table III, ET; lower is better.
PAPER_TABLE3: dict[str, float] = {"no-mig": 8.56, "static": 3.97, "day-night": 3.68, "dynamic": 2.82}
#: P1's claimed improvements of Dynamic over each method (abstract and conclusion).
PAPER_CLAIMS: dict[str, float] = {"day-night": 0.26, "static": 0.31, "no-mig": 0.68}
#: ET's pool: the four methods of P1's Table III (Static = the GPU's static role).
ET_POOL: tuple[str, ...] = ("no-mig", "static", "day-night", "dynamic")
#: Method labels in report order.
METHODS: tuple[str, ...] = (
    "no-mig",
    "static",
    "static-best",
    "day-night",
    "dynamic",
    "lookahead",
    "dynamic-rollout",
)
#: The DQN improved by rollouts (the study's ``dqn_rollout`` option), scored with the pool's ``a``.
ROLLOUT = "dynamic-rollout"
#: The preset of the per-GPU comparison ("P1 on an H200").
GPU_PRESET = "paper"
#: P1's order, best first; the planner may stand in for the DQN.
ORDER: tuple[str, ...] = ("dynamic", "day-night", "static", "no-mig")


def flag(values: pd.Series) -> pd.Series:
    """A boolean column read back from Parquet, where the store may have written it as "True"/"False"."""
    return values.map(lambda v: str(v).strip().lower() in ("true", "1", "1.0"))


def _order_holds(table: dict[str, float], first: str) -> bool | None:
    order = [first, *ORDER[1:]]
    if not all(m in table for m in order):
        return None
    return all(table[x] < table[y] for x, y in itertools.pairwise(order))


def _mean_ci(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and its 95 % interval (normal approximation; the interval is the mean alone for one value)."""
    mean = float(values.mean())
    half = 1.96 * float(values.std(ddof=1)) / np.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, mean - half, mean + half


def bound_block(scored: pd.DataFrame, bounds: pd.DataFrame) -> dict[str, Any]:
    """Each method's energy and ET beside the days' lower bounds (docs/concepts/bound.md), on the days that
    have one: ``gap_to_bound`` = mean over the days of energy / bound − 1, with its 95 % interval; the same
    for ET, which here uses the bound's ``a`` (the pilot's, ``bound_et_coefficient_per_j``) for the methods
    too, so that the method and its bound are scored alike."""
    from wattsched.metrics import et_values

    per_day = bounds.drop_duplicates("day").set_index("day")
    energy_bound = per_day["bound_energy_j"].astype(float)
    et_bound = per_day["bound_et"].astype(float)
    a = float(per_day["bound_et_coefficient_per_j"].iloc[0])
    methods: dict[str, Any] = {}
    for method, group in scored.groupby("method", sort=False):
        mine = group.set_index("day")
        common = mine.index.intersection(per_day.index)
        if common.empty:
            continue
        energy = mine.loc[common, "energy_j"].to_numpy(dtype=float)
        et = np.asarray(et_values(energy, mine.loc[common, "avg_tardiness_s"].to_numpy(dtype=float), a))
        gap, low, high = _mean_ci(energy / energy_bound.loc[common].to_numpy() - 1.0)
        et_gap, et_low, et_high = _mean_ci(et / et_bound.loc[common].to_numpy() - 1.0)
        methods[str(method)] = {
            "days": len(common),
            "energy_j": float(energy.mean()),
            "gap_to_bound": gap,
            "gap_ci95": [low, high],
            "et": float(et.mean()),
            "et_gap_to_bound": et_gap,
            "et_gap_ci95": [et_low, et_high],
        }
    return {
        "days": len(per_day),
        "resolution_s": float(per_day["bound_resolution_s"].iloc[0]),
        "et_coefficient_per_j": a,
        "bound_energy_j": float(energy_bound.mean()),
        "bound_et": float(et_bound.mean()),
        "bound_wall_s": float(per_day["bound_wall_s"].astype(float).mean()),
        "methods": methods,
    }


def variant_block(
    days: pd.DataFrame, selection: pd.DataFrame, bounds: pd.DataFrame | None = None
) -> dict[str, Any]:
    """``{table3, table3_detail, table3_extra}`` of one variant's day and selection rows, and ``table3_bound``
    (:func:`bound_block`) when ``bounds`` has rows."""
    scored, a = et_frame(days, [m for m in ET_POOL if (days["method"] == m).any()])
    per_day = per_day_et(scored)
    table = {m: float(per_day[m].mean()) for m in METHODS if m in per_day}
    detail = {}
    for method, group in scored.groupby("method", sort=False):
        detail[str(method)] = {
            "energy_j": float(group["energy_j"].mean()),
            "avg_tardiness_s": float(group["avg_tardiness_s"].mean()),
            "repartitions": float(group["repartitions"].mean()),
            "late_share": float(group["late_jobs"].sum() / max(int(group["jobs"].sum()), 1)),
            "busy_share": 1.0 - float(group["idle_share"].mean()),
            "jobs_per_day": float(group["jobs"].mean()),
            "days": len(group),
        }
    improvements = {}
    for ours in ("dynamic", "lookahead", ROLLOUT):
        for other in ("no-mig", "static", "static-best", "day-night", "dynamic"):
            if ours != other and ours in per_day and other in per_day:
                improvements[f"{ours}_vs_{other}"] = compare(per_day[ours], per_day[other])
    static = days.loc[days["method"] == "static", "configuration"]
    best = selection.loc[flag(selection["chosen"]), "configuration"] if len(selection) else pd.Series([])
    first = days.iloc[0]
    train = days.loc[days["method"] == "dynamic"]
    extra = {
        "variant": str(first["variant"]),
        "preset": str(first["preset"]),
        "deadline_rule": str(first["deadline_rule"]),
        "gpu": str(first["gpu"]),
        "rate_multiplier": float(first["rate_multiplier"]),
        "et_coefficient_per_j": a,
        "et_pool": [m for m in ET_POOL if m in per_day],
        "static_configuration": str(static.iloc[0]) if len(static) else None,
        "static_best_configuration": str(best.iloc[0]) if len(best) else None,
        "selection_et": {
            str(c): float(e) for c, e in zip(selection["configuration"], selection["et"], strict=True)
        }
        if len(selection)
        else {},
        "improvements": improvements,
        "paper_order_holds": _order_holds(table, "dynamic"),
        "paper_order_holds_lookahead": _order_holds(table, "lookahead"),
        "paper_order_holds_rollout": _order_holds(table, ROLLOUT),
        "dqn_train_wall_s": float(train["train_wall_s"].iloc[0])
        if "train_wall_s" in train and len(train)
        else None,
        "dqn_train_timesteps": int(train["train_timesteps"].iloc[0])
        if "train_timesteps" in train and len(train)
        else None,
    }
    block = {"table3": table, "table3_detail": detail, "table3_extra": extra}
    if bounds is not None and len(bounds):
        block["table3_bound"] = bound_block(scored, bounds)
    return block


def variant_frames(rows: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """``variant -> (day rows, selection rows)``, in the order the rows name them."""
    if "variant" not in rows:
        return {}
    out = {}
    for name in dict.fromkeys(rows["variant"].dropna()):
        mine = rows[rows["variant"] == name]
        days = mine[mine["kind"] == "day"]
        if len(days):
            out[str(name)] = (days, mine[mine["kind"] == "selection"])
    return out


def _on_common_days(group: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> dict[str, dict[str, Any]]:
    """Variant blocks over the days every variant of ``group`` ran (comparisons on the same days)."""
    common: set[int] | None = None
    for days, _ in group.values():
        mine = set(days["day"].astype(int))
        common = mine if common is None else common & mine
    return {
        name: variant_block(days[days["day"].astype(int).isin(common or set())], selection)
        for name, (days, selection) in group.items()
    }


def summarize(rows: pd.DataFrame, preset: str) -> dict[str, Any]:
    """Every block of the module docstring from the study's rows. The ``deadline_rules`` and ``gpus``
    comparisons use the days common to the variants they compare (extra variants run fewer days)."""
    blocks: dict[str, Any] = {}
    presets: dict[str, Any] = {}
    rules: dict[str, Any] = {}
    gpus: dict[str, Any] = {}
    frames = variant_frames(rows)
    columns = {name: days.iloc[0] for name, (days, _) in frames.items()}
    for name, (days, selection) in frames.items():
        first = columns[name]
        if first["gpu"] == DEFAULT_GPU and first["deadline_rule"] == "p1":
            bounds = rows[(rows["variant"] == name) & (rows["kind"] == "bound")]
            block = variant_block(days, selection, bounds)
            presets[str(first["preset"])] = block
            if first["preset"] == preset:
                blocks.update(block)
    on_a100 = {n: f for n, f in frames.items() if columns[n]["gpu"] == DEFAULT_GPU}
    for block in _on_common_days(on_a100).values():
        extra = block["table3_extra"]
        rules.setdefault(extra["deadline_rule"], {})[extra["preset"]] = {
            k: block[k] for k in ("table3", "table3_detail")
        }
    compared = {
        n: f
        for n, f in frames.items()
        if columns[n]["deadline_rule"] == "p1" and columns[n]["preset"] == GPU_PRESET
    }
    for block in _on_common_days(compared).values():
        gpus[block["table3_extra"]["gpu"]] = block
    if presets:
        blocks["presets"] = presets
    if rules:
        blocks["deadline_rules"] = rules
    if gpus:
        blocks["gpus"] = gpus
    if sens := sensitivity_block(rows):
        blocks["table3_sensitivity"] = sens
    return blocks


def repartitions_per_hour(days: pd.DataFrame) -> pd.DataFrame:
    """Mean repartitions per hour of day (columns 0..23) per method (rows)."""
    return pd.DataFrame(
        {
            str(m): stacked(g, "repartitions_per_hour").mean(axis=0)
            for m, g in days.groupby("method", sort=False)
        }
    ).T


def configuration_share(days: pd.DataFrame, method: str) -> tuple[list[str], Any] | None:
    """Fig. 11: the configuration ids and each one's share of time per 4-hour interval (intervals × ids)."""
    group = days[days["method"] == method]
    if group.empty:
        return None
    table = stacked(group, "configuration_time_s").sum(axis=0)
    share = table / table.sum(axis=1, keepdims=True).clip(min=1e-12)
    return [str(c) for c in group["configurations"].iloc[0]], share
