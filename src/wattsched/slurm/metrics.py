"""What operators watch: the controller's state in Prometheus's text format, for node_exporter's textfile
collector (no port is opened).

At the end of every pass the controller fills a :class:`MetricsView` and :func:`write_metrics` writes it to
``[slurm] metrics_file`` (a ``.prom`` file in the folder given to node_exporter's
``--collector.textfile.directory``): written to a temporary file beside it and renamed over it, so the
collector never reads half a file. The metrics (:data:`METRICS`; every name begins ``wattsched_``, units in
the name, counters end in ``_total``):

* ``wattsched_gpu_power_watts{node,gpu,model}``: each GPU's mean power over the last pass (energy counter);
* ``wattsched_gpu_energy_joules_total{node,gpu,model}``: each GPU's energy since the controller's first
  reading (kept in the state file: a restart does not reset it);
* ``wattsched_job_energy_joules_total{job_id,user,node,gpu}``: each managed job's energy so far (jobs still
  managed, and those that ended in the pass with their total);
* ``wattsched_queue_jobs{node,gpu,slice_type}``: jobs waiting on each GPU by the GRES type of the slice they
  are released for (``none``: still held, waiting for the model to give them a slice);
* ``wattsched_running_jobs{node,gpu}``: jobs on a slice;
* ``wattsched_decisions_total{kind}``: the actions the controller carried out since it started (``release``,
  ``hold``, ``hold_with_reason``, ``signal``, ``requeue_hold``, ``admin_comment``, ``renew``, ...);
* ``wattsched_repartition_phases_total{node,gpu,phase}``: repartition phases entered since the controller
  started (``drain`` counts the repartitions begun; ``done``, ``rolled_back``, ``failed`` how they ended);
* ``wattsched_repartition_phase{node,gpu,phase}``: 1 for the phase of a repartition under way;
* ``wattsched_node_powered_down{node}``: 1 for a node Slurm reports powered down (absent where unknown);
* ``wattsched_last_pass_timestamp_seconds``: when the pass that wrote the file ran (Unix time).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

__all__ = ["METRICS", "GpuMetrics", "JobMetrics", "MetricsView", "render", "write_metrics"]

#: Every metric name the file may hold (as exposed: counters with their ``_total``).
METRICS = (
    "wattsched_gpu_power_watts",
    "wattsched_gpu_energy_joules_total",
    "wattsched_job_energy_joules_total",
    "wattsched_queue_jobs",
    "wattsched_running_jobs",
    "wattsched_decisions_total",
    "wattsched_repartition_phases_total",
    "wattsched_repartition_phase",
    "wattsched_node_powered_down",
    "wattsched_last_pass_timestamp_seconds",
)


@dataclass(frozen=True)
class GpuMetrics:
    node: str
    gpu: int
    #: The GPU's catalogue name.
    model: str
    #: Mean power over the last pass (W); ``None`` before two readings of its counter.
    power_w: float | None
    #: Energy since the first reading (J); ``None`` without a reading.
    energy_j: float | None
    #: Jobs waiting by the GRES type of the slice they are released for (``none``: no slice yet).
    queue: Mapping[str, int]
    running_jobs: int
    #: The phase of the repartition under way (``None``: none).
    repartition_phase: str | None = None


@dataclass(frozen=True)
class JobMetrics:
    job_id: int
    user: str
    node: str
    gpu: int
    energy_j: float


@dataclass(frozen=True)
class MetricsView:
    """What one pass writes (module docstring)."""

    time_s: float
    gpus: Sequence[GpuMetrics]
    jobs: Sequence[JobMetrics]
    #: Actions carried out since the start, by kind.
    decisions: Mapping[str, int]
    #: Repartition phases entered since the start, by ``(node, gpu, phase)``.
    repartition_phases: Mapping[tuple[str, int, str], int]
    #: Whether each node is powered down, for the nodes Slurm reported.
    powered_down: Mapping[str, bool] = field(default_factory=dict)


class _View:
    """A collector over one view (prometheus_client asks it for its families when the file is written)."""

    def __init__(self, view: MetricsView) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        view = self.view
        gpu_labels = ["node", "gpu", "model"]
        power = GaugeMetricFamily(
            "wattsched_gpu_power_watts", "GPU mean power over the last pass", labels=gpu_labels
        )
        energy = CounterMetricFamily(
            "wattsched_gpu_energy_joules",
            "GPU energy since the controller's first reading",
            labels=gpu_labels,
        )
        queue = GaugeMetricFamily(
            "wattsched_queue_jobs",
            "Jobs waiting, by the GRES type of their slice",
            labels=["node", "gpu", "slice_type"],
        )
        running = GaugeMetricFamily("wattsched_running_jobs", "Jobs on a slice", labels=["node", "gpu"])
        phase = GaugeMetricFamily(
            "wattsched_repartition_phase",
            "Phase of the repartition under way",
            labels=["node", "gpu", "phase"],
        )
        for gpu in view.gpus:
            labels = [gpu.node, str(gpu.gpu), gpu.model]
            if gpu.power_w is not None:
                power.add_metric(labels, gpu.power_w)
            if gpu.energy_j is not None:
                energy.add_metric(labels, gpu.energy_j)
            for slice_type, count in sorted(gpu.queue.items()):
                queue.add_metric([gpu.node, str(gpu.gpu), slice_type], count)
            running.add_metric([gpu.node, str(gpu.gpu)], gpu.running_jobs)
            if gpu.repartition_phase is not None:
                phase.add_metric([gpu.node, str(gpu.gpu), gpu.repartition_phase], 1)
        jobs = CounterMetricFamily(
            "wattsched_job_energy_joules",
            "Energy charged to each managed job",
            labels=["job_id", "user", "node", "gpu"],
        )
        for job in view.jobs:
            jobs.add_metric([str(job.job_id), job.user, job.node, str(job.gpu)], job.energy_j)
        decisions = CounterMetricFamily(
            "wattsched_decisions", "Actions carried out since the controller started", labels=["kind"]
        )
        for kind, count in sorted(view.decisions.items()):
            decisions.add_metric([kind], count)
        phases = CounterMetricFamily(
            "wattsched_repartition_phases",
            "Repartition phases entered since the controller started",
            labels=["node", "gpu", "phase"],
        )
        for (node, index, name), count in sorted(view.repartition_phases.items()):
            phases.add_metric([node, str(index), name], count)
        down = GaugeMetricFamily(
            "wattsched_node_powered_down", "1: Slurm reports the node powered down", labels=["node"]
        )
        for node, off in sorted(view.powered_down.items()):
            down.add_metric([node], 1.0 if off else 0.0)
        last = GaugeMetricFamily(
            "wattsched_last_pass_timestamp_seconds", "When the last pass ran (Unix time)"
        )
        last.add_metric([], view.time_s)
        yield from (power, energy, jobs, queue, running, decisions, phases, phase, down, last)


def render(view: MetricsView) -> CollectorRegistry:
    """A registry holding ``view``'s metrics (nothing else: not the process metrics of the default one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_View(view))
    return registry


def write_metrics(path: Path, view: MetricsView) -> None:
    """Write ``view`` to ``path`` in the text format, atomically (a temporary file beside it, renamed over
    it); ``OSError`` when the folder cannot be written."""
    write_to_textfile(str(path), render(view))
