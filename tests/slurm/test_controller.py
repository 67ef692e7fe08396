"""The Slurm controller on an in-memory Slurm and a fake GPU: what it decides, what it sends, the energy it
charges, and what survives a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type
from wattsched.hardware.mig import MigGpu
from wattsched.mig import simulate
from wattsched.mig.simulator import MigSimulation
from wattsched.slurm.client import FakeSlurmClient, JobState
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.jobs import engine_job
from wattsched.slurm.state import StateStore

from .conftest import Killed, kill_in_a_release


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _setup(
    tmp_path: Path,
    configuration: int | str = 1,
    preemption: str = "requeue",
    policy: str = "edf-ss-restricted",
) -> tuple[Controller, FakeSlurmClient, FakeGpuState, Clock]:
    clock = Clock()
    gpu_file = tmp_path / "gpu.json"
    fake = FakeGpuState.create(gpu_file, [("a100-40gb", configuration)], clock=clock)
    (tmp_path / "wattsched.toml").write_text(f"""
[slurm]
partition = "mig"
state = "state.db"
[scheduling]
policy = "{policy}"
preemption = "{preemption}"
grace_s = 5
[[nodes]]
name = "node0"
gpus = ["a100-40gb"]
configuration = "{configuration}"
backend = "fake:{gpu_file}"
""")
    config = load_config(tmp_path / "wattsched.toml")
    instances = fake.instances(0)
    slurm = FakeSlurmClient(
        {"node0": [gres_type(fake.gpu(0), i.profile) for i in instances]},
        uuids={"node0": [i.uuid for i in instances]},
        clock=clock,
    )
    meter = FakeGpuState(gpu_file, clock=clock)
    controller = Controller(
        config, slurm, StateStore(config.state_path), clock=clock, meters={"node0": meter}
    )
    return controller, slurm, meter, clock


def _mark(slurm: FakeSlurmClient, meter: FakeGpuState) -> None:
    """What the sandbox's prolog/epilog do: the fake GPU's instances busy while a job runs on them."""
    busy = {uuid for job in slurm.jobs() if job.state is JobState.RUNNING for uuid in job.gpu_uuids}
    for instance in meter.instances(0):
        meter.set_busy(instance.uuid, "training" if instance.uuid in busy else None)


def test_jobs_are_held_then_released_in_the_policys_order_and_energy_adds_up(tmp_path: Path) -> None:
    controller, slurm, meter, clock = _setup(tmp_path)
    a = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    b = slurm.submit(comment="wattsched: work=100s deadline=+150s")  # earlier deadline: first
    report = controller.run_once()
    assert report.arrived == [a, b] and report.released == [b]
    job_b = slurm.job(b)
    assert job_b is not None and not job_b.held and "a100_7g.40gb" in job_b.gres
    assert slurm.job(a).held  # type: ignore[union-attr]
    start_mj = meter.energy_mj(0)
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()
    clock.now += 50.0
    controller.run_once()  # b runs: its AdminComment says its energy so far
    clock.now += 50.0
    slurm.finish(b)
    _mark(slurm, meter)
    report = controller.run_once()
    assert report.finished == [b] and report.released == [a]
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()
    clock.now += 100.0
    slurm.finish(a)
    _mark(slurm, meter)
    clock.now += 3.0
    controller.run_once()
    rows = {row.job_id: row for row in controller.store.jobs()}
    assert rows[a].phase == rows[b].phase == "done"
    assert rows[b].tardiness_s == pytest.approx(0.0) and rows[a].tardiness_s == 0.0
    # Every millijoule the counter rose by since the first reading went to a job or the idle remainder.
    reading = controller.store.reading("node0", 0)
    assert reading is not None and reading.first_mj == start_mj
    charged = rows[a].energy_mj + rows[b].energy_mj
    assert charged > 0 and reading.idle_mj > 0
    assert charged + reading.idle_mj == reading.counter_mj - start_mj
    # b ran 100 s alone on the GPU's only slice: it got all but the idle gaps between jobs.
    assert rows[b].energy_mj > rows[a].energy_mj / 2
    # Slurm keeps the comment of the last pass that saw the job running: the energy up to then.
    comment = slurm.job(b).admin_comment  # type: ignore[union-attr]
    assert comment.startswith("wattsched_energy_j=")
    assert 0 < float(comment.removeprefix("wattsched_energy_j=")) <= rows[b].energy_mj / 1000


def test_a_job_asking_for_more_gpus_than_any_node_has_is_held_with_a_reason(tmp_path: Path) -> None:
    """A job of two GPUs (``--gres=gpu:2``) on a cluster of one-GPU nodes can never run as a gang: it is
    held with one line saying why, also after a restart, and read again once its owner asks for one GPU."""
    controller, slurm, meter, clock = _setup(tmp_path)
    two = slurm.submit(comment="wattsched: work=60s", gres="gpu:2")
    one = slurm.submit(comment="wattsched: work=60s", gres="gpu:1")
    report = controller.run_once()
    assert report.rejected == [two] and report.released == [one]
    job = slurm.job(two)
    assert job is not None and job.held and job.gres == "gpu:2"
    assert job.admin_comment == "wattsched: it asks for 2 GPUs of one node; the largest node, node0, has 1"
    controller = Controller(controller.config, slurm, controller.store, clock=clock, meters={"node0": meter})
    assert controller.run_once().rejected == []  # held once, not again after a restart
    slurm._put(job, gres="gpu:1")  # its owner asks for one GPU (scontrol update ... gres=gpu:1)
    report = controller.run_once()
    assert report.arrived == [two] and controller.store.job(two).phase == "queued"  # type: ignore[union-attr]


def test_a_malformed_annotation_holds_the_job_with_a_reason_and_the_rest_go_on(tmp_path: Path) -> None:
    controller, slurm, _, _ = _setup(tmp_path)
    bad = slurm.submit(comment="wattsched: work=-5s")
    good = slurm.submit(comment="wattsched: work=60s")
    report = controller.run_once()
    assert report.rejected == [bad] and report.released == [good]
    job = slurm.job(bad)
    assert job is not None and job.held and job.admin_comment.startswith("wattsched: work: expected")
    assert controller.store.job(bad).phase == "rejected"  # type: ignore[union-attr]
    assert controller.run_once().rejected == []  # held once, not again at every pass
    slurm._put(job, comment="wattsched: work=5s")  # its owner fixes the comment
    report = controller.run_once()
    assert report.arrived == [bad]
    assert controller.store.job(bad).phase in ("queued", "released")  # type: ignore[union-attr]


def test_a_preemptible_job_is_signalled_then_requeued_after_the_grace_time(tmp_path: Path) -> None:
    controller, slurm, _meter, clock = _setup(tmp_path)
    long = slurm.submit(comment="wattsched: work=1000s deadline=+100000s preemptible=yes")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    controller.run_once()
    clock.now += 10.0
    urgent = slurm.submit(comment="wattsched: work=50s deadline=+60s")  # late unless it preempts
    report = controller.run_once()
    assert report.preempted == [long]
    assert slurm.signals == [(long, "USR1", "full")]
    clock.now += 2.0
    assert controller.run_once().requeued == []  # within the grace time
    clock.now += 4.0
    report = controller.run_once()
    assert report.requeued == [long]
    row = controller.store.job(long)
    assert row is not None and row.phase == "queued" and row.preemptions == 1
    assert row.remaining == pytest.approx(1.0 - 16.0 / 1060.0)  # 16 s of its 1,060 s on a 7g slice
    slurm.schedule()
    controller.run_once()
    assert slurm.job(urgent).state is JobState.RUNNING  # type: ignore[union-attr]


def test_a_job_not_marked_preemptible_keeps_its_slice(tmp_path: Path) -> None:
    controller, slurm, _, clock = _setup(tmp_path)
    long = slurm.submit(comment="wattsched: work=1000s deadline=+100000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    controller.run_once()
    clock.now += 10.0
    slurm.submit(comment="wattsched: work=50s deadline=+60s")
    report = controller.run_once()
    assert report.preempted == [] and slurm.signals == []
    assert controller.store.job(long).phase == "running"  # type: ignore[union-attr]


def test_the_controller_starts_jobs_in_the_simulators_order(tmp_path: Path) -> None:
    """A batch of jobs through the in-memory Slurm starts in the order, and on the slice types, that the
    simulator gives the same jobs (Slurm starting each released job at once)."""
    controller, slurm, _meter, clock = _setup(tmp_path, configuration=3)
    origin = controller.origin_s
    specs = [
        (f"work={w}s deadline=+{d}s kind=training", w, d)
        for w, d in [(60, 900), (30, 400), (90, 2000), (20, 300), (45, 700), (10, 250)]
    ]
    ids = [slurm.submit(comment=f"wattsched: {text}") for text, _, _ in specs]
    started: list[tuple[int, str]] = []
    for _ in range(400):
        controller.run_once()
        for job_id in slurm.schedule():
            row = controller.store.job(job_id)
            assert row is not None
            started.append((job_id, row.slice or ""))
        for job in slurm.jobs():
            if job.state is JobState.RUNNING:
                row = controller.store.job(job.job_id)
                assert row is not None
                if row.phase == "running" and clock.now >= job.start_s + _duration(controller, row):  # type: ignore[operator]
                    slurm.finish(job.job_id)
        clock.now += 1.0
        if all(slurm.job(i).state is JobState.COMPLETED for i in ids):  # type: ignore[union-attr]
            break
    gpu: MigGpu = controller.gpus[0].gpu
    submit = clock.now  # every job was submitted at the first pass's time
    jobs = [
        engine_job(str(i), 0.0, d, "training", "linear", w) for i, (_, w, d) in zip(ids, specs, strict=True)
    ]
    expected = simulate(jobs, 3, "edf-ss-restricted", gpu=gpu, record_jobs=True)
    assert expected.records is not None and submit > origin
    order = sorted(expected.records, key=lambda r: (r.start_s, r.job_id))
    assert [job_id for job_id, _ in started] == [int(r.job_id) for r in order]
    labels = {s.start: s.label for s in controller.gpus[0].configuration.slices}
    assert [label for _, label in started] == [labels[r.slices[0][3]] for r in order]


def _duration(controller: Controller, row: object) -> float:
    model = controller.gpus[0]
    rank = model.ranks[row.job_id]  # type: ignore[attr-defined]
    return model.sim.duration_on(rank, row.slice_index)  # type: ignore[attr-defined]


def test_a_restart_loses_no_job_and_repeats_no_finished_action(tmp_path: Path) -> None:
    controller, slurm, _meter, clock = _setup(tmp_path)
    a = slurm.submit(comment="wattsched: work=100s")
    b = slurm.submit(comment="wattsched: work=100s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    controller.run_once()
    calls = len(slurm.calls)
    # A crash between journaling an action and sending it: the journal has it pending.
    controller.store.journal(b, "hold", {}, clock.now)
    controller.store.close()
    again = Controller(
        controller.config,
        slurm,
        StateStore(controller.config.state_path),
        clock=clock,
        meters=controller.meters,
    )
    clock.now += 1.0
    again.run_once()
    assert [c for c in slurm.calls[calls:] if c[0] == "release"] == []  # nothing started twice
    assert again.store.pending_actions() == []
    rows = {row.job_id: row for row in again.store.jobs()}
    assert rows[a].phase == "running" and rows[b].phase == "queued"
    clock.now += 100.0
    slurm.finish(a)
    report = again.run_once()
    assert report.finished == [a] and report.released == [b]


@pytest.mark.parametrize("when", ["after the journal", "after the send"])
def test_a_kill_in_the_middle_of_a_release_neither_loses_nor_repeats_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    controller, slurm, _meter, clock = _setup(tmp_path)
    job = slurm.submit(comment="wattsched: work=100s")
    store = controller.store
    kill_in_a_release(monkeypatch, slurm, store, when)
    with pytest.raises(Killed):
        controller.run_once()
    monkeypatch.undo()
    store.close()
    assert [a.kind for a in StateStore(controller.config.state_path).pending_actions()] == ["release"]
    again = Controller(
        controller.config,
        slurm,
        StateStore(controller.config.state_path),
        clock=clock,
        meters=controller.meters,
    )
    clock.now += 1.0
    again.run_once()
    releases = [c for c in slurm.calls if c[0] == "release"]
    assert len(releases) == 1  # sent once in all: redone only when it had not reached Slurm
    assert not slurm.job(job).held  # type: ignore[union-attr]
    assert again.store.pending_actions() == []
    assert again.store.job(job).phase == "released"  # type: ignore[union-attr]
    slurm.schedule()
    clock.now += 1.0
    again.run_once()
    assert again.store.job(job).phase == "running"  # type: ignore[union-attr]


def test_an_end_and_a_start_in_the_same_second_are_told_end_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slurm's times are whole seconds, and it starts a job on any free device of its type: job 2 ends and
    job 1, released on the other 1g.5gb, starts on the device job 2 freed, in the same second. Told in job
    order, the start would push job 2 off its slice in the model and its end would count as a cancel; told
    end first the model follows Slurm."""
    controller, slurm, _, clock = _setup(tmp_path, configuration=4)
    first = slurm.submit(comment="wattsched: work=100s deadline=+5000s")
    urgent = slurm.submit(comment="wattsched: work=10s deadline=+4000s")
    controller.run_once()
    released = {i: controller.store.job(i).slice for i in (first, urgent)}  # type: ignore[union-attr]
    assert sorted(released.values()) == ["1g.5gb@4", "1g.5gb@5"]
    slurm.start(urgent)
    clock.now += 1.0
    controller.run_once()
    device = slurm.job(urgent).gpu_indices  # type: ignore[union-attr]
    clock.now += 10.0
    slurm.finish(urgent)
    slurm.start(first, gpu_indices=device)  # the same second, on the device the urgent job freed
    clock.now += 1.0
    cancelled: list[int] = []
    cancel = MigSimulation.observe_cancel

    def spy(sim: MigSimulation, rank: int, at_s: float) -> None:
        cancelled.append(rank)
        cancel(sim, rank, at_s)

    monkeypatch.setattr(MigSimulation, "observe_cancel", spy)
    with caplog.at_level("WARNING", logger="wattsched.slurm.controller"):
        controller.run_once()
    assert not [r for r in caplog.records if "disagrees" in r.getMessage()]
    assert cancelled == []  # the urgent job's end is a completion, not a job pushed off its slice
    row = controller.store.job(first)
    assert row is not None and row.phase == "running" and row.slice == released[urgent]


def test_a_job_slurm_starts_on_another_gpu_of_its_node_is_followed_and_charged_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two A100s of one node in configuration 1 (one 7g slice each) offer one GRES type: a job released for
    GPU 0 may be started by Slurm on GPU 1's device. The controller then moves it to GPU 1's model (its row,
    its energy from GPU 1's counter), running there on the slice Slurm gave it (the pass sees the start 2.5 s
    late: before, GPU 1's model refused a start before the job's arrival in it, and never knew the slice
    busy), and GPU 0, free, takes the next job."""
    clock = Clock()
    gpu_file = tmp_path / "gpu.json"
    fake = FakeGpuState.create(gpu_file, [("a100-40gb", 1), ("a100-40gb", 1)], clock=clock)
    (tmp_path / "wattsched.toml").write_text(f"""
[slurm]
partition = "mig"
state = "state.db"
[[nodes]]
name = "node0"
gpus = ["a100-40gb", "a100-40gb"]
configuration = 1
backend = "fake:{gpu_file}"
""")
    config = load_config(tmp_path / "wattsched.toml")
    instances = fake.instances(0) + fake.instances(1)
    slurm = FakeSlurmClient(
        {"node0": [gres_type(fake.gpu(0), i.profile) for i in instances]},
        uuids={"node0": [i.uuid for i in instances]},
        clock=clock,
    )
    meter = FakeGpuState(gpu_file, clock=clock)
    controller = Controller(
        config, slurm, StateStore(config.state_path), clock=clock, meters={"node0": meter}
    )
    a = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    report = controller.run_once()
    assert report.released == [a] and controller.store.job(a).gpu == 0  # type: ignore[union-attr]
    clock.now += 1.0
    slurm.start(a, gpu_indices=[1])  # Slurm's choice: the second GPU's slice
    meter.set_busy(instances[1].uuid, "training")
    clock.now += 2.5  # the pass comes after the start
    report = controller.run_once()
    row = controller.store.job(a)
    assert report.started == [a] and row is not None and (row.gpu, row.slice_index) == (1, 0)
    assert "disagrees" not in caplog.text
    model = controller.gpus[1]
    rank = model.ranks[a]
    assert model.sim.decide(controller._rel(clock.now))[0] == rank  # running there
    # it runs there from the pass that saw it (its model learnt of it then): its end is predicted at most
    # that pass's delay after its run time on the 7g slice from Slurm's start (the real end is observed)
    started = controller._rel(slurm.job(a).start_s)  # type: ignore[arg-type,union-attr]
    duration = model.sim.duration_on(rank, 0)
    assert started + duration <= model.sim.predicted_completions()[rank] <= started + 2.5 + duration + 1e-9
    b = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    report = controller.run_once()
    assert report.released == [b] and controller.store.job(b).gpu == 0  # type: ignore[union-attr]
    before = (meter.energy_mj(0), meter.energy_mj(1))
    charged = controller.store.job(a).energy_mj  # type: ignore[union-attr]
    clock.now += 50.0
    controller.run_once()
    row = controller.store.job(a)
    assert row is not None
    gained = row.energy_mj - charged
    # a is the only busy job of GPU 1: all of GPU 1's energy in the interval is its (none of GPU 0's).
    assert gained == meter.energy_mj(1) - before[1] > 0


def test_no_job_is_released_onto_a_slice_a_running_job_it_cannot_move_holds(tmp_path: Path) -> None:
    """Preemption off: a model whose every decision moves the running job a off its slice (a model gone
    wrong, or one still undecided after its retries) gets no other job released onto that slice; the job
    it puts there waits."""
    controller, slurm, meter, clock = _setup(tmp_path, preemption="off")
    a = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()
    assert slurm.job(a).state is JobState.RUNNING  # type: ignore[union-attr]
    b = slurm.submit(comment="wattsched: work=10s deadline=+20s")
    model = controller.gpus[0]
    real_decide = model.sim.decide

    def b_on_slice_0(at_s: float) -> tuple[int, ...]:
        real_decide(at_s)
        return (model.ranks[b],) if b in model.ranks else (model.ranks[a],)

    model.sim = _Steered(model.sim, b_on_slice_0)  # type: ignore[assignment]
    clock.now += 1.0
    report = controller.run_once()
    assert b in report.arrived and report.released == []
    assert slurm.job(b).held  # type: ignore[union-attr]


def test_the_model_plans_around_a_running_job_that_cannot_be_preempted(tmp_path: Path) -> None:
    """Preemption on, one 7g slice, preemptive EDF-FS: a (not preemptible: the default) runs; b, urgent,
    arrives. The model keeps a on the slice (it is pinned there) and plans b after it: no signal goes to a,
    b is not released while a runs, and once a ends b is released onto the slice."""
    controller, slurm, meter, clock = _setup(tmp_path, policy="edf-fs")
    a = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()
    b = slurm.submit(comment="wattsched: work=10s deadline=+15s")
    clock.now += 1.0
    report = controller.run_once()
    model = controller.gpus[0]
    assert b in report.arrived and report.released == [] and report.preempted == []
    assert list(model.sim.decide(controller._rel(clock.now))) == [model.ranks[a]]
    assert slurm.job(a).state is JobState.RUNNING and slurm.signals == []  # type: ignore[union-attr]
    clock.now += 5.0
    slurm.finish(a)
    _mark(slurm, meter)
    report = controller.run_once()
    assert report.finished == [a] and report.released == [b]


class _Steered:
    """A model engine whose decisions a test dictates; everything else is the engine's own."""

    def __init__(self, sim: object, decide: object) -> None:
        self._sim, self.decide = sim, decide

    def __getattr__(self, name: str) -> object:
        return getattr(self._sim, name)
