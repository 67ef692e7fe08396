"""Live placement on an in-memory Slurm with 2 nodes x 2 fake A100s: the controller places each new job where
the data-centre simulator's placement puts it on the same trace, the placements differ where they should,
and a plug-in placement works live."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattsched import plugins
from wattsched.cluster import PLACEMENTS, ClusterOptions, ClusterResult, ClusterSpec, simulate_cluster
from wattsched.cluster.placement import GpuPool
from wattsched.errors import ConfigError
from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type
from wattsched.hardware.mig import default_gpu
from wattsched.mig.simulator import MigSimulation
from wattsched.slurm.client import FakeSlurmClient, JobState
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.jobs import engine_job
from wattsched.slurm.placement import LiveGpu, LivePlacement
from wattsched.slurm.state import StateStore
from wattsched.workload.job import Job, JobKind, Scaling

NODES = ("node0", "node1")


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _setup(
    tmp_path: Path, placement: str, configuration: int = 3, extra: str = ""
) -> tuple[Controller, FakeSlurmClient, dict[str, FakeGpuState], Clock]:
    """Two nodes of two A100-40GBs each in ``configuration``; the models' time 0 is the first pass."""
    clock = Clock()
    meters = {}
    nodes = ""
    for node in NODES:
        path = tmp_path / f"{node}.json"
        meters[node] = FakeGpuState.create(path, [("a100-40gb", configuration)] * 2, clock=clock)
        nodes += f"""
[[nodes]]
name = "{node}"
gpus = ["a100-40gb", "a100-40gb"]
configuration = {configuration}
backend = "fake:{path}"
"""
    (tmp_path / "wattsched.toml").write_text(f"""
[slurm]
partition = "mig"
state = "state.db"
time_origin = "start"
{extra}
[scheduling]
placement = "{placement}"
{nodes}""")
    config = load_config(tmp_path / "wattsched.toml")
    devices = {
        n: [gres_type(m.gpu(g), i.profile) for g in (0, 1) for i in m.instances(g)] for n, m in meters.items()
    }
    uuids = {n: [i.uuid for g in (0, 1) for i in m.instances(g)] for n, m in meters.items()}
    slurm = FakeSlurmClient(devices, uuids=uuids, clock=clock)
    controller = Controller(config, slurm, StateStore(config.state_path), clock=clock, meters=dict(meters))
    return controller, slurm, meters, clock


def _start_released(controller: Controller, slurm: FakeSlurmClient, meters: dict[str, FakeGpuState]) -> None:
    """What Slurm does with a released job: it starts on the device of the slice it was released for (the
    in-memory Slurm would take any free device of its type on the node, which may be the other GPU's)."""
    for job in slurm.jobs():
        row = controller.store.job(job.job_id)
        if job.state is not JobState.PENDING or job.held or row is None or row.node is None:
            continue
        meter = meters[row.node]
        offset = len(meter.instances(0)) if row.gpu == 1 else 0
        labels = [str(i.label) for i in meter.instances(row.gpu or 0)]
        slurm.start(job.job_id, gpu_indices=[offset + labels.index(row.slice or "")], node=row.node)


def _gpu_index(controller: Controller, job_id: int) -> int:
    """The cluster engine's index of the GPU a job went to: GPUs counted node by node."""
    row = controller.store.job(job_id)
    assert row is not None and row.node is not None and row.gpu is not None
    return NODES.index(row.node) * 2 + row.gpu


# Sixteen jobs in 70 s: (arrival s, work s, deadline after arrival s). Short and long, tight and loose, at
# times more at once than free slices (the fallback places them), never so many that the simulator
# preempts (the controller's jobs are not preemptible); each placement spreads them differently.
TRACE = [
    (0, 20, 200),
    (3, 20, 40),
    (9, 90, 450),
    (13, 40, 1200),
    (19, 20, 100),
    (26, 30, 60),
    (28, 10, 20),
    (30, 60, 600),
    (35, 10, 300),
    (40, 30, 90),
    (46, 30, 150),
    (51, 60, 120),
    (53, 10, 100),
    (57, 10, 100),
    (62, 40, 120),
    (69, 60, 300),
]
PLACED = ("first-fit", "best-fit", "least-energy", "deadline-aware", "fewest-jobs")


def _engine(placement: str) -> ClusterResult:
    jobs = [
        engine_job(str(i), float(a), float(a + d), "training", "linear", float(w))
        for i, (a, w, d) in enumerate(TRACE)
    ]
    options = ClusterOptions(placement=placement, configuration=3, record_jobs=True)
    return simulate_cluster(jobs, ClusterSpec.homogeneous(2, 2), options)


def test_the_trace_tells_the_placements_apart() -> None:
    results = [_engine(name) for name in PLACED]
    assert all(result.preemptions == 0 for result in results)
    assert len({tuple(r.gpu for r in result.records or ()) for result in results}) == len(PLACED)
    assert sum(result.fallback_placements for result in results) > 0


@pytest.mark.parametrize("placement", PLACED)
def test_the_controller_places_each_job_where_the_cluster_engine_does(tmp_path: Path, placement: str) -> None:
    """The same trace through the cluster engine (2 servers x 2 GPUs) and through the controller on the
    in-memory Slurm, which ends each job at the time its GPU's model predicts (as the simulator does):
    every job lands on the same GPU, and the placements themselves do not all agree."""
    controller, slurm, meters, clock = _setup(tmp_path, placement)
    start = clock.now
    ids: list[int] = []
    pending = list(TRACE)
    for second in range(2000):
        clock.now = start + second
        for job in slurm.jobs():  # every job that ends by now ends at its predicted time
            row = controller.store.job(job.job_id)
            if job.state is not JobState.RUNNING or row is None:
                continue
            model = controller.gpus[_gpu_index(controller, job.job_id)]
            end = model.sim.predicted_completions().get(model.ranks[job.job_id])
            if end is not None and end + controller.origin_s <= clock.now:
                assert (
                    end + controller.origin_s != float(round(clock.now)) or not pending
                )  # no tie with an arrival
                clock.now = end + controller.origin_s
                slurm.finish(job.job_id)
                clock.now = start + second
        while pending and pending[0][0] == second:
            _, work, deadline = pending.pop(0)
            ids.append(slurm.submit(comment=f"wattsched: work={work}s deadline=+{deadline}s"))
        controller.run_once()
        _start_released(controller, slurm, meters)
        if not pending and all(slurm.job(i).state is JobState.COMPLETED for i in ids):  # type: ignore[union-attr]
            break
    assert controller.origin_s == start
    result = _engine(placement)
    assert result.records is not None
    assert [_gpu_index(controller, i) for i in ids] == [r.gpu for r in result.records]


@pytest.mark.parametrize(
    ("placement", "expected"),
    [("first-fit", ("node0", 1)), ("least-energy", ("node0", 0)), ("deadline-aware", ("node0", 1))],
)
def test_least_energy_and_first_fit_choose_differently_for_a_tight_job(
    tmp_path: Path, placement: str, expected: tuple[str, int]
) -> None:
    """Configuration 3 (4g, 2g, 1g.10gb). A: work 100 s, deadline +300 s: only the 4g (185.5 s) meets it,
    every GPU is idle: each placement takes GPU node0/0, whose policy puts A on its 4g. C, 10 s later, work
    100 s, deadline +200 s: again only a 4g (185.5 s) meets it.
    * first-fit: the first GPU with a free slice on which C is on time: node0/1 (node0/0's 4g is busy);
    * least-energy: the least marginal energy, on time or not: node0/0's 2g, (P(6) - P(4)) x 371 s =
      (248.5 - 243.9) W x 371 s = 1,707 J, against its 1g (247.7 - 243.9) x 742 = 2,820 J and an idle
      GPU's 4g 203.9 x 185.5 = 37,823 J;
    * deadline-aware: the least energy among on-time slices: an idle GPU's 4g, the first: node0/1."""
    controller, slurm, meters, clock = _setup(tmp_path, placement)
    a = slurm.submit(comment="wattsched: work=100s deadline=+300s")
    controller.run_once()
    _start_released(controller, slurm, meters)
    row = controller.store.job(a)
    assert row is not None and (row.node, row.gpu, row.slice) == ("node0", 0, "4g.20gb@0")
    clock.now += 10.0
    c = slurm.submit(comment="wattsched: work=100s deadline=+200s")
    controller.run_once()
    row = controller.store.job(c)
    assert row is not None and (row.node, row.gpu) == expected


def test_a_powered_down_node_takes_no_job_unless_every_gpu_is_full(tmp_path: Path) -> None:
    """Slurm says node0 is powered down: first-fit skips its GPUs while node1 has free slices; once every
    slice of node1 is taken the engine's fallback sends the job to the first powered-down node (Slurm resumes
    it for the job)."""
    controller, slurm, meters, clock = _setup(tmp_path, "first-fit", configuration=1)  # one 7g slice a GPU
    slurm.node_flags["node0"] = ("POWERED_DOWN",)
    placed = []
    for _ in range(3):
        job = slurm.submit(comment="wattsched: work=1000s deadline=+100000s")
        controller.run_once()
        _start_released(controller, slurm, meters)
        clock.now += 1.0
        row = controller.store.job(job)
        assert row is not None
        placed.append((row.node, row.gpu))
    assert placed == [("node1", 0), ("node1", 1), ("node0", 0)]


def _power_ups(slurm: FakeSlurmClient) -> list[str]:
    return [call[1] for call in slurm.calls if call[0] == "power_up"]


def test_a_job_placed_on_an_off_node_waits_for_its_boot_then_reaches_its_gpu(tmp_path: Path) -> None:
    """As the data-centre simulator holds the jobs placed on an off server until its boot ends: the job the
    fallback sends to powered-down node0 stays held in Slurm (phase ``booting``, not in any GPU's model) while
    the controller asks Slurm once to power node0 up; a job arriving while node0 boots goes to node0's other
    GPU (a booting node's GPU without waiting jobs is offered, as the engine offers it) and waits too, with no
    second request; once Slurm shows node0 up both reach their GPUs and are released there. A controller
    restarted in between keeps them waiting."""
    controller, slurm, meters, clock = _setup(tmp_path, "first-fit", configuration=1)  # one 7g slice a GPU
    slurm.node_flags["node0"] = ("POWERED_DOWN",)
    jobs = []
    for _ in range(3):
        jobs.append(slurm.submit(comment="wattsched: work=1000s deadline=+100000s"))
        controller.run_once()
        _start_released(controller, slurm, meters)
        clock.now += 1.0
    third = controller.store.job(jobs[2])
    assert third is not None and (third.phase, third.node, third.gpu) == ("booting", "node0", 0)
    assert _power_ups(slurm) == ["node0"] and slurm.node_flags["node0"] == ("POWER_UP", "POWERED_DOWN")
    assert slurm.job(jobs[2]).held  # type: ignore[union-attr]
    assert not controller.gpus[0].ranks  # not in node0/0's model yet
    jobs.append(slurm.submit(comment="wattsched: work=1000s deadline=+100000s"))
    controller.run_once()
    fourth = controller.store.job(jobs[3])
    assert fourth is not None and (fourth.phase, fourth.node, fourth.gpu) == ("booting", "node0", 1)
    assert _power_ups(slurm) == ["node0"]  # booting already: not asked again
    clock.now += 1.0
    controller = Controller(controller.config, slurm, controller.store, clock=clock, meters=dict(meters))
    controller.run_once()  # restarted while node0 boots: the jobs still wait, outside the models
    assert [controller.store.job(j).phase for j in jobs[2:]] == ["booting", "booting"]  # type: ignore[union-attr]
    assert not controller.gpus[0].ranks and not controller.gpus[1].ranks
    slurm.node_flags["node0"] = ()  # its slurmd registered: up
    clock.now += 1.0
    controller.run_once()
    rows = [controller.store.job(j) for j in jobs[2:]]
    assert [(r.phase, r.node, r.gpu) for r in rows if r is not None] == [
        ("released", "node0", 0),
        ("released", "node0", 1),
    ]
    assert not slurm.job(jobs[2]).held and not slurm.job(jobs[3]).held  # type: ignore[union-attr]
    assert _power_ups(slurm) == ["node0"]


def test_a_job_waiting_for_a_node_that_does_not_come_back_is_placed_again(tmp_path: Path) -> None:
    """Slurm gives up on node0's boot (``ResumeTimeout``: the node is down): its waiting job is placed
    again, on a GPU of a node that is up, and the down node takes no new job, not even from the fallback."""
    controller, slurm, meters, clock = _setup(tmp_path, "first-fit", configuration=1)
    slurm.node_flags["node0"] = ("POWERED_DOWN",)
    long_jobs = [slurm.submit(comment="wattsched: work=20s deadline=+100000s") for _ in range(2)]
    controller.run_once()
    _start_released(controller, slurm, meters)
    waiting = slurm.submit(comment="wattsched: work=1000s deadline=+100000s")
    clock.now += 1.0
    controller.run_once()
    row = controller.store.job(waiting)
    assert row is not None and (row.phase, row.node) == ("booting", "node0")
    slurm.node_flags["node0"] = ("POWERED_DOWN",)
    slurm.node_state["node0"] = "down"
    clock.now += 1.0
    controller.run_once()
    row = controller.store.job(waiting)
    assert row is not None and row.node == "node1" and row.phase == "queued"  # node1 is full: it queues there
    for job_id in long_jobs:
        slurm.finish(job_id)
    clock.now += 25.0
    controller.run_once()
    row = controller.store.job(waiting)
    assert row is not None and (row.phase, row.node) == ("released", "node1")
    late = slurm.submit(comment="wattsched: work=10s deadline=+100000s")
    clock.now += 1.0
    controller.run_once()
    row = controller.store.job(late)
    assert row is not None and row.node == "node1"
    assert _power_ups(slurm) == ["node0"]


@pytest.fixture
def restore_placements() -> Iterator[None]:
    """The placement registry, the loaded plug-ins, the modules and the path as they were before."""
    factories = dict(PLACEMENTS._factories)
    loaded = dict(plugins._LOADED)
    modules = set(sys.modules)
    path = list(sys.path)
    yield
    PLACEMENTS._factories.clear()
    PLACEMENTS._factories.update(factories)
    plugins._LOADED.clear()
    plugins._LOADED.update(loaded)
    for name in set(sys.modules) - modules:
        if name == "last_gpu":
            del sys.modules[name]
    sys.path[:] = path


def test_a_plug_in_placement_places_jobs_live(tmp_path: Path, restore_placements: None) -> None:
    """A placement registered by a plug-in module (the last available GPU) is named in the config and
    picks the GPU of each new job, as it would in ``cluster run --plugin``."""
    module = tmp_path / "last_gpu.py"
    module.write_text(
        textwrap.dedent('''\
        """A test plug-in: the highest-numbered GPU with a free slice."""
        from wattsched.cluster.placement import PLACEMENTS


        @PLACEMENTS.register("last-gpu")
        class LastGpu:
            name = "last-gpu"
            uses_classes = False

            def choose(self, job, now_s, pool):
                bits = 0
                for mask in pool.by_size.values():
                    bits |= mask
                return bits.bit_length() - 1
        ''')
    )
    plugins.load_plugin(str(module))
    controller, slurm, meters, clock = _setup(tmp_path, "last-gpu", configuration=1)
    placed = []
    for _ in range(3):
        job = slurm.submit(comment="wattsched: work=1000s deadline=+100000s")
        controller.run_once()
        _start_released(controller, slurm, meters)
        clock.now += 1.0
        row = controller.store.job(job)
        assert row is not None
        placed.append((row.node, row.gpu))
    assert placed == [("node1", 1), ("node1", 0), ("node0", 1)]


def test_a_misspelled_placement_is_one_line_listing_the_valid_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _setup(tmp_path, "least-enregy")
    message = str(caught.value)
    assert "\n" not in message and "scheduling.placement: unknown placement 'least-enregy'" in message
    assert "did you mean 'least-energy'" in message and "first-fit" in message and "fewest-jobs" in message


class _Nowhere:
    """A placement that never finds a GPU: every job goes to the fallback."""

    name = "nowhere"
    uses_classes = False

    def choose(self, job: Job, now_s: float, pool: GpuPool) -> int:
        del job, now_s, pool
        return -1


def _live_gpus(jobs: list[int], down: tuple[str, ...] = ()) -> list[LiveGpu]:
    """A100-40GBs in configuration 1 on nodes of two GPUs, GPU ``i`` with ``jobs[i]`` jobs waiting."""
    gpus = []
    for i, count in enumerate(jobs):
        sim = MigSimulation([], 1, "edf-ss-restricted", gpu=default_gpu())
        for n in range(count):
            sim.observe_arrival(engine_job(f"{i}-{n}", 0.0, 1000.0, JobKind.TRAINING, Scaling.LINEAR, 10.0))
        node = f"node{i // 2}"
        gpus.append(LiveGpu(node, sim, sim.decide(0.0), powered_down=node in down))
    return gpus


def test_the_fallback_gives_each_job_to_the_least_loaded_gpu_lowest_index_on_ties() -> None:
    """GPUs with 2, 0, 1, 0 jobs: each job the placement cannot place goes to the GPU with the fewest jobs
    then, the lowest index among equals, and counts there: [2,0,1,0] -> 1 -> [2,1,1,0] -> 3 -> [2,1,1,1] ->
    1 -> [2,2,1,1] -> 2 -> [2,2,2,1] -> 3 -> [2,2,2,2] -> 0 -> [3,2,2,2] -> 1."""
    live = LivePlacement(_Nowhere(), _live_gpus([2, 0, 1, 0]))
    job = engine_job("new", 0.0, 1000.0, JobKind.TRAINING, Scaling.LINEAR, 10.0)
    assert [live.choose(job, 0.0) for _ in range(7)] == [1, 3, 1, 2, 3, 0, 1]
    assert live.pool.jobs == [3, 3, 2, 2]
    assert live.fallbacks == 7


def test_the_fallback_fills_the_first_powered_down_node_before_any_gpu_that_is_up() -> None:
    """node1 (GPUs 2, 3) and node2 (GPUs 4, 5) are down, node0 is up with no job: the fallback takes the first
    down node's least-loaded GPU (GPU 3 with 0 jobs, then GPU 2 and 3 alike at 1: GPU 2), never node0's."""
    live = LivePlacement(_Nowhere(), _live_gpus([0, 0, 1, 0, 0, 0], down=("node1", "node2")))
    job = engine_job("new", 0.0, 1000.0, JobKind.TRAINING, Scaling.LINEAR, 10.0)
    assert [live.choose(job, 0.0) for _ in range(4)] == [3, 2, 3, 2]
