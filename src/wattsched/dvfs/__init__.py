"""DVFS-aware deadline scheduling on CPU-GPU clusters (P2: Mei, Wang, Chu, Liu, Leung, Li).

``solver`` (Alg. 1), ``offline`` (Alg. 2 + 3), ``online`` (Alg. 4 + 5), ``baselines`` (pair-choice rules),
``cluster`` (configuration, rules, energy accounting), ``pool`` (pairs while scheduling), ``hkbu`` (the
authors' code as a configuration), ``tasks`` (generator, task files), ``fitting``.

Public names are imported on first use (PEP 562): importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched._lazy import lazy_exports

if TYPE_CHECKING:
    from wattsched.dvfs.baselines import ALGORITHMS
    from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig, RunResult, Schedule
    from wattsched.dvfs.hkbu import hkbu_configs
    from wattsched.dvfs.model import TaskModel, TaskSet
    from wattsched.dvfs.offline import run_offline
    from wattsched.dvfs.online import run_online
    from wattsched.dvfs.solver import Settings, solve, solve_one
    from wattsched.dvfs.tasks import GeneratorSpec, generate_offline, generate_online, read_tasks, write_tasks

__all__ = [
    "ALGORITHMS",
    "ClusterConfig",
    "DvfsConfig",
    "GeneratorSpec",
    "RunResult",
    "Schedule",
    "Settings",
    "TaskModel",
    "TaskSet",
    "generate_offline",
    "generate_online",
    "hkbu_configs",
    "read_tasks",
    "run_offline",
    "run_online",
    "solve",
    "solve_one",
    "write_tasks",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ALGORITHMS": "wattsched.dvfs.baselines",
        "ClusterConfig": "wattsched.dvfs.cluster",
        "DvfsConfig": "wattsched.dvfs.cluster",
        "RunResult": "wattsched.dvfs.cluster",
        "Schedule": "wattsched.dvfs.cluster",
        "hkbu_configs": "wattsched.dvfs.hkbu",
        "TaskModel": "wattsched.dvfs.model",
        "TaskSet": "wattsched.dvfs.model",
        "run_offline": "wattsched.dvfs.offline",
        "run_online": "wattsched.dvfs.online",
        "Settings": "wattsched.dvfs.solver",
        "solve": "wattsched.dvfs.solver",
        "solve_one": "wattsched.dvfs.solver",
        "GeneratorSpec": "wattsched.dvfs.tasks",
        "generate_offline": "wattsched.dvfs.tasks",
        "generate_online": "wattsched.dvfs.tasks",
        "read_tasks": "wattsched.dvfs.tasks",
        "write_tasks": "wattsched.dvfs.tasks",
    },
)
