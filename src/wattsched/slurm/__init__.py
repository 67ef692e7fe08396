"""wattsched on Slurm: real jobs scheduled by driving a real Slurm (22.05 or later).

Slurm launches, authenticates and accounts; wattsched decides and measures.

* :class:`Controller` (:mod:`.controller`): watches one partition and schedules its jobs on MIG slices, each
  GPU's MIG engine as its model of the present; :func:`load_config` (:mod:`.config`) reads its TOML file,
  :class:`StateStore` (:mod:`.state`) keeps its SQLite state and journal.
* :class:`SlurmClient` (:mod:`.client`): Slurm's command-line tools, typed; :class:`FakeSlurmClient`, the same
  in memory for tests; :class:`~wattsched.slurm.rest.RestClient` (:mod:`.rest`), the same through slurmrestd
  (Slurm 26.05), picked by the config's ``[slurm] api``.
* :func:`parse_annotation` (:mod:`.annotations`): what a job states in its ``--comment``.
* :mod:`.placement`: the data-centre simulator's placements shown the controller's GPUs (``live_pool``);
  :mod:`.metrics`: the controller's Prometheus metrics, for node_exporter's textfile collector.
* :func:`split_energy` / :class:`EnergyLedger` (:mod:`.energy`): a GPU's measured energy shared among the
  jobs on its slices.
* :func:`import_sacct` (:mod:`.sacct`): a ``sacct`` job log as a wattsched trace.
* :mod:`.sandbox`: a single-host Slurm with fake MIG GPUs (tests, trying it out), one node or many
  (:mod:`.sandbox_nodes`: one slurmd per node).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched._lazy import lazy_exports

if TYPE_CHECKING:
    from wattsched.slurm.annotations import Annotation, AnnotationError, parse_annotation
    from wattsched.slurm.client import FakeSlurmClient, SlurmClient, SlurmError, SlurmJob
    from wattsched.slurm.config import ControllerConfig, load_config
    from wattsched.slurm.controller import Controller
    from wattsched.slurm.energy import EnergyLedger, split_energy
    from wattsched.slurm.sacct import import_sacct
    from wattsched.slurm.state import StateStore

_SOURCES = {
    "annotations": ("Annotation", "AnnotationError", "parse_annotation"),
    "client": ("FakeSlurmClient", "SlurmClient", "SlurmError", "SlurmJob"),
    "config": ("ControllerConfig", "load_config"),
    "controller": ("Controller",),
    "energy": ("EnergyLedger", "split_energy"),
    "sacct": ("import_sacct",),
    "state": ("StateStore",),
}
__all__ = [
    "Annotation",
    "AnnotationError",
    "Controller",
    "ControllerConfig",
    "EnergyLedger",
    "FakeSlurmClient",
    "SlurmClient",
    "SlurmError",
    "SlurmJob",
    "StateStore",
    "import_sacct",
    "load_config",
    "parse_annotation",
    "split_energy",
]

# Imported on first use (PEP 562): a Prolog running `wattsched slurm prolog` loads no pandas.
__getattr__, __dir__ = lazy_exports(
    __name__, {name: f"{__name__}.{module}" for module, names in _SOURCES.items() for name in names}
)
