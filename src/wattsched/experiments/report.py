"""Assemble ``report.md``, ``summary.json`` and ``timings.json`` from the studies' sections and blocks.

Each study's Markdown section and summary blocks are kept under ``OUT/sections/`` so that a run of a subset
(``--only``) updates its own part and the assembled files still hold every study run into ``OUT``.
Nothing time-dependent goes into ``summary.json`` or the Parquet files; timings go to ``timings.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wattsched.errors import ConfigError
from wattsched.experiments.store import atomic_write_text, package_version

if TYPE_CHECKING:
    from wattsched.experiments.runner import StudyRun
    from wattsched.experiments.study import Study

__all__ = [
    "assemble_report",
    "dumps_json",
    "jsonable",
    "markdown_table",
    "merge_blocks",
    "write_outputs",
]


def jsonable(value: Any) -> Any:
    """Plain JSON types: numpy scalars to Python, NaN/inf to None, tuples to lists, keys to str."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline."""
    return json.dumps(jsonable(value), indent=2, sort_keys=True, allow_nan=False) + "\n"


def merge_blocks(per_study: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Merge the studies' summary blocks. Blocks that are objects merge key by key (``presets.paper.table2``
    from one study, ``presets.paper.table3`` from another); two studies writing the same value is an error."""
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}

    def merge(into: dict[str, Any], block: Mapping[str, Any], study: str, path: str) -> None:
        for key, value in block.items():
            where = f"{path}.{key}" if path else str(key)
            if key in into and isinstance(into[key], dict) and isinstance(value, Mapping):
                merge(into[key], value, study, where)
            elif key in into:
                raise ConfigError(
                    f"summary block '{where}' is written by both '{owner[where]}' and '{study}'"
                )
            else:
                into[key] = _copy(value)
                for leaf in _paths(value, where):
                    owner[leaf] = study

    for study in sorted(per_study):
        merge(merged, per_study[study], study, "")
    return merged


def _copy(value: Any) -> Any:
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, Mapping) else value


def _paths(value: Any, path: str) -> list[str]:
    """``path`` and, for an object, the path of every nested key (to name the owner of any part)."""
    if not isinstance(value, Mapping):
        return [path]
    return [path, *[p for k, v in value.items() for p in _paths(v, f"{path}.{k}")]]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats are shown with 3 decimals unless already formatted."""

    def cell(value: Any) -> str:
        if isinstance(value, float | np.floating):
            return "n/a" if not math.isfinite(float(value)) else f"{float(value):.3f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def section_order(names: Iterable[str], first: Sequence[str] = ()) -> list[str]:
    """``names`` in report order: those in ``first`` in that order, then the others by name."""
    present = set(names)
    return [n for n in first if n in present] + sorted(present - set(first))


def assemble_report(sections: Mapping[str, str], scales: Mapping[str, str], first: Sequence[str] = ()) -> str:
    """``report.md``: a header, a table of contents and each section (study sections and summary sections),
    those named in ``first`` first."""
    order = section_order(sections, first)
    lines = [
        "# wattsched reproduction report",
        "",
        f"wattsched {package_version()}. Scales: "
        + ", ".join(f"{name} = {scales[name]}" for name in order if name in scales)
        + ".",
        "Raw rows: `raw/<study>.parquet`; key figures: `summary.json`; wall times: `timings.json`.",
        "",
        "Contents: " + ", ".join(f"[{name}](#{name.replace('_', '-')})" for name in order),
        "",
    ]
    for name in order:
        body = sections[name].strip()
        lines += [f'<a id="{name.replace("_", "-")}"></a>', "", body, ""]
    return "\n".join(lines)


def _summary_sections(
    summary: dict[str, Any], sections_dir: Path, figures_dir: Path, skip: set[str]
) -> dict[str, str]:
    """Render every registered summary section (``sections/<name>.md``; removed when it has nothing)."""
    from wattsched.experiments.study import SUMMARY_SECTIONS

    out = {}
    for name in SUMMARY_SECTIONS.available():
        if name in skip:
            raise ConfigError(f"summary section '{name}' has the name of a study")
        text = SUMMARY_SECTIONS.make(name).render(summary, figures_dir)
        path = sections_dir / f"{name}.md"
        if text:
            atomic_write_text(path, text.rstrip() + "\n")
            out[name] = text
        else:
            path.unlink(missing_ok=True)
    return out


def write_outputs(
    out: Path,
    scale: str,
    results: Sequence[tuple[Study, StudyRun]],
    *,
    executor: str,
    workers: int,
    section_order: Sequence[str] = (),
) -> dict[str, Any]:
    """Write the studies' sections, then assemble report.md (``section_order`` first, the other sections by
    name), summary.json and timings.json in ``out``."""
    sections_dir = out / "sections"
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    for study, run in results:
        blocks = jsonable(study.summarize(run.rows))
        section = study.report(run.rows, figures_dir)
        atomic_write_text(sections_dir / f"{study.name}.md", section.rstrip() + "\n")
        atomic_write_text(sections_dir / f"{study.name}.json", dumps_json({"scale": scale, "blocks": blocks}))
    per_study: dict[str, Any] = {}
    sections: dict[str, str] = {}
    scales: dict[str, str] = {}
    for path in sorted(sections_dir.glob("*.json")):
        name = path.stem
        data = json.loads(path.read_text(encoding="utf-8"))
        markdown = sections_dir / f"{name}.md"
        if not markdown.is_file():
            continue
        per_study[name], scales[name] = data["blocks"], data["scale"]
        sections[name] = markdown.read_text(encoding="utf-8")
    summary = merge_blocks(per_study)
    sections.update(_summary_sections(summary, sections_dir, figures_dir, skip=set(sections)))
    atomic_write_text(out / "summary.json", dumps_json(summary))
    atomic_write_text(out / "report.md", assemble_report(sections, scales, section_order))
    timings_path = out / "timings.json"
    timings: dict[str, Any] = {}
    if timings_path.is_file():
        try:
            timings = json.loads(timings_path.read_text(encoding="utf-8"))
        except ValueError:
            timings = {}
    for study, run in results:
        timings[study.name] = {
            "scale": scale,
            "wall_s": round(run.wall_s, 3),
            "cells": run.cells,
            "executed": run.executed,
            "skipped": run.skipped,
            "executor": executor,
            "workers": workers,
        }
    atomic_write_text(timings_path, dumps_json(timings))
    return summary
