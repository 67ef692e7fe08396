"""``DIR/index.html``: one self-contained, interactive page of a ``reproduce`` or ``sweep`` directory.

Self-contained means no network request of any kind: plotly.js is inlined from the installed ``plotly``
package, every PNG figure is inlined as a ``data:`` URI, styles and the small table-sorting script are
inline. The page holds, for a reproduce directory, every study's section of ``report.md`` (reasoning text,
tables, figures), its interactive views (those registered in :data:`wattsched.experiments.study.STUDY_VIEWS`),
the key figures of ``summary.json`` and the wall times; for a sweep directory, grouped bars per metric with
95 % intervals, a run scatter, the group table and every run. The same directory gives the same bytes.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import markdown
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from wattsched.errors import InputError, WattschedError
from wattsched.experiments.store import atomic_write_text, package_version
from wattsched.experiments.study import STUDY_VIEWS
from wattsched.viz.interactive import bar_chart, scatter_runs
from wattsched.viz.stats import group_summary
from wattsched.viz.sweep import Sweep, is_sweep_dir, read_sweep, split_factors

__all__ = ["INDEX_FILE", "build_html_report", "write_html_report"]

log = logging.getLogger(__name__)

INDEX_FILE = "index.html"
#: A sweep's run table is shown in full up to this many rows (a page stays fast to open).
MAX_RUN_ROWS = 5000
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;line-height:1.45}
header{background:#1f3b57;color:#fff;padding:14px 28px}header h1{margin:0;font-size:1.5em}
header p{margin:4px 0 0;opacity:.85}nav{padding:8px 28px;background:#eef2f6;font-size:.95em}
nav a{margin-right:14px}main{padding:0 28px 40px;max-width:1400px;box-sizing:border-box}
section{border-bottom:1px solid #ddd;padding-bottom:18px}h2{margin-top:28px}
table{border-collapse:collapse;margin:10px 0;font-size:.88em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f5f8;cursor:pointer}
td:first-child,th:first-child{text-align:left}tr:nth-child(even) td{background:#fafbfc}
img{max-width:100%;height:auto;display:block;margin:8px 0}
.figure{margin:12px 0 24px;max-width:100%;overflow-x:auto}
.note{color:#555;font-size:.92em}code{background:#f3f3f3;padding:0 3px}
details{margin:8px 0}.missing{color:#a00}
"""
# Click a header to sort its table (numbers as numbers, text as text; a second click reverses).
_SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.title = "click to sort";
    th.addEventListener("click", function () {
      var body = table.tBodies[0]; if (!body) { return; }
      var rows = Array.prototype.slice.call(body.rows);
      var up = th.getAttribute("data-order") !== "up";
      th.setAttribute("data-order", up ? "up" : "down");
      var key = function (row) {
        var text = row.cells[column] ? row.cells[column].textContent.trim() : "";
        var number = parseFloat(text.replace(/,/g, ""));
        return isNaN(number) ? text : number;
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (typeof x === typeof y) { return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); }
        return (typeof x === "number" ? -1 : 1) * (up ? 1 : -1);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


@dataclass
class _Page:
    """Sections of the page in order; figure div ids are numbered so the same input gives the same page."""

    title: str
    subtitle: str
    sections: list[tuple[str, str, str]] = field(default_factory=list)
    figures: int = 0

    def figure(self, figure: go.Figure, caption: str = "") -> str:
        self.figures += 1
        div = pio.to_html(
            figure,
            include_plotlyjs=False,
            full_html=False,
            div_id=f"figure-{self.figures}",
            config=_PLOTLY_CONFIG,
            validate=False,
        )
        head = f"<h4>{html.escape(caption)}</h4>" if caption else ""
        return f'<div class="figure">{head}{div}</div>'

    def render(self) -> str:
        nav = "".join(f'<a href="#{ident}">{html.escape(title)}</a>' for ident, title, _ in self.sections)
        body = "".join(
            f'<section id="{ident}"><h2>{html.escape(title)}</h2>{content}</section>'
            for ident, title, content in self.sections
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(self.title)}</title><style>{_CSS}</style>"
            f"<script>{get_plotlyjs()}</script></head><body>"
            f"<header><h1>{html.escape(self.title)}</h1><p>{html.escape(self.subtitle)}</p></header>"
            f"<nav>{nav}</nav><main>{body}</main><script>{_SORT_JS}</script></body></html>\n"
        )


def write_html_report(folder: str | Path) -> Path:
    """Write ``folder/index.html`` (atomically) and return its path; see :func:`build_html_report`."""
    path = Path(folder) / INDEX_FILE
    atomic_write_text(path, build_html_report(folder))
    return path


def build_html_report(folder: str | Path) -> str:
    """The page of a reproduce directory (``summary.json``/``report.md``/``raw/``), a sweep directory
    (``runs.parquet``) or one holding both. InputError if it is neither or a file in it is unreadable."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("not a directory", path=str(root))
    reproduce = any((root / name).exists() for name in ("summary.json", "report.md", "raw"))
    if not reproduce and not is_sweep_dir(root):
        raise InputError(
            "not a reproduce or sweep directory: no summary.json, report.md, raw/ or runs.parquet",
            path=str(root),
        )
    page = _Page(
        f"wattsched report: {root.resolve().name}",
        f"wattsched {package_version()} · self-contained page, works offline · "
        "click a table header to sort; hover, zoom and use the menus on the figures",
    )
    if is_sweep_dir(root):
        _sweep_sections(page, read_sweep(root))
    if reproduce:
        _reproduce_sections(page, root)
    return page.render()


# ---------------------------------------------------------------------------------------------- tables


def _cell(value: Any, decimals: int) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "n/a"
        return (
            f"{value:.{decimals}g}"
            if abs(value) >= 1e6 or (0 < abs(value) < 1e-3)
            else f"{value:.{decimals}f}"
        )
    return html.escape(str(value))


def table_html(frame: pd.DataFrame, decimals: int = 3) -> str:
    """An escaped, sortable HTML table of ``frame`` (floats with ``decimals`` decimals)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(v, decimals)}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False, name=None)
    )
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def summary_tables(block: Mapping[str, Any], prefix: str = "") -> list[tuple[str, pd.DataFrame]]:
    """Tables of a JSON block: scalars in a key/value table, a mapping of scalar mappings as a matrix
    (rows = outer keys), deeper mappings recursively under ``prefix/key``; lists shown as JSON text."""
    tables: list[tuple[str, pd.DataFrame]] = []
    scalars = {k: v for k, v in block.items() if _scalar(v) or isinstance(v, list)}
    if scalars:
        values = [json.dumps(v) if isinstance(v, list) else v for v in scalars.values()]
        tables.append(
            (prefix, pd.DataFrame({"key": list(scalars), "value": pd.Series(values, dtype=object)}))
        )
    for key, value in block.items():
        if not isinstance(value, Mapping):
            continue
        name = f"{prefix}/{key}" if prefix else str(key)
        if value and all(
            isinstance(v, Mapping) and all(_scalar(x) for x in v.values()) for v in value.values()
        ):
            matrix = pd.DataFrame.from_dict(
                {str(k): dict(v) for k, v in value.items()}, orient="index", dtype=object
            )
            tables.append((name, matrix.reset_index(names="")))
        else:
            tables += summary_tables(value, name)
    return tables


# ---------------------------------------------------------------------------------------------- sweep


def _sweep_sections(page: _Page, sweep: Sweep) -> None:
    runs, factors = sweep.runs, sweep.factors
    x, hue = split_factors(factors)
    metrics = sweep.metrics()
    seeds = sorted({int(s) for s in runs["seed"]})
    levels = "".join(
        f"<li><code>{html.escape(c)}</code>: {html.escape(', '.join(dict.fromkeys(runs[c])))}</li>"
        for c in factors
    )
    overview = (
        f"<p>{len(runs)} runs; seeds {html.escape(', '.join(map(str, seeds)))}. Factors that vary:</p>"
        f"<ul>{levels or '<li>none (one setting)</li>'}</ul>"
        '<p class="note">Bars are means over the runs of a group (seeds are the replicates), whiskers '
        "the 95 % Student-t interval of that mean; every metric here is never negative, so an interval "
        "reaching below 0 is clipped at 0 (marked in a 'low clipped at 0' column). ET uses the sweep's "
        "whole pool.</p>"
    )
    if sweep.pool:
        overview += "<h3>ET pool (sweep.json)</h3>" + "".join(
            (f"<h4>{html.escape(name)}</h4>" if name else "") + table_html(table, 6)
            for name, table in summary_tables(sweep.pool)
        )
    page.sections.append(("sweep", "Sweep", overview))
    figures = page.figure(bar_chart(runs, metrics, x, hue), "Metrics per group (menu: metric)")
    figures += page.figure(scatter_runs(runs, factors), "Energy against tardiness, one point per run")
    page.sections.append(("sweep-figures", "Sweep figures", figures))
    by = [c for c in (x, *hue) if c]
    table = None
    for metric in metrics:
        summary = group_summary(runs, metric, by)
        shown = summary[by].copy() if by else pd.DataFrame(index=summary.index)
        shown[f"{metric.label}"] = summary["mean"]
        shown[f"{metric.name} 95 % low"] = summary["low"]
        shown[f"{metric.name} 95 % high"] = summary["high"]
        if summary["clipped"].any():
            shown[f"{metric.name} low clipped at 0"] = summary["clipped"].map({True: "yes", False: ""})
        table = shown if table is None else table.join(shown.drop(columns=by))
    if table is not None:
        table.insert(len(by), "runs", group_summary(runs, metrics[0], by)["runs"])
    runs_note = "" if len(runs) <= MAX_RUN_ROWS else f" (first {MAX_RUN_ROWS} of {len(runs)})"
    content = (table_html(table, 4) if table is not None else "") + (
        f"<details><summary>every run{runs_note}</summary>{table_html(runs.head(MAX_RUN_ROWS), 4)}</details>"
    )
    page.sections.append(("sweep-tables", "Sweep tables", content))


# ---------------------------------------------------------------------------------------------- reproduce


#: Studies shown first, in this order (P1, then P2); any other study follows by name.
_STUDY_ORDER = ("table2", "table3", "real-workloads", "dvfs")


def _reproduce_sections(page: _Page, root: Path) -> None:
    sections = _study_markdown(root)
    present = set(sections) | {p.stem for p in (root / "raw").glob("*.parquet")}
    studies = [s for s in _STUDY_ORDER if s in present] + sorted(present - set(_STUDY_ORDER))
    for study in studies:
        content = _markdown_html(sections[study], root) if study in sections else ""
        views = _study_views(root / "raw" / f"{study}.parquet", study)
        if views:
            content += "<h3>Interactive figures (from raw rows)</h3>" + "".join(
                page.figure(figure, title) for title, figure in views
            )
        title = _first_heading(sections.get(study, "")) or study
        page.sections.append((f"study-{_slug(study)}", title, content))
    overview = ""
    for name, title in (
        ("summary.json", "Key figures (summary.json)"),
        ("timings.json", "Wall times (timings.json)"),
    ):
        data = _read_json(root / name)
        if data:
            overview += f"<h3>{title}</h3>" + "".join(
                f"<h4>{html.escape(key)}</h4>" + table_html(table, 4)
                for study, block in sorted(data.items())
                if isinstance(block, Mapping)
                for key, table in summary_tables(block, study)
            )
    page.sections.append(("key-figures", "Key figures", overview or '<p class="note">no summary.json</p>'))


def _study_markdown(root: Path) -> dict[str, str]:
    """Each study's Markdown section: ``sections/<study>.md`` or, failing that, the whole ``report.md``."""
    sections = {p.stem: p.read_text(encoding="utf-8") for p in sorted((root / "sections").glob("*.md"))}
    if not sections and (root / "report.md").is_file():
        sections["report"] = (root / "report.md").read_text(encoding="utf-8")
    return sections


def _study_views(path: Path, study: str) -> list[tuple[str, go.Figure]]:
    if not path.is_file() or study not in STUDY_VIEWS:
        return []
    from wattsched.io import read_table

    rows = read_table(path, formats=("parquet",))
    if rows.empty:  # a study that ran no cell (e.g. its data is missing) has nothing to draw
        return []
    try:
        return STUDY_VIEWS.make(study, rows=rows)
    except (KeyError, ValueError, TypeError, ImportError, WattschedError) as exc:
        # The page must still be written when a study's rows change shape; the section says so.
        log.warning("no interactive view for %s: %s: %s", study, type(exc).__name__, exc)
        return []


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read JSON: {type(exc).__name__}: {exc}", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path=str(path))
    return data


_HEADING = re.compile(r"^#{1,3}\s+(.+)$", re.MULTILINE)
_IMAGE = re.compile(r'<img([^>]*?)src="([^"]*)"([^>]*)>')


def _first_heading(text: str) -> str:
    match = _HEADING.search(text)
    return match.group(1).strip() if match else ""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _markdown_html(text: str, root: Path) -> str:
    """Markdown to HTML (tables sortable); the first heading is dropped (it titles the section) and each
    image under ``root`` is inlined as a data URI; a missing one becomes a visible note, not a broken
    link (which would also be a network request the page must not make)."""
    body = _HEADING.sub("", text, count=1) if _first_heading(text) else text
    rendered = markdown.markdown(body, extensions=["tables", "fenced_code", "sane_lists"])
    rendered = rendered.replace("<table>", '<table class="sortable">')
    base = root.resolve()

    def inline(match: re.Match[str]) -> str:
        source = html.unescape(match.group(2))
        target = (root / source).resolve()
        if source.startswith("data:"):
            return match.group(0)
        if target.is_relative_to(base) and target.is_file() and target.suffix.lower() == ".png":
            data = base64.b64encode(target.read_bytes()).decode("ascii")
            return f'<img{match.group(1)}src="data:image/png;base64,{data}"{match.group(3)}>'
        return f'<span class="missing">[figure not found: {html.escape(source)}]</span>'

    return _IMAGE.sub(inline, rendered)
