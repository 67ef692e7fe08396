"""A data centre of MIG GPUs: servers × catalogue GPUs, each the one-GPU engine, driven in one time order.

* :func:`simulate_cluster` / :class:`ClusterSimulation` (:mod:`.engine`): placement, per-GPU partitioners and
  policies, server power states (P2's DRS), GPU clock levels (P2's DVFS model, :mod:`.clocks`).
* :data:`PLACEMENTS` (:mod:`.placement`): ``first-fit``, ``best-fit``, ``least-energy``, ``deadline-aware``,
  ``fewest-jobs``.
* :class:`ClusterSpec`, :class:`ClusterOptions`, :class:`PowerStates` (:mod:`.spec`); results in
  :class:`ClusterResult` (:mod:`.result`).
* Workloads (:mod:`.workloads`: the ``paper`` preset scaled to N GPUs, streamed by day; traces with a
  ``gpus`` column) and clusters from files (:mod:`.nodes`: the Alibaba 2023 node list, cluster files).
"""

from __future__ import annotations

from wattsched.cluster.clocks import ClockModel, ClockSchedule, clock_schedule
from wattsched.cluster.engine import ClusterSimulation, simulate_cluster
from wattsched.cluster.placement import PLACEMENTS, GpuPool, PlacementPolicy
from wattsched.cluster.result import ClusterJobRecord, ClusterResult
from wattsched.cluster.spec import ClusterOptions, ClusterSpec, PowerStates, ServerSpec
from wattsched.cluster.workloads import PRESETS, cluster_spec, preset_spec, stream_jobs

__all__ = [
    "PLACEMENTS",
    "PRESETS",
    "ClockModel",
    "ClockSchedule",
    "ClusterJobRecord",
    "ClusterOptions",
    "ClusterResult",
    "ClusterSimulation",
    "ClusterSpec",
    "GpuPool",
    "PlacementPolicy",
    "PowerStates",
    "ServerSpec",
    "clock_schedule",
    "cluster_spec",
    "preset_spec",
    "simulate_cluster",
    "stream_jobs",
]
