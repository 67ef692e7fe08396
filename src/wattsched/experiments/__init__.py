"""The experiment engine: grids, executors (local, Ray), a resumable Parquet result store, and reports.

``reproduce`` runs every registered study (``wattsched.experiments.studies``) and writes ``report.md``,
``figures/``, ``raw/<study>.parquet`` and ``summary.json``.
"""

from __future__ import annotations

from wattsched.experiments.executors import EXECUTORS, CellFailedError, Executor, LocalExecutor, RayExecutor
from wattsched.experiments.grid import (
    ConditionConfig,
    GridConfig,
    GridPoint,
    expand_grid,
    group_by_queue,
    load_grid_config,
    queue_seed,
)
from wattsched.experiments.runner import ReproduceResult, StudyRun, make_executor, reproduce, run_study
from wattsched.experiments.store import StudyStore
from wattsched.experiments.study import STUDIES, Row, Scale, Study, StudyCell

__all__ = [
    "EXECUTORS",
    "STUDIES",
    "CellFailedError",
    "ConditionConfig",
    "Executor",
    "GridConfig",
    "GridPoint",
    "LocalExecutor",
    "RayExecutor",
    "ReproduceResult",
    "Row",
    "Scale",
    "Study",
    "StudyCell",
    "StudyRun",
    "StudyStore",
    "expand_grid",
    "group_by_queue",
    "load_grid_config",
    "make_executor",
    "queue_seed",
    "reproduce",
    "run_study",
]
