"""Table II across variants: the summary blocks per preset, deadline rule and GPU, and the report section.

Blocks:

* ``table2``, ``table2_detail``, ``table2_conditions``, ``table2_per_config``, ``table2_meta``,
  ``table2_checks`` — the chosen preset's A100 variant under P1's deadline rule (``table2_meta.preset``);
* ``presets.<preset>.{table2, table2_detail, table2_meta, table2_per_config, restricted_cost}``;
* ``deadline_rules.<rule>.<preset>.{table2, table2_detail, restricted_cost, edf_ss_vs_edf_fs}`` (A100);
* ``gpus.<gpu>.{table2, table2_detail, table2_meta}`` at the ``paper`` preset under P1's rule.

``restricted_cost`` is ET(restricted EDF-SS) / ET(EDF-SS) − 1 on the default condition: what restricting
preemption costs in ET (the rule of docs/concepts/mig-model.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from wattsched.experiments.report import markdown_table
from wattsched.studies.table2 import DEFAULT_GPU
from wattsched.studies.table2_analysis import (
    PAPER_TABLE2,
    condition_frames,
    paired_differences,
    summarize,
)
from wattsched.studies.table2_report import report

if TYPE_CHECKING:
    from wattsched.experiments.grid import GridConfig
    from wattsched.studies.table2 import Table2Study, Table2Variant

__all__ = ["GPU_PRESET", "report_variants", "summarize_variants"]

#: The preset of the per-GPU comparison ("P1 on an H200").
GPU_PRESET = "paper"
_POLICY_ORDER = ("edf-ss", "edf-fs", "llf", "lalf", "edf-ss-restricted")


def _variant_rows(rows: pd.DataFrame, variant: Table2Variant) -> pd.DataFrame:
    if "variant" not in rows:
        return rows.iloc[0:0]
    return rows[rows["variant"] == variant.name]


def _extras(rows: pd.DataFrame, config: GridConfig) -> dict[str, Any]:
    """Restricted EDF-SS's ET cost and the EDF-SS / EDF-FS pairing on the default condition."""
    frames = condition_frames(rows, config)
    if config.default_condition not in frames:
        return {}
    frame, _ = frames[config.default_condition]
    et = frame.groupby("policy")["et"].mean()
    out: dict[str, Any] = {}
    if {"edf-ss", "edf-ss-restricted"} <= set(et.index):
        out["restricted_cost"] = float(et["edf-ss-restricted"] / et["edf-ss"] - 1.0)
    if {"edf-ss", "edf-fs"} <= set(et.index):
        out["edf_ss_vs_edf_fs"] = paired_differences(frame, "edf-ss", "edf-fs")
    return out


def summarize_variants(rows: pd.DataFrame, study: Table2Study) -> dict[str, Any]:
    """Every block of the module docstring."""
    blocks: dict[str, Any] = {}
    presets: dict[str, Any] = {}
    rules: dict[str, Any] = {}
    gpus: dict[str, Any] = {}
    for variant in study.variants:
        mine = _variant_rows(rows, variant)
        if mine.empty:
            continue
        config = study.variant_config(variant)
        summary = summarize(mine, config)
        if "table2" not in summary:
            continue
        summary["table2_meta"].update(
            preset=variant.preset, deadline_rule=variant.deadline_rule, gpu=variant.gpu, hours=config.hours
        )
        extras = _extras(mine, config)
        short = {k: summary[k] for k in ("table2", "table2_detail", "table2_meta")}
        if variant.gpu == DEFAULT_GPU:
            rules.setdefault(variant.deadline_rule, {})[variant.preset] = {
                "table2": summary["table2"],
                "table2_detail": summary["table2_detail"],
                **extras,
            }
            if variant.deadline_rule == "p1":
                default = summary["table2_per_config"].get(config.default_condition, {})
                presets[variant.preset] = {**short, "table2_per_config": default, **extras}
                if variant.preset == study.preset:
                    blocks.update(summary)
        if variant.deadline_rule == "p1" and variant.preset == GPU_PRESET:
            gpus[variant.gpu] = {**short, **extras}
    if presets:
        blocks["presets"] = presets
    if rules:
        blocks["deadline_rules"] = rules
    if gpus:
        blocks["gpus"] = gpus
    return blocks


def report_variants(rows: pd.DataFrame, study: Table2Study, figures_dir: Path) -> str:
    """The main variant's section (:func:`table2_report.report`), then presets and deadline rules."""
    main = next(
        (
            v
            for v in study.variants
            if v.preset == study.preset and v.deadline_rule == "p1" and v.gpu == DEFAULT_GPU
        ),
        None,
    )
    lines = []
    if main is not None and not _variant_rows(rows, main).empty:
        config = study.variant_config(main)
        lines.append(report(_variant_rows(rows, main), config, figures_dir).rstrip())
        lines.append(f"\n(Preset **{main.preset}**: queues of {config.hours:g} h; see Presets.)\n")
    blocks = summarize_variants(rows, study)
    presets = blocks.get("presets", {})
    if len(presets) > 1:
        names = list(presets)
        header = ["policy", "P1", *[f"{n} ({presets[n]['table2_meta']['hours']:g} h)" for n in names]]
        body = [
            [
                p,
                f"{PAPER_TABLE2[p]:.2f}" if p in PAPER_TABLE2 else "—",
                *[f"{presets[n]['table2'][p]:.3f}" if p in presets[n]["table2"] else "—" for n in names],
            ]
            for p in _POLICY_ORDER
            if any(p in presets[n]["table2"] for n in names)
        ]
        body.append(
            ["restricted EDF-SS ET cost", "—", *[_pct(presets[n].get("restricted_cost")) for n in names]]
        )
        lines += [
            "### Both presets side by side",
            "",
            "Default condition (λ = 0.5/min, 80 % inference), every configuration, the same queue seeds; "
            + ", ".join(f"`{n}` queues of {presets[n]['table2_meta']['hours']:g} h" for n in names)
            + " (see Presets). Each column pools its own a.",
            "",
            markdown_table(header, body),
        ]
    rules = blocks.get("deadline_rules", {})
    if len(rules) > 1:
        body = []
        for rule, by_preset in rules.items():
            for preset, entry in by_preset.items():
                table = entry["table2"]
                pair = entry.get("edf_ss_vs_edf_fs", {})
                body.append(
                    [
                        rule,
                        preset,
                        *[f"{table[p]:.3f}" if p in table else "—" for p in _POLICY_ORDER],
                        _pct(entry.get("restricted_cost")),
                        "—" if not pair else f"{pair['identical_share']:.0%}",
                    ]
                )
        lines += [
            "### Deadline rule (not in P1)",
            "",
            "`p1`: d = a + U(1, 1.5)·dur_7g, so no job can meet its deadline on a 1g slice; `slice-aware`: "
            "d = a + U(1, 1.5)·dur_g for a compute size g drawn uniformly from 1, 2, 3, 4, 7 (same queues "
            "otherwise), so EDF-SS's slowest feasible slice can be a small one, as P1 Sec. V-B describes. "
            "Default "
            "condition; each row pools its own a.",
            "",
            markdown_table(
                ["rule", "preset", *_POLICY_ORDER, "restricted EDF-SS ET cost", "EDF-SS ≡ EDF-FS runs"], body
            ),
        ]
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"
