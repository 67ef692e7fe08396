"""A tiny fake study for the engine tests: every cell is a pure function of its own fields.

Failure injection (raise at a key, SIGKILL this process at a key) lives on the study, not on the cells, so an
interrupted run and its resumption have the same cells and the same fingerprints.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wattsched.experiments.study import STUDIES, Scale


@dataclass(frozen=True)
class FakeCell:
    index: int
    seed: int

    @property
    def key(self) -> str:
        return f"c{self.index:03d}"


def fake_rows(cell: FakeCell) -> list[dict[str, Any]]:
    """Three rows drawn from the cell's own seed: the expected output of any executor."""
    rng = np.random.default_rng(np.random.SeedSequence(cell.seed, spawn_key=(cell.index,)))
    return [
        {"index": cell.index, "part": j, "value": float(rng.normal()), "label": f"p{j}"} for j in range(3)
    ]


class FakeStudy:
    name = "fake"

    def __init__(
        self,
        cells: int = 12,
        log_dir: str | None = None,
        fail_at: str | None = None,
        kill_at: str | None = None,
        interrupt_at: str | None = None,
        iterations: int | None = None,
    ) -> None:
        self.n = iterations or cells
        self.log_dir = log_dir
        self.fail_at = fail_at
        self.kill_at = kill_at
        self.interrupt_at = interrupt_at

    def cells(self, scale: Scale) -> list[FakeCell]:
        return [FakeCell(i, 7) for i in range(self.n)]

    def run_cell(self, cell: FakeCell) -> list[dict[str, Any]]:
        if self.log_dir is not None:  # one line per executed cell, appended atomically (O_APPEND)
            with open(Path(self.log_dir) / "executed.log", "a") as stream:
                stream.write(cell.key + "\n")
        if cell.key == self.fail_at:
            raise RuntimeError("injected failure")
        if cell.key == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if cell.key == self.interrupt_at:  # Ctrl-C: the signal goes to the sweep's own process
            os.kill(os.getpid(), signal.SIGINT)
        return fake_rows(cell)

    def summarize(self, rows: pd.DataFrame) -> dict[str, Any]:
        return {"fake": {"rows": len(rows), "mean": float(rows["value"].mean())}}

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        return f"## fake\n\n{len(rows)} rows.\n"


def executed(log_dir: Path) -> list[str]:
    path = Path(log_dir) / "executed.log"
    return path.read_text().split() if path.exists() else []


if "fake" not in STUDIES:
    STUDIES.register("fake")(FakeStudy)
