"""The report's "P1 on an H200" section: Table II and Table III per GPU at the ``paper`` preset.

Drawn from the merged ``summary.json`` block ``gpus.<gpu>.{table2, table3, ...}`` (written by the Table II and
Table III studies) and from the GPUs' catalogue entries (power curves, slice profiles). Every statement about
which policy or method wins is computed from those numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from wattsched.errors import WattschedError
from wattsched.experiments.plots import grouped_bar_panels
from wattsched.experiments.report import markdown_table
from wattsched.experiments.study import SUMMARY_SECTIONS
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.studies.gpu_variants import P1_GPU
from wattsched.units import JOULES_PER_KWH

__all__ = ["GpusSection"]

_POLICIES = ("edf-ss", "edf-fs", "llf", "lalf", "edf-ss-restricted")
_METHODS = ("no-mig", "static", "static-best", "day-night", "dynamic", "lookahead")


def _best(table: dict[str, float], among: tuple[str, ...], tie: float = 1e-3) -> str:
    """The method with the lowest ET, with every other within ``tie`` (relative) of it: "a ≈ b"."""
    present = [m for m in among if m in table]
    if not present:
        return "—"
    low = min(table[m] for m in present)
    return " ≈ ".join(m for m in sorted(present, key=table.__getitem__) if table[m] <= low * (1 + tie))


def _power_line(gpu: MigGpu) -> str:
    power = gpu.power
    curve = power.curve()
    full = power.power(gpu.compute_slices)
    half = power.power(gpu.compute_slices // 2 + 1)
    kinds = ", ".join(f"{kind}: {name}" for kind, name in power.kind_curves) or f"one curve ({curve.name})"
    return (
        f"{gpu.name}: idle {power.idle_w:g} W, {power.power(1):g} W with one busy compute slice, "
        f"{half:g} W with {gpu.compute_slices // 2 + 1}, {full:g} W with all {gpu.compute_slices} "
        f"(cap {power.cap_w:g} W); {half / full:.0%} of full power at {gpu.compute_slices // 2 + 1} of "
        f"{gpu.compute_slices} units; curves by job kind: {kinds}"
    )


def _profiles_line(gpu: MigGpu) -> str:
    small = [p for p in gpu.profiles if p.compute == 1 and not p.media]
    return f"{gpu.name}: 1g profiles " + ", ".join(
        f"{p.name} ({p.sms} SMs, {p.memory_slots} memory slot{'s' if p.memory_slots > 1 else ''})"
        for p in small
    )


def _saturation(gpu: MigGpu) -> float:
    """Share of full power drawn with about half of the compute slices busy (default curve)."""
    return gpu.power.power(gpu.compute_slices // 2 + 1) / gpu.power.power(gpu.compute_slices)


def _why_energy(savings: dict[str, float], gpus: dict[str, MigGpu]) -> list[str]:
    """One reasoned sentence when partitioning saves more energy on the GPU whose power saturates later."""
    known = [n for n in savings if n in gpus]
    if len(known) < 2:
        return []
    most = max(known, key=savings.__getitem__)
    least = min(known, key=savings.__getitem__)
    if most == least or _saturation(gpus[most]) >= _saturation(gpus[least]):
        return []
    late, early = _saturation(gpus[most]), _saturation(gpus[least])
    return [
        f"- Why partitioning saves more energy on the {most} ({savings[most]:.1%} against "
        f"{savings[least]:.1%}): its power keeps rising with busy compute slices ({late:.0%} "
        f"of full power at about half of them, against {early:.0%} on the {least}), so a "
        "job that does not speed up on more slices (sublinear or capped scaling, two thirds of P1's mix) "
        "costs proportionally less on a small slice than on the whole GPU; where power saturates early, "
        "a small slice draws nearly full power. Tardiness, and so the ranking, barely moves between the GPUs."
    ]


def _title(names: list[str]) -> str:
    """``an H200`` for the default comparison, else ``other GPUs``."""
    others = [n for n in names if n != P1_GPU]
    return "an H200" if others == ["h200-141gb"] else "other GPUs"


class GpusSection:
    """Section ``gpus`` (see the module docstring)."""

    name = "gpus"

    def render(self, summary: dict[str, Any], figures_dir: Path) -> str | None:
        block = summary.get("gpus", {})
        if len(block) < 2:
            return None
        names = list(block)
        gpus: dict[str, MigGpu] = {}
        for name in names:
            try:
                gpus[name] = load_gpu(name)
            except WattschedError:  # a GPU given by a path that is gone: numbers only
                continue
        lines = [
            f"## P1 on {_title(names)} — Table II and Table III per GPU",
            "",
            "The `paper` preset (see Presets) on each GPU of the catalogue that was run: the same queues and "
            "days (common random numbers), P1's 12 configuration shapes with each GPU's own profiles, "
            "and each "
            "GPU's power model (the H200's is fitted to SM-partition measurements, per job kind; "
            "`hardware/data/gpus/h200-141gb.toml`). ET pools differ per GPU, so compare rankings and ratios "
            "across GPUs, not ET values.",
            "",
        ]
        lines += self._table2(block, names)
        lines += self._table3(block, names)
        lines += self._reasons(block, gpus)
        figure = self._figure(block, names, figures_dir)
        if figure:
            lines += [f"![GPU comparison](figures/{figure})", ""]
        return "\n".join(lines) + "\n"

    @staticmethod
    def _table2(block: dict[str, Any], names: list[str]) -> list[str]:
        have = [n for n in names if "table2" in block[n]]
        if not have:
            return []
        tardiness = {n: block[n]["table2_detail"]["edf-ss"]["avg_tardiness_s"] for n in have}
        same = max(tardiness.values()) - min(tardiness.values()) <= 1e-9 * max(1.0, max(tardiness.values()))
        body = [
            [p, *[f"{block[n]['table2'][p]:.3f}" if p in block[n]["table2"] else "—" for n in have]]
            for p in _POLICIES
        ]
        body.append(
            [
                "energy kWh/queue (EDF-SS)",
                *[f"{block[n]['table2_detail']['edf-ss']['energy_j'] / JOULES_PER_KWH:.3f}" for n in have],
            ]
        )
        body.append(["best policy", *[_best(block[n]["table2"], _POLICIES[:4]) for n in have]])
        note = (
            "Tardiness is identical on every GPU (the same queues; a slice's speed depends only on its "
            "compute "
            "size, and every GPU here has the sizes 1, 2, 3, 4, 7), so ET differs only through energy, which "
            "ET's a weighs little."
            if same
            else "Tardiness differs between the GPUs (their slice sizes or queues differ)."
        )
        return [
            "### Table II per GPU (ET, default condition, every configuration)",
            "",
            markdown_table(["policy", *have], body),
            note,
            "",
        ]

    @staticmethod
    def _table3(block: dict[str, Any], names: list[str]) -> list[str]:
        have = [n for n in names if "table3" in block[n]]
        if not have:
            return []
        body = []
        for method in _METHODS:
            cells = []
            for n in have:
                table, detail = block[n]["table3"], block[n]["table3_detail"]
                cells.append(
                    f"{table[method]:.3f} ({detail[method]['energy_j'] / JOULES_PER_KWH:.2f} kWh, "
                    f"{detail[method]['avg_tardiness_s'] / 60:.2f} min)"
                    if method in table
                    else "—"
                )
            body.append([method, *cells])
        body.append(
            [
                "Static / best static",
                *[
                    f"cfg {block[n]['table3_extra']['static_configuration']} / "
                    f"cfg {block[n]['table3_extra']['static_best_configuration']}"
                    for n in have
                ],
            ]
        )
        body.append(["best method", *[_best(block[n]["table3"], _METHODS) for n in have]])
        verdict = {True: "holds", False: "fails", None: "—"}
        body.append(
            [
                "P1 order (DQN / lookahead)",
                *[
                    f"{verdict[block[n]['table3_extra']['paper_order_holds']]} / "
                    f"{verdict[block[n]['table3_extra']['paper_order_holds_lookahead']]}"
                    for n in have
                ],
            ]
        )
        return [
            "### Table III per GPU (ET; energy per day, average tardiness)",
            "",
            markdown_table(["method", *have], body),
        ]

    @staticmethod
    def _reasons(block: dict[str, Any], gpus: dict[str, MigGpu]) -> list[str]:
        lines = ["### Why (measured numbers, catalogue facts)", ""]
        lines += [f"- Power shape — {_power_line(gpu)}." for gpu in gpus.values()]
        lines += [f"- Slices — {_profiles_line(gpu)}." for gpu in gpus.values()]
        for name, gpu in gpus.items():
            narrow = min((p.sms for p in gpu.profiles if p.compute == 1), default=0)
            wide = {p.name: p for p in gpu.profiles if p.compute == 1 and p.sms > narrow and not p.media}
            if not wide:
                continue
            holders = [str(c.ident) for c in gpu.configurations if any(s.profile in wide for s in c.slices)]
            lines.append(
                f"- The simulator gives a slice the speed of its compute size only: on the {name} the "
                + ", ".join(f"{p.name} ({p.sms} SMs against {narrow})" for p in wide.values())
                + " runs jobs exactly as fast as the smallest 1g profile. On the real card it may be faster, "
                f"so the configurations holding it ({', '.join(holders)}) are, if anything, under-rated here."
            )
        savings: dict[str, float] = {}
        for name, entry in block.items():
            t3, d3 = entry.get("table3", {}), entry.get("table3_detail", {})
            if "no-mig" in d3 and "static" in d3:
                saving = 1 - d3["static"]["energy_j"] / d3["no-mig"]["energy_j"]
                savings[name] = saving
                idle = gpus[name].power.idle_w * 86_400 / d3["no-mig"]["energy_j"] if name in gpus else None
                idle_text = (
                    f"; idle power alone is {idle:.0%} of No-MIG's daily energy" if idle is not None else ""
                )
                lines.append(
                    f"- {name}: Static uses {abs(saving):.1%} {'less' if saving >= 0 else 'more'} energy "
                    f"per day than No-MIG{idle_text}; the best Table III method is {_best(t3, _METHODS)}."
                )
        lines += _why_energy(savings, gpus)
        lines.append("")
        return lines

    @staticmethod
    def _figure(block: dict[str, Any], names: list[str], figures_dir: Path) -> str | None:
        have = [n for n in names if "table3" in block[n]]
        if not have:
            return None
        panels = []
        t3 = pd.DataFrame({n: {m: block[n]["table3"].get(m) for m in _METHODS} for n in have}).astype(float)
        panels.append(("Table III ET per method", t3))
        energy = pd.DataFrame(
            {
                n: {
                    m: block[n]["table3_detail"][m]["energy_j"] / JOULES_PER_KWH
                    for m in _METHODS
                    if m in block[n]["table3_detail"]
                }
                for n in have
            }
        ).astype(float)
        panels.append(("Table III energy, kWh per day", energy))
        t2 = [n for n in names if "table2" in block[n]]
        if t2:
            panels.append(
                (
                    "Table II ET per policy",
                    pd.DataFrame({n: {p: block[n]["table2"].get(p) for p in _POLICIES} for n in t2}).astype(
                        float
                    ),
                )
            )
        name = "gpus_table2_table3.png"
        figures_dir.mkdir(parents=True, exist_ok=True)
        grouped_bar_panels(
            panels, figures_dir / name, xlabel="", ylabel="", title="P1 per GPU (paper preset)"
        )
        return name


SUMMARY_SECTIONS.register("gpus")(GpusSection)
