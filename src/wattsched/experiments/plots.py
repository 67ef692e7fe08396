"""Figures as PNG files (matplotlib, Agg backend). Plotting never runs simulations: it draws tables."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from wattsched.experiments.store import atomic_write_bytes

__all__ = ["grouped_bar_panels"]

# No "Software" or date stamp: the same data gives the same PNG bytes.
_PNG_METADATA: dict[str, str | None] = {"Software": None}


def grouped_bar_panels(
    panels: Sequence[tuple[str, pd.DataFrame]],
    path: Path,
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    log_y: bool = False,
    columns: int = 1,
) -> Path:
    """One grouped bar chart per panel: the table's index along x, one bar series per column.

    Writes ``path`` (PNG) and returns it.
    """
    rows = -(-len(panels) // columns)
    widest = max(len(table.index) for _, table in panels)
    fig, axes = plt.subplots(
        rows, columns, figsize=(max(6.0, 0.65 * widest + 2.5) * columns, 3.4 * rows), squeeze=False
    )
    for ax, (panel_title, table) in zip(axes.flat, panels, strict=False):
        series = list(table.columns)
        x = np.arange(len(table.index))
        width = 0.8 / max(1, len(series))
        for i, name in enumerate(series):
            values = table[name].to_numpy(dtype=float)
            ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=str(name))
        ax.set_xticks(x, [str(v) for v in table.index])
        ax.set_title(panel_title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if log_y:
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, ncols=min(len(series), 5))
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata=_PNG_METADATA)
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())
    return path
