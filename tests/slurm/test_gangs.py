"""Multi-GPU jobs through the controller (gangs): the rules of wattsched.slurm.gangs, on the in-memory Slurm,
against the cluster engine's gangs."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from wattsched.cluster import ClusterOptions, ClusterSpec, simulate_cluster
from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm.client import FakeSlurmClient, JobState
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.gangs import format_members, gang_gres, parse_members, slurm_pick
from wattsched.slurm.gres_update import device_order
from wattsched.slurm.jobs import engine_job
from wattsched.slurm.state import StateStore

from .conftest import Killed, kill_in_a_release

NODES = ("node0", "node1")


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _setup(
    tmp_path: Path,
    configurations: tuple[int, int] = (3, 3),
    node1: tuple[int, int] = (3, 3),
    per_gpu: bool = False,
) -> tuple[Controller, FakeSlurmClient, dict[str, FakeGpuState], Clock]:
    """Two nodes of two A100-40GBs (node0's GPUs in ``configurations``, node1's in ``node1``), each node's
    devices in Slurm's index order (grouped by type); first-fit placement; ``per_gpu``: GRES types that
    name their GPU."""
    clock = Clock()
    meters, nodes = {}, ""
    for node in NODES:
        path = tmp_path / f"{node}.json"
        pair = configurations if node == "node0" else node1
        meters[node] = FakeGpuState.create(
            path, [("a100-40gb", c) for c in pair], clock=clock, gres_per_gpu=per_gpu
        )
        nodes += f"""
[[nodes]]
name = "{node}"
gpus = ["a100-40gb", "a100-40gb"]
configuration = {pair[0]}
backend = "fake:{path}"
gres_per_gpu = {str(per_gpu).lower()}
"""
        if pair[1] != pair[0]:
            nodes = nodes.replace(f"configuration = {pair[0]}\n", f"configuration = [{pair[0]}, {pair[1]}]\n")
    (tmp_path / "wattsched.toml").write_text(f"""
[slurm]
partition = "mig"
state = "state.db"
time_origin = "start"
[scheduling]
placement = "first-fit"
{nodes}""")
    config = load_config(tmp_path / "wattsched.toml")
    devices, uuids = {}, {}
    for node, meter in meters.items():
        instances = {(g, str(i.label)): i for g in (0, 1) for i in meter.instances(g)}
        layouts = [(meter.gpu(g), [str(i.label) for i in meter.instances(g)]) for g in (0, 1)]
        order = device_order(layouts, per_gpu=per_gpu)
        devices[node] = [meter.gres_type(g, instances[(g, label)].profile) for g, label in order]
        uuids[node] = [instances[key].uuid for key in order]
    slurm = FakeSlurmClient(devices, uuids=uuids, clock=clock)
    controller = Controller(config, slurm, StateStore(config.state_path), clock=clock, meters=dict(meters))
    return controller, slurm, meters, clock


def _run_released(
    slurm: FakeSlurmClient, meters: dict[str, FakeGpuState], controller: Controller | None = None
) -> None:
    """Slurm starts what was released, the fake GPUs busy under it: a gang on the first free devices of each
    type (Slurm's rule), a single job (with ``controller``) on the slice it was released for — Slurm could
    take another free slice of the type, which the controller follows (tested elsewhere)."""
    for job in slurm.jobs():
        row = controller.store.job(job.job_id) if controller is not None else None
        if job.state is not JobState.PENDING or job.held or row is None or row.gpus > 1 or row.node is None:
            continue
        uuid = next(i.uuid for i in meters[row.node].instances(row.gpu or 0) if str(i.label) == row.slice)
        slurm.start(job.job_id, gpu_indices=[slurm.uuids[row.node].index(uuid)], node=row.node)
    slurm.schedule()
    for node, meter in meters.items():
        busy = {
            u
            for job in slurm.jobs()
            if job.state is JobState.RUNNING and job.nodes == node
            for u in job.gpu_uuids
        }
        for g in (0, 1):
            for instance in meter.instances(g):
                meter.set_busy(instance.uuid, "training" if instance.uuid in busy else None)


def test_the_members_text_round_trips_and_the_gres_counts_each_type() -> None:
    members = {1: 2, 0: None}
    assert format_members(members) == "0=,1=2"
    assert parse_members(format_members(members)) == {0: None, 1: 2}
    assert parse_members(None) == {} and parse_members("") == {}
    assert gang_gres(["3g.20gb", "3g.20gb"]) == "gpu:3g.20gb:2"
    assert gang_gres(["4g.20gb", "3g.20gb", "4g.20gb"]) == "gpu:4g.20gb:2,gpu:3g.20gb:1"


def test_slurm_picks_the_first_free_devices_of_each_type_in_index_order() -> None:
    order = [(0, "3g@0"), (0, "3g@4"), (1, "3g@0"), (1, "3g@4"), (0, "1g@9"), (1, "1g@9")]
    types = {d: d[1].split("@")[0] for d in order}
    assert slurm_pick(order, types, set(), {"3g": 2}) == [(0, "3g@0"), (0, "3g@4")]  # both of GPU 0
    assert slurm_pick(order, types, {(0, "3g@0"), (0, "3g@4")}, {"3g": 2}) == [(1, "3g@0"), (1, "3g@4")]
    assert slurm_pick(order, types, {(0, "3g@0")}, {"3g": 1, "1g": 1}) == [(0, "3g@4"), (0, "1g@9")]
    assert slurm_pick(order, types, {(0, "1g@9"), (1, "1g@9")}, {"1g": 1}) is None


def test_a_gang_reserves_two_gpus_waits_for_them_to_empty_and_runs_on_one_slice_of_each(
    tmp_path: Path,
) -> None:
    """Configuration 3 (4g, 2g, 1g.10gb) everywhere. A (one GPU) goes to node0/0 (first-fit). G (2 GPUs),
    in the same pass, reserves the node with the fewer busy GPUs, node1, and is released at once: an idle
    GPU's policy gives a 100 s job with a loose deadline its smallest slice, the 1g.10gb, so the request is
    ``gpu:a100_1g.10gb:2``, one of each of node1's GPUs. H (``--gres=gpu:2``) then reserves node0 and waits
    for A. B (one GPU) finds every GPU held by a gang and waits at the cluster; when A ends H is released;
    when G ends B goes to node1 and G counts once, on time."""
    controller, slurm, meters, clock = _setup(tmp_path)
    a = slurm.submit(comment="wattsched: work=100s deadline=+3600s")
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    controller.run_once()
    _run_released(slurm, meters, controller)
    row = controller.store.job(g)
    assert row is not None and row.phase == "released" and row.node == "node1"
    assert parse_members(row.members) == {0: 2, 1: 2} and row.gres == "gpu:a100_1g.10gb:2"
    assert slurm.job(g).gres == "gpu:a100_1g.10gb:2"  # type: ignore[union-attr]
    clock.now += 1
    h = slurm.submit(comment="wattsched: work=50s deadline=+3600s", gres="gpu:2")
    controller.run_once()
    _run_released(slurm, meters, controller)
    gang = controller.store.job(g)
    assert gang is not None and gang.phase == "running" and gang.start_s == clock.now - 1
    uuids = {i.uuid: (gpu, str(i.label)) for gpu in (0, 1) for i in meters["node1"].instances(gpu)}
    got = sorted(uuids[u] for u in slurm.job(g).gpu_uuids)  # type: ignore[union-attr]
    assert got == [(0, "1g.10gb@6"), (1, "1g.10gb@6")]
    waiting = controller.store.job(h)
    assert waiting is not None and waiting.phase == "queued" and waiting.node == "node0"
    assert waiting.gpus == 2 and [m.gang for m in controller.gpus] == [h, h, g, g]
    clock.now += 1
    b = slurm.submit(comment="wattsched: work=10s deadline=+3600s")
    controller.run_once()
    parked = controller.store.job(b)
    assert parked is not None and parked.phase == "queued" and parked.node is None
    assert all(b not in model.ranks for model in controller.gpus)
    clock.now += 200
    slurm.finish(a)
    controller.run_once()
    _run_released(slurm, meters, controller)
    released = controller.store.job(h)
    assert released is not None and released.phase == "released" and released.gres == "gpu:a100_1g.10gb:2"
    assert controller.store.job(b).node is None  # type: ignore[union-attr]
    clock.now += 1
    controller.run_once()
    assert controller.store.job(h).phase == "running"  # type: ignore[union-attr]
    clock.now += 60
    slurm.finish(g)
    report = controller.run_once()
    assert g in report.finished
    done = controller.store.job(g)
    assert done is not None and done.phase == "done" and done.tardiness_s == 0.0
    assert [m.gang for m in controller.gpus] == [h, h, None, None]
    assert not controller.gpus[3].sim.predicted_completions()  # node1/1 is empty again
    placed = controller.store.job(b)
    assert placed is not None and (placed.node, placed.gpu) == ("node1", 0) and b in report.released


def test_a_gangs_energy_is_the_sum_of_its_gpus_shares(tmp_path: Path) -> None:
    """A gang alone on node1: every interval's rise of each of its two GPUs' counters is charged to it, less
    the idle remainder each GPU keeps (the idle power of its other slices)."""
    controller, slurm, meters, clock = _setup(tmp_path)
    controller.run_once()
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    first = controller.store.reading("node0", 0)
    assert first is not None
    readings = {gpu: controller.store.reading("node0", gpu) for gpu in (0, 1)}
    controller.run_once()
    _run_released(slurm, meters)
    row = controller.store.job(g)
    assert row is not None and row.node == "node0"  # both nodes idle: the first
    for _ in range(5):
        clock.now += 7
        controller.run_once()
    after = {gpu: controller.store.reading("node0", gpu) for gpu in (0, 1)}
    rise = sum(after[gpu].counter_mj - readings[gpu].counter_mj for gpu in (0, 1))  # type: ignore[union-attr]
    idle = sum(after[gpu].idle_mj - readings[gpu].idle_mj for gpu in (0, 1))  # type: ignore[union-attr]
    charged = controller.store.job(g).energy_mj  # type: ignore[union-attr]
    assert charged > 0 and charged + idle == rise
    per_gpu = [after[gpu].counter_mj - readings[gpu].counter_mj for gpu in (0, 1)]  # type: ignore[union-attr]
    assert per_gpu[0] == per_gpu[1] and charged > per_gpu[0]  # both GPUs' share, not one


def test_a_gang_slurm_would_give_two_slices_of_one_gpu_goes_to_another_node_or_is_held(
    tmp_path: Path,
) -> None:
    """node0's GPUs in configuration 5 (3g, 3g): a gang's job gets a 3g on each, but Slurm gives a request
    ``gpu:a100_3g.20gb:2`` the first two free 3g devices, both of GPU 0. The gang reserves node0 (both nodes
    idle: the first), finds that, and runs on node1 (configuration 3) at the next pass; where node1 is in
    configuration 5 too, it is held, one line saying why, and every GPU is free again."""
    controller, slurm, meters, _ = _setup(tmp_path, configurations=(5, 5))
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    controller.run_once()
    row = controller.store.job(g)
    assert row is not None and row.phase == "queued" and row.node is None
    controller.run_once()
    row = controller.store.job(g)
    assert row is not None and row.phase == "released" and row.node == "node1"
    assert any(
        "cannot get one slice of each GPU on node0" in text for _, text in controller.store.decisions()
    )

    (tmp_path / "both").mkdir()
    controller, slurm, _, _ = _setup(tmp_path / "both", configurations=(5, 5), node1=(5, 5))
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    controller.run_once()
    report = controller.run_once()
    assert report.rejected == [g] and controller.store.job(g).phase == "rejected"  # type: ignore[union-attr]
    assert slurm.job(g).admin_comment == (  # type: ignore[union-attr]
        "wattsched: it asks for 2 GPUs: Slurm gives a typed GPU request the first free devices of each type "
        "in index order, and on every node one of them offers a second slice of the type the job gets there "
        "(GPU 0 of node1: 3g.20gb)"
    )
    assert [m.gang for m in controller.gpus] == [None] * 4
    del meters


def test_a_job_asking_for_more_gpus_than_a_node_has_or_two_counts_is_held(tmp_path: Path) -> None:
    controller, slurm, _, _ = _setup(tmp_path)
    three = slurm.submit(comment="wattsched: work=60s gpus=3")
    both = slurm.submit(comment="wattsched: work=60s gpus=2", gres="gpu:4")
    bad = slurm.submit(comment="wattsched: work=60s gpus=two")
    report = controller.run_once()
    assert report.rejected == [three, both, bad]
    reasons = [slurm.job(i).admin_comment for i in (three, both, bad)]  # type: ignore[union-attr]
    assert reasons == [
        "wattsched: it asks for 3 GPUs of one node; the largest node, node0, has 2",
        "wattsched: it asks for 4 GPUs (--gres=gpu:4) and gpus=2 in its annotation",
        "wattsched: gpus: expected a whole number of GPUs from 1 to 1024, got 'two'",
    ]


def test_a_restarted_controller_keeps_the_reservation_and_the_running_gang(tmp_path: Path) -> None:
    controller, slurm, meters, clock = _setup(tmp_path)
    a = slurm.submit(comment="wattsched: work=100s deadline=+3600s")
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    h = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    controller.run_once()
    _run_released(slurm, meters)
    clock.now += 1
    controller.run_once()
    assert controller.store.job(g).phase == "running" and controller.store.job(h).phase == "queued"  # type: ignore[union-attr]
    restarted = Controller(controller.config, slurm, controller.store, clock=clock, meters=dict(meters))
    clock.now += 1
    restarted.run_once()
    assert [m.gang for m in restarted.gpus] == [h, h, g, g]
    assert all(restarted.gpus[i].ranks.get(g) is not None for i in (2, 3))
    assert all(g not in restarted.gpus[i].ranks for i in (0, 1))
    clock.now += 300
    slurm.finish(a)
    slurm.finish(g)
    report = restarted.run_once()
    assert set(report.finished) == {a, g}
    assert restarted.store.job(h).phase == "released"  # type: ignore[union-attr]


# (arrival s, work s, deadline after arrival s, GPUs): single jobs and gangs of two on 2 nodes x 2 GPUs.
TRACE = [
    (0, 5, 50, 1),
    (1, 10, 150, 2),
    (2, 8, 75, 1),
    (3, 5, 25, 2),
    (4, 15, 150, 1),
    (6, 3, 50, 1),
    (8, 8, 75, 2),
    (10, 5, 100, 1),
]


def test_the_controller_runs_gangs_where_and_when_the_cluster_engine_does(tmp_path: Path) -> None:
    """The same trace through the cluster engine and the controller on the in-memory Slurm (each job ending
    when its GPUs' models predict): every single job on the same GPU, every gang on GPUs of the same node
    (the engine's record names its last GPU), started no earlier than in the engine and at most 2 s later
    (passes are 1 s apart: a gang's start waits for the pass, and so does what follows its end)."""
    controller, slurm, meters, clock = _setup(tmp_path)
    start = clock.now
    ids: list[int] = []
    pending = list(TRACE)
    for second in range(3000):
        clock.now = start + second
        for job in slurm.jobs():
            row = controller.store.job(job.job_id)
            if job.state is not JobState.RUNNING or row is None:
                continue
            ends = [
                model.sim.predicted_completions().get(model.ranks[job.job_id])
                for model in controller.gpus
                if model.node == row.node and job.job_id in model.ranks
            ]
            if ends and all(e is not None for e in ends) and max(ends) + controller.origin_s <= clock.now:  # type: ignore[type-var]
                clock.now = max(ends) + controller.origin_s  # type: ignore[type-var]
                slurm.finish(job.job_id)
                clock.now = start + second
        while pending and pending[0][0] == second:
            _, work, deadline, gpus = pending.pop(0)
            ids.append(slurm.submit(comment=f"wattsched: work={work}s deadline=+{deadline}s gpus={gpus}"))
        controller.run_once()
        _run_released(slurm, meters, controller)
        if not pending and all(slurm.job(i).state is JobState.COMPLETED for i in ids):  # type: ignore[union-attr]
            break
    jobs = [
        replace(engine_job(str(i), float(a), float(a + d), "training", "linear", float(w)), gpus=n)
        for i, (a, w, d, n) in enumerate(TRACE)
    ]
    result = simulate_cluster(
        jobs,
        ClusterSpec.homogeneous(2, 2),
        ClusterOptions(placement="first-fit", configuration=3, record_jobs=True),
    )
    assert result.records is not None
    by_id = {r.record.job_id: r for r in result.records}
    for n, job_id in enumerate(ids):
        row = controller.store.job(job_id)
        assert row is not None and row.phase == "done"
        record = by_id[str(n)]
        if TRACE[n][3] == 1:
            assert NODES.index(row.node or "") * 2 + (row.gpu or 0) == record.gpu
        else:
            assert NODES.index(row.node or "") == record.gpu // 2
            assert sorted(parse_members(row.members)) == [0, 1]
        started = (row.start_s or 0.0) - controller.origin_s
        assert record.record.start_s <= started + 1e-6 <= record.record.start_s + 2.0 + 1e-6
    assert Counter(len(parse_members(controller.store.job(i).members)) for i in ids) == {0: 5, 2: 3}  # type: ignore[union-attr]


@pytest.mark.parametrize("gpus", [2])
def test_gpus_in_the_annotation_round_trips(gpus: int) -> None:
    from wattsched.slurm.annotations import format_annotation, parse_annotation

    note = parse_annotation(f"wattsched: work=60s gpus={gpus}", submit_s=0.0)
    assert note.gpus == gpus and "gpus" not in note.defaulted
    assert format_annotation(note) == f"wattsched: work=1m gpus={gpus}"
    assert parse_annotation(format_annotation(note), submit_s=0.0) == note


def test_with_gres_types_per_gpu_a_request_names_its_gpu_and_the_gang_runs_where_typed_gres_cannot(
    tmp_path: Path,
) -> None:
    """GRES types that name their GPU (``a100_3g.20gb_gpu0``): the gang on node0's two GPUs in configuration
    5 (3g, 3g), refused with types per profile (above), is released as one 3g of each GPU, and Slurm's pick
    is exactly those; a single job is released with its GPU's own type."""
    controller, slurm, meters, _ = _setup(tmp_path, configurations=(5, 5), per_gpu=True)
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    controller.run_once()
    row = controller.store.job(g)
    assert row is not None and row.phase == "released" and row.node == "node0"
    assert row.gres == "gpu:a100_3g.20gb_gpu0:1,gpu:a100_3g.20gb_gpu1:1"
    assert parse_members(row.members) == {0: 0, 1: 0}
    _run_released(slurm, meters, controller)
    owner = {i.uuid: (gpu, str(i.label)) for gpu in (0, 1) for i in meters["node0"].instances(gpu)}
    assert sorted(owner[u] for u in slurm.job(g).gpu_uuids) == [(0, "3g.20gb@0"), (1, "3g.20gb@0")]  # type: ignore[union-attr]
    one = slurm.submit(comment="wattsched: work=10s deadline=+3600s")
    controller.run_once()
    single = controller.store.job(one)
    assert single is not None and (single.node, single.gpu) == ("node1", 0)
    assert single.gres == "gpu:a100_1g.10gb_gpu0:1"
    assert meters["node0"].fake_gpus_conf()[0].startswith("a100_3g.20gb_gpu0|")
    assert meters["node0"].gres_line() == "gpu:a100_3g.20gb_gpu0:2,gpu:a100_3g.20gb_gpu1:2"


def test_gres_per_gpu_must_be_a_boolean(tmp_path: Path) -> None:
    from wattsched.errors import ConfigError

    (tmp_path / "w.toml").write_text(
        '[slurm]\npartition = "mig"\nstate = "s.db"\n[[nodes]]\nname = "n"\ngpus = ["a100-40gb"]\n'
        'configuration = 3\nbackend = "nvml"\ngres_per_gpu = "yes"\n'
    )
    with pytest.raises(ConfigError, match=r"nodes\[0\]: gres_per_gpu must be true or false, got 'yes'"):
        load_config(tmp_path / "w.toml")


def test_a_gang_whose_reserved_node_goes_down_reserves_gpus_on_another_node(tmp_path: Path) -> None:
    """A and B run on node0's GPUs; with node1 down, G (2 GPUs) reserves node0 and waits for them. Node1
    comes back and node0 goes down: G gives node0's GPUs back and, at the next pass, reserves node1's and
    is released there."""
    controller, slurm, meters, clock = _setup(tmp_path)
    a = slurm.submit(comment="wattsched: work=100s deadline=+3600s")
    controller.run_once()
    _run_released(slurm, meters, controller)
    b = slurm.submit(comment="wattsched: work=100s deadline=+3600s")  # node1/0 busy too
    controller.run_once()
    _run_released(slurm, meters, controller)
    assert controller.store.job(b).node == "node0"  # type: ignore[union-attr]  # first-fit: node0/1
    slurm.node_state["node1"] = "down"
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    clock.now += 1
    controller.run_once()
    row = controller.store.job(g)
    assert row is not None and row.node == "node0" and row.phase == "queued"  # node1 is down: not chosen
    del slurm.node_state["node1"]
    clock.now += 1
    controller.run_once()
    assert controller.store.job(g).node == "node0"  # type: ignore[union-attr]  # kept
    slurm.node_state["node0"] = "down"
    clock.now += 1
    controller.run_once()
    assert controller.store.job(g).node is None  # type: ignore[union-attr]
    clock.now += 1
    controller.run_once()
    row = controller.store.job(g)
    assert row is not None and row.phase == "released" and row.node == "node1"
    assert any("node node0 is down: job" in text for _, text in controller.store.decisions())
    del a


@pytest.mark.parametrize("when", ["after the journal", "after the send"])
def test_a_kill_in_the_middle_of_a_gangs_release_neither_loses_nor_repeats_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """SIGKILL while the gang's release is sent: after the restart it is released once, with its GRES,
    reserved on the same GPUs, and runs on one slice of each."""
    controller, slurm, meters, clock = _setup(tmp_path)
    g = slurm.submit(comment="wattsched: work=100s deadline=+3600s gpus=2")
    store = controller.store
    kill_in_a_release(monkeypatch, slurm, store, when)
    with pytest.raises(Killed):
        controller.run_once()
    monkeypatch.undo()
    store.close()
    again = Controller(
        controller.config, slurm, StateStore(controller.config.state_path), clock=clock, meters=dict(meters)
    )
    clock.now += 1.0
    again.run_once()
    assert len([c for c in slurm.calls if c[0] == "release"]) == 1
    row = again.store.job(g)
    assert row is not None and row.phase == "released" and row.gres == "gpu:a100_1g.10gb:2"
    assert [m.gang for m in again.gpus] == [g, g, None, None]
    assert again.store.pending_actions() == []
    _run_released(slurm, meters, again)
    clock.now += 1.0
    again.run_once()
    running = again.store.job(g)
    assert (
        running is not None and running.phase == "running" and parse_members(running.members) == {0: 2, 1: 2}
    )


def test_an_epilog_frees_every_slice_its_jobs_prolog_marked(tmp_path: Path) -> None:
    """The Prolog marks a job's slices busy with its id; the Epilog frees them all by that id, also those its
    own environment does not name (Slurm 22.05's Prolog and Epilog see only the last type of a request)."""
    state = FakeGpuState.create(tmp_path / "f.json", [("a100-40gb", 3), ("a100-40gb", 3)])
    first, second = state.instances(0)[2].uuid, state.instances(1)[2].uuid
    other = state.instances(0)[0].uuid
    state.set_busy([first, second], "training", job="7")
    state.set_busy(other, "inference", job="8")
    assert state.release_job("7") == [first, second]
    assert [i.busy for i in state.instances(0)] == [True, False, False]
    assert not any(i.busy for i in state.instances(1))
    assert state.release_job("7") == [] and state.release_job("8") == [other]
