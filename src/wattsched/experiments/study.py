"""The contract between the experiment engine and the studies it runs.

A study (Table II, Table III, the DVFS figures, the real-workload replay, ...) expands into independent
*cells*; each cell is a pure function of its own fields (seed included) and yields result rows. The engine
stores rows in Parquet per study, skips cells already stored (resume), and runs the rest on an executor
(local process pool or Ray). Studies are registered by name in :data:`STUDIES`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import pandas as pd

from wattsched.registry import Registry

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = [
    "STUDIES",
    "STUDY_VIEWS",
    "SUMMARY_SECTIONS",
    "Row",
    "Scale",
    "Study",
    "StudyCell",
    "SummarySection",
    "View",
]

Scale = Literal["quick", "paper"]
#: One result row: flat scalars only (str, int, float, bool), so it maps to a Parquet column each.
Row = dict[str, Any]


@runtime_checkable
class StudyCell(Protocol):
    """One unit of work. Frozen dataclasses, picklable, with a key unique and stable within the study."""

    @property
    def key(self) -> str: ...


class Study(Protocol):
    """A named reproduction: cells, a pure cell runner, and how to summarise and report the rows."""

    name: str

    def cells(self, scale: Scale) -> Sequence[StudyCell]:
        """All cells of this study at ``scale``, in a deterministic order."""
        ...

    def run_cell(self, cell: Any) -> list[Row]:
        """Run one cell. Must be a pure function of ``cell``; each row should carry ``cell.key``."""
        ...

    def summarize(self, rows: pd.DataFrame) -> dict[str, Hashable | dict[str, Any]]:
        """The study's block(s) of ``summary.json``, keyed by block name (e.g. ``{"table2": {...}}``)."""
        ...

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        """A Markdown section for ``report.md``; may write PNG figures into ``figures_dir``."""
        ...


#: Registry of study factories (zero-argument callables returning a :class:`Study`).
STUDIES: Registry[Study] = Registry("study")


class SummarySection(Protocol):
    """A report section drawn from the merged ``summary.json`` of every study (no rows, no simulation), for
    comparisons that span studies (e.g. Table II and Table III per GPU)."""

    name: str

    def render(self, summary: dict[str, Any], figures_dir: Path) -> str | None:
        """Markdown, or ``None`` when the summary lacks the blocks it needs (the section is then left out)."""
        ...


#: Registry of summary-section factories (zero-argument callables returning a :class:`SummarySection`).
SUMMARY_SECTIONS: Registry[SummarySection] = Registry("summary section")


#: A titled interactive figure of the HTML page (:mod:`wattsched.viz.html`).
View = tuple[str, "go.Figure"]
#: Registry of a study's interactive views, by study name: ``STUDY_VIEWS.make(study, rows=frame)`` -> views.
STUDY_VIEWS: Registry[list[View]] = Registry("study view")
