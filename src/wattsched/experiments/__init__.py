"""The experiment library: grids, executors (local, Ray), a resumable Parquet result store, and reports.

A study is anything that keeps the :class:`Study` contract and registers itself in :data:`STUDIES`;
``reproduce`` runs the registered ones and writes ``report.md``, ``figures/``, ``raw/<study>.parquet`` and
``summary.json``. This library knows no study: the papers' reproductions are its users, in
``wattsched.studies``.

Public names are imported on first use (PEP 562): importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched._lazy import lazy_exports

if TYPE_CHECKING:
    from wattsched.experiments.executors import (
        EXECUTORS,
        CellFailedError,
        Executor,
        LocalExecutor,
        RayExecutor,
    )
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EXECUTORS": "wattsched.experiments.executors",
        "CellFailedError": "wattsched.experiments.executors",
        "Executor": "wattsched.experiments.executors",
        "LocalExecutor": "wattsched.experiments.executors",
        "RayExecutor": "wattsched.experiments.executors",
        "ConditionConfig": "wattsched.experiments.grid",
        "GridConfig": "wattsched.experiments.grid",
        "GridPoint": "wattsched.experiments.grid",
        "expand_grid": "wattsched.experiments.grid",
        "group_by_queue": "wattsched.experiments.grid",
        "load_grid_config": "wattsched.experiments.grid",
        "queue_seed": "wattsched.experiments.grid",
        "ReproduceResult": "wattsched.experiments.runner",
        "StudyRun": "wattsched.experiments.runner",
        "make_executor": "wattsched.experiments.runner",
        "reproduce": "wattsched.experiments.runner",
        "run_study": "wattsched.experiments.runner",
        "StudyStore": "wattsched.experiments.store",
        "STUDIES": "wattsched.experiments.study",
        "Row": "wattsched.experiments.study",
        "Scale": "wattsched.experiments.study",
        "Study": "wattsched.experiments.study",
        "StudyCell": "wattsched.experiments.study",
    },
)
