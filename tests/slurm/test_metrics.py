"""The controller's Prometheus metrics: the file node_exporter's textfile collector reads, parsed back and
checked against the controller's state after passes on an in-memory Slurm and a fake A100 (energies by
hand); the Grafana dashboard queries only metrics the controller writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from wattsched.errors import ConfigError
from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type
from wattsched.slurm.client import FakeSlurmClient, JobState
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.metrics import METRICS, GpuMetrics, JobMetrics, MetricsView, write_metrics
from wattsched.slurm.state import StateStore

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "wattsched.json"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _setup(
    tmp_path: Path, metrics: str = "metrics/wattsched.prom"
) -> tuple[Controller, FakeSlurmClient, FakeGpuState, Clock]:
    """One A100-40GB in configuration 1 (one 7g slice); metrics written to ``metrics``."""
    clock = Clock()
    gpu_file = tmp_path / "gpu.json"
    fake = FakeGpuState.create(gpu_file, [("a100-40gb", 1)], clock=clock)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "wattsched.toml").write_text(f"""
[slurm]
partition = "mig"
state = "state.db"
metrics_file = "{metrics}"
[[nodes]]
name = "node0"
gpus = ["a100-40gb"]
configuration = 1
backend = "fake:{gpu_file}"
""")
    config = load_config(tmp_path / "wattsched.toml")
    instances = fake.instances(0)
    slurm = FakeSlurmClient(
        {"node0": [gres_type(fake.gpu(0), i.profile) for i in instances]},
        uuids={"node0": [i.uuid for i in instances]},
        clock=clock,
    )
    controller = Controller(config, slurm, StateStore(config.state_path), clock=clock, meters={"node0": fake})
    return controller, slurm, fake, clock


def _mark(slurm: FakeSlurmClient, fake: FakeGpuState) -> None:
    busy = {uuid for job in slurm.jobs() if job.state is JobState.RUNNING for uuid in job.gpu_uuids}
    for instance in fake.instances(0):
        fake.set_busy(instance.uuid, "training" if instance.uuid in busy else None)


def _samples(path: Path) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(path.read_text()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def _get(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def test_the_metrics_file_follows_the_controllers_passes(tmp_path: Path) -> None:
    controller, slurm, fake, clock = _setup(tmp_path)
    path = tmp_path / "metrics" / "wattsched.prom"
    gpu = {"node": "node0", "gpu": "0", "model": "a100-40gb"}
    a = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()  # t = 0: a arrives and is released; the counter's first reading
    samples = _samples(path)
    assert _get(samples, "wattsched_gpu_energy_joules_total", **gpu) == 0.0
    assert ("wattsched_gpu_power_watts", frozenset(gpu.items())) not in samples  # one reading: no power yet
    assert _get(samples, "wattsched_decisions_total", kind="release") == 1
    assert _get(samples, "wattsched_queue_jobs", node="node0", gpu="0", slice_type="a100_7g.40gb") == 1
    assert _get(samples, "wattsched_node_powered_down", node="node0") == 0
    first_inode = path.stat().st_ino

    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, fake)
    controller.run_once()  # t = 1: a runs; 0-1 s the GPU idled at 40 W
    samples = _samples(path)
    assert _get(samples, "wattsched_gpu_power_watts", **gpu) == pytest.approx(40.0)
    assert _get(samples, "wattsched_gpu_energy_joules_total", **gpu) == pytest.approx(40.0)
    assert _get(samples, "wattsched_running_jobs", node="node0", gpu="0") == 1
    assert _get(samples, "wattsched_queue_jobs", node="node0", gpu="0", slice_type="none") == 0
    assert path.stat().st_ino != first_inode  # replaced by a rename, never rewritten in place

    clock.now += 10.0
    b = slurm.submit(comment="wattsched: work=100s deadline=+5000s")  # waits: the only slice is a's
    controller.run_once()  # t = 11: 1-11 s the 7g ran a at P(7) = 248.5 W: 2,485 J, all a's
    samples = _samples(path)
    assert _get(samples, "wattsched_gpu_power_watts", **gpu) == pytest.approx(248.5)
    assert _get(samples, "wattsched_gpu_energy_joules_total", **gpu) == pytest.approx(40.0 + 2485.0)
    job = {"node": "node0", "gpu": "0", "user": "user"}
    assert _get(samples, "wattsched_job_energy_joules_total", job_id=str(a), **job) == pytest.approx(2485.0)
    assert _get(samples, "wattsched_job_energy_joules_total", job_id=str(b), **job) == 0.0
    assert _get(samples, "wattsched_queue_jobs", node="node0", gpu="0", slice_type="none") == 1
    row = controller.store.job(a)
    assert row is not None and row.energy_mj / 1000.0 == pytest.approx(2485.0)
    assert _get(samples, "wattsched_decisions_total", kind="admin_comment") == 1  # a's energy so far
    assert _get(samples, "wattsched_last_pass_timestamp_seconds") == clock.now

    clock.now += 100.0
    slurm.finish(a)  # a ran 1-111 s: 110 s x 248.5 W = 27,335 J
    _mark(slurm, fake)
    slurm.node_flags["node0"] = ("POWERED_DOWN",)
    controller.run_once()  # t = 111: a's total is shown once more; b is released
    samples = _samples(path)
    assert _get(samples, "wattsched_job_energy_joules_total", job_id=str(a), **job) == pytest.approx(27335.0)
    assert _get(samples, "wattsched_gpu_energy_joules_total", **gpu) == pytest.approx(40.0 + 27335.0)
    assert _get(samples, "wattsched_decisions_total", kind="release") == 2
    assert _get(samples, "wattsched_node_powered_down", node="node0") == 1
    assert {name.removesuffix("_total") for name, _ in samples} <= {m.removesuffix("_total") for m in METRICS}
    clock.now += 5.0
    controller.run_once()  # a is no longer managed: its series goes
    assert not any(
        name == "wattsched_job_energy_joules_total" and ("job_id", str(a)) in labels
        for name, labels in _samples(path)
    )
    assert [p.name for p in path.parent.iterdir()] == ["wattsched.prom"]  # no temporary file left


def test_every_metric_is_written_with_its_labels(tmp_path: Path) -> None:
    """A view with everything in it: every name of METRICS comes out, counters with ``_total``."""
    view = MetricsView(
        time_s=100.0,
        gpus=[GpuMetrics("gpu01", 1, "h100-80gb", 350.0, 1.5e6, {"none": 2, "h100_3g.40gb": 1}, 3, "wait")],
        jobs=[JobMetrics(7, "alice", "gpu01", 1, 1234.5)],
        decisions={"release": 4, "signal": 1},
        repartition_phases={("gpu01", 1, "drain"): 2, ("gpu01", 1, "done"): 1},
        powered_down={"gpu01": False, "gpu02": True},
    )
    path = tmp_path / "out.prom"
    write_metrics(path, view)
    samples = _samples(path)
    assert {name for name, _ in samples} == set(METRICS)
    assert _get(samples, "wattsched_repartition_phases_total", node="gpu01", gpu="1", phase="drain") == 2
    assert _get(samples, "wattsched_repartition_phase", node="gpu01", gpu="1", phase="wait") == 1
    assert _get(samples, "wattsched_queue_jobs", node="gpu01", gpu="1", slice_type="h100_3g.40gb") == 1
    assert _get(samples, "wattsched_node_powered_down", node="gpu02") == 1
    types = {family.name: family.type for family in text_string_to_metric_families(path.read_text())}
    assert types["wattsched_gpu_energy_joules"] == "counter" and types["wattsched_gpu_power_watts"] == "gauge"


def test_a_metrics_file_must_be_one_the_textfile_collector_reads(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"slurm.metrics_file must end in .prom"):
        _setup(tmp_path, metrics="metrics/wattsched.txt")


def test_the_dashboard_queries_only_metrics_the_controller_writes() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [
        target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "expr" in target
    ]
    names = {name for query in queries for name in re.findall(r"\bwattsched_[a-z_]+", query)}
    assert names and names <= set(METRICS), sorted(names - set(METRICS))
    assert names == set(METRICS)  # and every metric is on it somewhere
