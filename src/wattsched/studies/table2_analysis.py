"""Table II analysis: pooled ET (docs/concepts/et.md), the qualitative checks, figures and the report
section."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pandas as pd

from wattsched.experiments.grid import GridConfig
from wattsched.metrics import et_coefficient, et_values
from wattsched.studies.p1_findings import paper_findings, uniform_configurations

__all__ = [
    "ET_FIGURE",
    "PAPER_POLICIES",
    "PAPER_TABLE2",
    "checks",
    "condition_frames",
    "configs_of",
    "paired_differences",
    "per_config",
    "policies_of",
    "ranking_pairs",
    "summarize",
]

#: P1 Table II, ET in the paper's units; lower is better.
PAPER_TABLE2: dict[str, float] = {"edf-fs": 5.53, "edf-ss": 5.37, "llf": 6.32, "lalf": 6.83}
#: The ET pool of Table II: the four algorithms of the paper (docs/concepts/et.md).
PAPER_POLICIES: tuple[str, ...] = ("edf-fs", "edf-ss", "llf", "lalf")
#: Relative ET gap within which two policies "tie" / "match", and within which "nearly ties" holds.
TIE = 0.01
NEAR_TIE = 0.02
#: Restricted vs unrestricted EDF-SS "about equal" ET.
ABOUT_EQUAL = 0.05
#: Figure number of each condition's ET-per-configuration plot in P1.
ET_FIGURE = {"rate-0.1": 7, "rate-0.75": 8, "inference-20": 9, "default": 10}
LOW_LEVELS = (1, 2, 3)  # busy but below 4/7 of the GPU


def _cfgs(ids: tuple[str, ...] | list[str]) -> str:
    return "cfgs " + ", ".join(ids)


def _policies(rows: pd.DataFrame, config: GridConfig) -> list[str]:
    present = set(rows["policy"])
    return [p for p in config.policies if p in present]


def _configs(rows: pd.DataFrame, config: GridConfig) -> list[str]:
    present = set(rows["config"])
    return [str(c) for c in config.configuration_ids() if str(c) in present]


def _with_et(frame: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Rows with per-run ET and its energy and tardiness parts; ``a`` pooled over the paper's algorithms."""
    pool = frame[frame["policy"].isin(PAPER_POLICIES)]
    pool = pool if len(pool) else frame
    a = et_coefficient(pool["energy_j"], pool["avg_tardiness_s"])
    et = et_values(frame["energy_j"], frame["avg_tardiness_s"], a)
    energy_part = a * frame["energy_j"].to_numpy(float) / (a + 1.0)
    return frame.assign(et=et, et_energy=energy_part, et_tardiness=et - energy_part), a


def condition_frames(rows: pd.DataFrame, config: GridConfig) -> dict[str, tuple[pd.DataFrame, float]]:
    """Each condition's rows with ET columns, each condition pooled on its own."""
    return {
        c.name: _with_et(rows[rows["condition"] == c.name])
        for c in config.conditions
        if (rows["condition"] == c.name).any()
    }


def _by(frame: pd.DataFrame, column: str, order: list[str]) -> dict[str, float]:
    means = frame.groupby("policy")[column].mean()
    return {p: float(means[p]) for p in order if p in means.index}


def _per_config(frame: pd.DataFrame, column: str, policies: list[str], configs: list[str]) -> pd.DataFrame:
    """Mean of ``column`` per configuration (rows) and policy (columns); KeyError for an absent policy."""
    missing = [p for p in policies if p not in set(frame["policy"])]
    if missing:
        raise KeyError(missing[0])
    table = frame.pivot_table(index="config", columns="policy", values=column, aggfunc="mean")
    return table.reindex(index=configs, columns=policies)


def summarize(rows: pd.DataFrame, config: GridConfig) -> dict[str, Any]:
    policies, configs = _policies(rows, config), _configs(rows, config)
    frames = condition_frames(rows, config)
    blocks: dict[str, Any] = {"table2_conditions": {}, "table2_per_config": {}}
    for name, (frame, a) in frames.items():
        runs = frame.groupby("policy").size()
        blocks["table2_conditions"][name] = {
            "a": a,
            "runs_per_policy": int(runs.min()) if len(runs) else 0,
            **{
                column: _by(frame, column, policies)
                for column in (
                    "et",
                    "energy_j",
                    "avg_tardiness_s",
                    "max_tardiness_s",
                    "preemptions",
                    "late_jobs",
                )
            },
        }
        per_config = _per_config(frame, "et", policies, configs)
        blocks["table2_per_config"][name] = {
            c: {p: float(v) for p, v in per_config.loc[c].items()} for c in per_config.index
        }
    if config.default_condition in frames:
        frame, a = frames[config.default_condition]
        blocks["table2"] = _by(frame, "et", policies)
        blocks["table2_detail"] = {
            p: {
                "energy_j": _by(frame, "energy_j", [p])[p],
                "avg_tardiness_s": _by(frame, "avg_tardiness_s", [p])[p],
                "preemptions": _by(frame, "preemptions", [p])[p],
            }
            for p in policies
        }
        measured = [
            p for p in sorted(blocks["table2"], key=blocks["table2"].__getitem__) if p in PAPER_TABLE2
        ]
        blocks["table2_meta"] = {
            "a": a,
            "pool": [p for p in PAPER_POLICIES if p in policies],
            "condition": config.default_condition,
            "iterations": int(frame["iteration"].nunique()),
            "configurations": configs,
            "paper": PAPER_TABLE2,
            "ranking": measured,
            "paper_ranking": sorted(PAPER_TABLE2, key=PAPER_TABLE2.__getitem__),
            "paired_differences": ranking_pairs(frame, measured),
        }
    blocks["table2_checks"] = {
        key: {"ok": ok, "claim": claim, "measured": text} for key, claim, ok, text in checks(rows, config)
    }
    return blocks


def paired_differences(frame: pd.DataFrame, first: str, second: str) -> dict[str, float]:
    """ET(first) − ET(second) paired run by run (same queue and configuration: common random numbers).

    Returns the mean difference, its 95 % half-width (normal approximation over the paired runs), the
    number of pairs and the share of pairs where the two policies gave identical energy and tardiness.
    """
    keys = ["cell", "config"]
    a = frame[frame["policy"] == first].set_index(keys)
    b = frame[frame["policy"] == second].set_index(keys).reindex(a.index)
    diff = (a["et"] - b["et"]).to_numpy(float)
    same = (a["energy_j"] == b["energy_j"]) & (a["avg_tardiness_s"] == b["avg_tardiness_s"])
    n = diff.size
    half = 1.96 * float(diff.std(ddof=1)) / n**0.5 if n > 1 else float("nan")
    return {
        "mean": float(diff.mean()) if n else float("nan"),
        "ci95": half,
        "pairs": float(n),
        "identical_share": float(same.mean()) if n else float("nan"),
    }


def ranking_pairs(frame: pd.DataFrame, ranking: list[str]) -> dict[str, dict[str, float]]:
    """Paired differences of each neighbour pair of ``ranking`` (better first)."""
    return {f"{a} vs {b}": paired_differences(frame, a, b) for a, b in itertools.pairwise(ranking)}


# -- the qualitative findings of P1 Sec. V-B ----------------------------------------------------------
Check = tuple[str, str, bool | None, str]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def _low_share(frame: pd.DataFrame) -> pd.Series:
    low = frame[[f"busy_time_u{u}_s" for u in LOW_LEVELS]].sum(axis=1) / frame["end_s"]
    return low.groupby(frame["policy"]).mean()


def checks(rows: pd.DataFrame, config: GridConfig) -> list[Check]:
    """Each finding as (id, claim, passed or None when not measurable at this grid, measured figure)."""
    frames = condition_frames(rows, config)
    out: list[Check] = []
    for key, claim, fn in _CHECKS:
        try:
            ok, text = fn(frames, config)
        except KeyError as missing:  # a condition, policy or configuration this run does not have
            ok, text = None, f"not measured (no {missing} in this run)"
        out.append((key, claim, ok, text))
    return out


def _default(frames: dict[str, tuple[pd.DataFrame, float]], config: GridConfig) -> pd.DataFrame:
    return frames[config.default_condition][0]


def _check_ranking(frames: Any, config: GridConfig) -> tuple[bool, str]:
    et = _by(_default(frames, config), "et", list(PAPER_POLICIES))
    missing = [p for p in PAPER_POLICIES if p not in et]
    if missing:
        raise KeyError(missing[0])
    order = sorted(et, key=et.__getitem__)
    return order == ["edf-ss", "edf-fs", "llf", "lalf"], " < ".join(f"{p} {et[p]:.2f}" for p in order)


def _best_on(
    policy: str, wanted: tuple[str, ...], tolerance: float, column: str = "et"
) -> Callable[[Any, GridConfig], tuple[bool, str]]:
    def check(frames: Any, config: GridConfig) -> tuple[bool, str]:
        frame = _default(frames, config)
        table = _per_config(
            frame, column, [p for p in PAPER_POLICIES if p in set(frame["policy"])], _configs(frame, config)
        )
        if policy not in table.columns:
            raise KeyError(policy)
        holds, misses = [], []
        for cfg in table.index:
            row = {str(k): float(v) for k, v in table.loc[cfg].to_dict().items()}
            mine = row.pop(policy)
            winner = min(row, key=row.__getitem__)
            if mine <= row[winner] * (1 + tolerance):
                holds.append(cfg)
            elif cfg in wanted:
                misses.append(f"cfg {cfg} {mine / row[winner] - 1:+.2%} vs {winner}")
        expected = [c for c in wanted if c in table.index]
        if not expected:
            raise KeyError(f"configurations {', '.join(wanted)}")
        ok = all(c in holds for c in expected)
        within = f" within {tolerance:.0%}" if tolerance else ""
        text = f"{policy} best{within} on cfgs {', '.join(holds) or 'none'}"
        return ok, text + (f"; not on {', '.join(misses)}" if misses else "")

    return check


def _check_ties(frames: Any, config: GridConfig) -> tuple[bool, str]:
    frame = _default(frames, config)
    table = _per_config(frame, "et", list(PAPER_POLICIES), _configs(frame, config))
    gaps = []
    for cfg in uniform_configurations():
        if cfg not in table.index:
            raise KeyError(f"configuration {cfg}")
        row = {str(k): float(v) for k, v in table.loc[cfg].to_dict().items()}
        gaps += [
            (cfg, "EDF", _rel(row["edf-fs"], row["edf-ss"])),
            (cfg, "LLF", _rel(row["llf"], row["lalf"])),
        ]
    ok = all(gap <= TIE for _, _, gap in gaps)
    return ok, "; ".join(f"cfg {c} {kind} gap {gap:.1%}" for c, kind, gap in gaps)


def _check_llf_short_late(frames: Any, config: GridConfig) -> tuple[bool, str]:
    late = _by(_default(frames, config), "late_inference_jobs", ["edf-fs", "edf-ss", "llf", "lalf"])
    ok = late["llf"] > max(late["edf-fs"], late["edf-ss"])
    return ok, "late inference jobs/run: " + ", ".join(f"{p} {v:.1f}" for p, v in late.items())


def _check_low_utilisation(frames: Any, config: GridConfig) -> tuple[bool, str]:
    frame = _default(frames, config)
    overall = _low_share(frame)
    example = paper_findings()["utilisation_example"]
    part = frame[frame["config"].astype(str) == example]
    if part.empty:
        raise KeyError(f"configuration {example}")
    low = _low_share(part)
    ok = overall["edf-ss"] > overall["edf-fs"] and low["edf-ss"] > low["edf-fs"]
    return ok, (
        f"time at 1-3/7 busy: all cfgs edf-ss {overall['edf-ss']:.1%} vs edf-fs {overall['edf-fs']:.1%}; "
        f"P1's example {example}: {low['edf-ss']:.1%} vs {low['edf-fs']:.1%}"
    )


def _ss_ratio(frame: pd.DataFrame) -> float:
    et = _by(frame, "et", list(PAPER_POLICIES))
    return et["edf-ss"] / min(v for p, v in et.items() if p != "edf-ss")


def _check_low_rate(frames: Any, config: GridConfig) -> tuple[bool, str]:
    low, default = _ss_ratio(frames["rate-0.1"][0]), _ss_ratio(_default(frames, config))
    # "improves" = the ratio drops by more than the tie tolerance (not by rounding noise)
    ok = low < default * (1 - TIE)
    return ok, f"ET(edf-ss)/best other: {low:.4f} at λ 0.1 vs {default:.4f} at λ 0.5"


def _check_high_rate(frames: Any, config: GridConfig) -> tuple[bool, str]:
    high, default = frames["rate-0.75"][0], _default(frames, config)
    et = _by(high, "et", list(PAPER_POLICIES))
    worst = max(et, key=et.__getitem__)
    rise = {
        c: _by(high, c, ["edf-ss"])["edf-ss"] / _by(default, c, ["edf-ss"])["edf-ss"]
        for c in ("max_tardiness_s", "avg_tardiness_s")
    }
    ok = worst == "edf-ss" and all(r > 1 for r in rise.values())
    return ok, (
        f"worst at λ 0.75: {worst} ({' '.join(f'{p} {v:.2f}' for p, v in et.items())}); edf-ss tardiness "
        f"×{rise['avg_tardiness_s']:.2f} avg, ×{rise['max_tardiness_s']:.2f} max vs λ 0.5"
    )


def _check_training_heavy(frames: Any, config: GridConfig) -> tuple[bool, str]:
    heavy, default = frames["inference-20"][0], _default(frames, config)
    et, energy = _by(heavy, "et", list(PAPER_POLICIES)), _by(heavy, "energy_j", list(PAPER_POLICIES))
    tard_heavy, tard_default = (_by(f, "avg_tardiness_s", list(PAPER_POLICIES)) for f in (heavy, default))
    worse = [p for p in PAPER_POLICIES if tard_heavy[p] > tard_default[p]]
    ok = (
        et["edf-ss"] <= et["edf-fs"] * (1 + NEAR_TIE)
        and min(energy, key=energy.__getitem__) == "edf-ss"
        and len(worse) == len(PAPER_POLICIES)
    )
    return ok, (
        f"ET edf-ss {et['edf-ss']:.2f} vs edf-fs {et['edf-fs']:.2f}; least energy: "
        f"{min(energy, key=energy.__getitem__)}; tardiness worse than at 80 % for "
        f"{', '.join(worse) or 'none'}"
    )


def _check_restricted_et(frames: Any, config: GridConfig) -> tuple[bool, str]:
    et = _by(_default(frames, config), "et", ["edf-ss", "edf-ss-restricted"])
    gap = et["edf-ss-restricted"] / et["edf-ss"] - 1
    return abs(
        gap
    ) <= ABOUT_EQUAL, f"restricted {et['edf-ss-restricted']:.2f} vs {et['edf-ss']:.2f} ({gap:+.1%})"


def _check_restricted_preemptions(frames: Any, config: GridConfig) -> tuple[bool, str]:
    frame = _default(frames, config)
    table = _per_config(frame, "preemptions", ["edf-ss", "edf-ss-restricted"], _configs(frame, config))
    table = table[table["edf-ss"] > 0]
    cut = 1 - table["edf-ss-restricted"] / table["edf-ss"]
    ok = bool(((cut >= 0.63) & (cut <= 0.99)).all())
    return ok, (
        f"fewer preemptions per configuration: {cut.min():.0%} (cfg {cut.idxmin()}) to "
        f"{cut.max():.0%} (cfg {cut.idxmax()})"
    )


def _check_ss_vs_llf_preemptions(frames: Any, config: GridConfig) -> tuple[bool, str]:
    pre = _by(_default(frames, config), "preemptions", ["edf-ss", "llf", "lalf"])
    ok = pre["edf-ss"] < min(pre["llf"], pre["lalf"])
    return ok, "preemptions/run: " + ", ".join(f"{p} {v:.0f}" for p, v in pre.items())


_SS_BEST = tuple(paper_findings()["edf_ss_best"])
_FS_BEST = tuple(paper_findings()["edf_fs_best"])

_CHECKS: tuple[tuple[str, str, Callable[[Any, GridConfig], tuple[bool, str]]], ...] = (
    ("ranking", "Table II ranking EDF-SS < EDF-FS < LLF < LALF", _check_ranking),
    (
        "edf_ss_best_cfgs",
        f"EDF-SS matches or beats the others on {_cfgs(_SS_BEST)}",
        _best_on("edf-ss", _SS_BEST, TIE),
    ),
    ("edf_fs_best_cfgs", f"EDF-FS is best on {_cfgs(_FS_BEST)}", _best_on("edf-fs", _FS_BEST, 0.0)),
    (
        "edf_fs_lowest_tardiness_cfgs",
        f"… owing to the lowest average tardiness on {_cfgs(_FS_BEST)}",
        _best_on("edf-fs", _FS_BEST, 0.0, "avg_tardiness_s"),
    ),
    (
        "ties_uniform_cfgs",
        f"On {_cfgs(uniform_configurations())} (one slice size) the EDF variants tie, as do the LLF variants",
        _check_ties,
    ),
    ("llf_short_jobs_late", "LLF pushes more short (inference) jobs late", _check_llf_short_late),
    (
        "edf_ss_low_utilisation",
        f"EDF-SS spends more time at low utilisation (< 4/7), e.g. on P1's example "
        f"{paper_findings()['utilisation_example']}",
        _check_low_utilisation,
    ),
    ("rate_0_1", "λ 0.5 → 0.1: EDF-SS improves relative to the others", _check_low_rate),
    ("rate_0_75", "λ 0.75: EDF-SS is worst; its maximum and average tardiness rise", _check_high_rate),
    (
        "inference_20",
        "20 % inference: EDF-SS beats or nearly ties EDF-FS, uses least energy; all tardier",
        _check_training_heavy,
    ),
    ("restricted_et", "Restricted EDF-SS: ET about equal to unrestricted", _check_restricted_et),
    ("restricted_preemptions", "Restricted EDF-SS: 63–99 % fewer preemptions", _check_restricted_preemptions),
    (
        "edf_ss_fewer_preemptions_than_llf",
        "EDF-SS preempts less than LLF and LALF",
        _check_ss_vs_llf_preemptions,
    ),
)

#: Public names of helpers the report uses.
per_config = _per_config
policies_of = _policies
configs_of = _configs
