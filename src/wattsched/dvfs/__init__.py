"""DVFS-aware deadline scheduling on CPU-GPU clusters (P2: Mei, Wang, Chu, Liu, Leung, Li).

``solver`` (Alg. 1), ``offline`` (Alg. 2 + 3), ``online`` (Alg. 4 + 5), ``baselines`` (pair-choice rules),
``cluster`` (configuration, rules, energy accounting), ``pool`` (pairs while scheduling), ``hkbu`` (the
authors' code as a configuration), ``tasks`` (generator, task files), ``fitting``.
"""

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
