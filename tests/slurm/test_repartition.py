"""Live repartitioning in the controller on an in-memory Slurm and a fake GPU: the phases, the jobs waited
for and requeued, the fake GPU refusing a change, a restart in the middle, and the config's checks."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type
from wattsched.hardware.mig import MigGpu
from wattsched.mig.results import SimSnapshot
from wattsched.slurm import controller as controller_module
from wattsched.slurm.client import FakeSlurmClient, JobState, SlurmError
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.gres_update import device_order
from wattsched.slurm.repartition import measured_cost, measured_repartition_s, open_gpu_backend
from wattsched.slurm.state import StateStore

# a100-40gb configuration 3: 4g.20gb@0 + 2g.10gb@4 + 1g.10gb@6; configuration 4: 4g.20gb@0 + 1g.5gb@4 +
# 1g.5gb@5 + 1g.10gb@6. Going 3 -> 4 keeps 4g@0 and 1g.10gb@6, destroys 2g@4, creates the two 1g.5gb.
KEPT, DESTROYED = "4g.20gb@0", "2g.10gb@4"
TARGET = [KEPT, "1g.5gb@4", "1g.5gb@5", "1g.10gb@6"]


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@dataclass
class Switch:
    """A partitioner that keeps configuration 3 until ``target`` is set."""

    target: int = 3
    name: str = "switch"
    scheduler: str = "edf-ss-restricted"

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        del gpu, seed

    def initial_configuration(self) -> int:
        return 3

    def decide(self, snapshot: SimSnapshot) -> int:
        del snapshot
        return self.target


def _config(tmp_path: Path, gpu_file: Path, repartition: str = "", partitioner: str = "day-night") -> Path:
    path = tmp_path / "wattsched.toml"
    path.write_text(f"""
[slurm]
partition = "mig"
state = "state.db"
[scheduling]
grace_s = 5
[[nodes]]
name = "node0"
gpus = ["a100-40gb"]
configuration = 3
partitioner = "{partitioner}"
partitioner_options = {{ day_configuration = 3, night_configuration = 4 }}
backend = "fake:{gpu_file}"
[repartition]
{repartition}
""")
    return path


def _setup(
    tmp_path: Path, repartition: str = "requeue = false"
) -> tuple[Controller, FakeSlurmClient, FakeGpuState, Clock, Switch]:
    clock = Clock()
    gpu_file = tmp_path / "gpu.json"
    fake = FakeGpuState.create(gpu_file, [("a100-40gb", 3)], clock=clock)
    config = load_config(_config(tmp_path, gpu_file, repartition))
    slurm = FakeSlurmClient({"node0": []}, clock=clock)
    _sync_devices(slurm, fake)
    switch = Switch()
    controller = Controller(
        config,
        slurm,
        StateStore(config.state_path),
        clock=clock,
        meters={"node0": fake},
        partitioners={"node0/0": switch},
    )
    return controller, slurm, fake, clock, switch


def _sync_devices(slurm: FakeSlurmClient, fake: FakeGpuState) -> None:
    """What the GRES phase does to a real Slurm: the node's devices are the GPU's instances now."""
    instances = fake.instances(0)
    slurm.devices["node0"] = tuple(gres_type(fake.gpu(0), i.profile) for i in instances)
    slurm.uuids["node0"] = tuple(i.uuid for i in instances)


def _mark(slurm: FakeSlurmClient, fake: FakeGpuState) -> None:
    busy = {uuid for job in slurm.jobs() if job.state is JobState.RUNNING for uuid in job.gpu_uuids}
    for instance in fake.instances(0):
        fake.set_busy(instance.uuid, "training" if instance.uuid in busy else None)


def _labels(fake: FakeGpuState) -> list[str]:
    return [i.label for i in fake.instances(0)]


def _slice_of(slurm: FakeSlurmClient, fake: FakeGpuState, job_id: int) -> str:
    job = slurm.job(job_id)
    assert job is not None and job.gpu_uuids
    return {i.uuid: i.label for i in fake.instances(0)}[job.gpu_uuids[0]]


def _two_running(
    controller: Controller,
    slurm: FakeSlurmClient,
    fake: FakeGpuState,
    clock: Clock,
    preemptible: str = "no",
    tiny_out: list[int] | None = None,
) -> tuple[int, int]:
    """A long job on the 4g (kept) and a shorter one on the 2g (destroyed); a third on the 1g.10gb (kept)
    ends at once."""
    long = slurm.submit(comment="wattsched: work=400s deadline=+500s")
    short = slurm.submit(comment=f"wattsched: work=60s deadline=+700s preemptible={preemptible}")
    tiny = slurm.submit(comment="wattsched: work=5s deadline=+600s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, fake)
    controller.run_once()
    assert _slice_of(slurm, fake, long) == KEPT and _slice_of(slurm, fake, short) == DESTROYED
    if tiny_out is not None:
        tiny_out.append(tiny)  # left running on the 1g.10gb
        return long, short
    slurm.finish(tiny)
    _mark(slurm, fake)
    return long, short


def _start_repartition(
    controller: Controller,
    slurm: FakeSlurmClient,
    fake: FakeGpuState,
    clock: Clock,
    switch: Switch,
    *,
    passes: int = 0,
    process_exits: bool = True,
) -> tuple[int, int]:
    """A change 3 -> 4 under way: :func:`_two_running`, the target set to 4 and an arrival (a decision epoch:
    the drain is written), then Slurm ends the job on the 2g and, with ``process_exits``, its process leaves
    the GPU; then ``passes`` passes of the controller, one second apart. Returns the long and short jobs."""
    long, short = _two_running(controller, slurm, fake, clock)
    switch.target = 4
    slurm.submit(comment="wattsched: work=30s deadline=+2000s")
    controller.run_once()
    slurm.finish(short)
    if process_exits:
        _mark(slurm, fake)
    for _ in range(passes):
        clock.now += 1.0
        controller.run_once()
    return long, short


def test_a_repartition_drains_waits_applies_and_new_jobs_land_on_the_new_slices(tmp_path: Path) -> None:
    controller, slurm, fake, clock, switch = _setup(tmp_path)
    long, short = _two_running(controller, slurm, fake, clock)
    switch.target = 4
    clock.now += 1.0
    waiting = slurm.submit(comment="wattsched: work=30s deadline=+2000s")  # an arrival: a decision epoch
    report = controller.run_once()
    assert ("node0/0", "drain") in report.repartitions
    entry = controller.store.repartitions()[-1]
    assert (entry.from_config, entry.to_config, entry.phase) == ("3", "4", "drain")
    assert entry.to_layout == "4g.20gb@0,1g.5gb@4,1g.5gb@5,1g.10gb@6"
    clock.now += 1.0
    report = controller.run_once()  # wait: the 2g still runs its job
    assert controller.store.repartitions()[-1].phase == "wait"
    assert _labels(fake) == [KEPT, DESTROYED, "1g.10gb@6"]
    clock.now += 60.0
    slurm.finish(short)
    _mark(slurm, fake)
    report = controller.run_once()  # the 2g is free: apply, gres (no command), resume
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "done" and entry.waited == [short] and entry.requeued == []
    assert list(entry.phase_s) == ["drain", "wait", "apply", "gres", "resume"]
    assert entry.phase_s["drain"] == pytest.approx(1.0) and entry.phase_s["wait"] == pytest.approx(60.0)
    assert _labels(fake) == [KEPT, "1g.5gb@4", "1g.5gb@5", "1g.10gb@6"]
    model = controller.gpus[0]
    assert model.configuration.ident == 4 and model.labels == _labels(fake)
    # The kept job was never touched and its row points at the same slice in the new numbering.
    row = controller.store.job(long)
    assert row is not None and row.phase == "running" and row.slice == KEPT and row.slice_index == 0
    assert row.preemptions == 0 and not slurm.signals
    assert slurm.job(long).state is JobState.RUNNING  # type: ignore[union-attr]
    _sync_devices(slurm, fake)
    clock.now += 1.0
    controller.run_once()
    released = slurm.job(waiting)
    assert released is not None and not released.held
    assert released.gres.split(":")[1] in {"a100_1g.5gb", "a100_1g.10gb"}
    slurm.schedule()
    assert _slice_of(slurm, fake, waiting) in {"1g.5gb@4", "1g.5gb@5", "1g.10gb@6"}
    decisions = [text for _, text in controller.store.decisions(50)]
    assert any(
        f"repartition {entry.id} of node0/0 done" in text and f"[{short}]" in text for text in decisions
    )
    # The measured cost beside the simulator's blackout: here the phases of one pass take no clock time.
    gpu = controller.gpus[0].gpu
    (cost,) = measured_cost(controller.store.repartitions(), {("node0", 0): gpu})
    assert cost == {
        "gpu": "a100-40gb",
        "repartitions": 1,
        "out_of_service_s": 0.0,
        "total_s": pytest.approx(61.0),
        "simulator_repartition_s": gpu.repartition_s,
    }


def test_a_kept_slice_whose_slurm_device_index_moves_is_waited_for_too(tmp_path: Path) -> None:
    """Slurm numbers a node's devices type by type: going 3 -> 4 puts two 1g.5gb before the 1g.10gb, whose
    index goes from 2 to 3 (the 4g keeps index 0). A job running there must end before Slurm renumbers."""
    assert device_order([("a100-40gb", ["4g.20gb@0", "2g.10gb@4", "1g.10gb@6"])]) == [
        (0, "4g.20gb@0"),
        (0, "2g.10gb@4"),
        (0, "1g.10gb@6"),
    ]
    two = device_order([("a100-40gb", TARGET), ("a100-40gb", ["4g.20gb@0", "2g.10gb@4", "1g.10gb@6"])])
    assert two == [
        (0, "4g.20gb@0"),
        (1, "4g.20gb@0"),
        (0, "1g.5gb@4"),
        (0, "1g.5gb@5"),
        (0, "1g.10gb@6"),
        (1, "1g.10gb@6"),
        (1, "2g.10gb@4"),
    ]
    controller, slurm, fake, clock, switch = _setup(tmp_path)
    tiny: list[int] = []
    long, short = _two_running(controller, slurm, fake, clock, tiny_out=tiny)
    switch.target = 4
    clock.now += 1.0
    slurm.submit(comment="wattsched: work=30s deadline=+2000s")
    controller.run_once()
    assert controller.gpus[0].draining == frozenset({1, 2})  # the 2g (destroyed) and the 1g.10gb (moved)
    clock.now += 1.0
    controller.run_once()
    assert controller.store.repartitions()[-1].waited == [short, tiny[0]]
    clock.now += 10.0
    slurm.finish(short)
    _mark(slurm, fake)
    controller.run_once()
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "wait"
    assert _labels(fake) == [KEPT, DESTROYED, "1g.10gb@6"]
    clock.now += 10.0
    slurm.finish(tiny[0])
    _mark(slurm, fake)
    controller.run_once()
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "done" and long not in entry.waited
    assert controller.gpus[0].draining == frozenset()


def test_a_job_arriving_at_the_epoch_of_a_change_waits_for_the_new_layout_unreleased(tmp_path: Path) -> None:
    """The partitioner is asked before the pass gives jobs slices, on the model at the pass (the job that
    arrived in it with all its work): going 3 -> 5 destroys every slice, so the arrival is never released
    onto one (Slurm could start it before the hold) and waits for the new layout, as in the simulator's
    blackout."""
    controller, slurm, fake, clock, switch = _setup(tmp_path)
    seen: list[SimSnapshot] = []
    decide = switch.decide

    def keep(snapshot: SimSnapshot) -> int:
        seen.append(snapshot)
        return decide(snapshot)

    switch.decide = keep  # type: ignore[method-assign]
    switch.target = 5
    clock.now += 1.0
    job_id = slurm.submit(comment="wattsched: work=30s deadline=+2000s")
    report = controller.run_once()
    (snapshot,) = seen
    assert snapshot.now_s == pytest.approx(report.time_s - controller.origin_s)
    assert [j.remaining_fraction for j in snapshot.jobs] == [1.0] and snapshot.configuration == 3
    assert report.arrived == [job_id] and report.released == []
    assert ("node0/0", "drain") in report.repartitions
    assert controller.gpus[0].draining == frozenset({0, 1, 2})
    job = slurm.job(job_id)
    assert job is not None and job.held
    assert [a.kind for a in controller.store.actions(job_id)] == []  # nothing sent: no release, no hold
    clock.now += 1.0
    report = controller.run_once()  # wait (nothing on the slices), apply, gres, resume: then released
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "done" and entry.waited == [] and entry.to_layout == "3g.20gb@0,3g.20gb@4"
    assert report.released == [job_id]
    _sync_devices(slurm, fake)
    slurm.schedule()
    assert _slice_of(slurm, fake, job_id) in {"3g.20gb@0", "3g.20gb@4"}


def _to_the_wait(
    tmp_path: Path, repartition: str
) -> tuple[Controller, FakeSlurmClient, FakeGpuState, Clock, int, int]:
    """:func:`_two_running` with a preemptible short job, the change 3 -> 4 asked for at an arrival, and the
    pass after it (the wait phase, where a job to requeue gets its signal). Returns the controller, Slurm,
    the fake GPU, the clock, the long and the short job."""
    controller, slurm, fake, clock, switch = _setup(tmp_path, repartition)
    long, short = _two_running(controller, slurm, fake, clock, preemptible="yes")
    switch.target = 4
    clock.now += 1.0
    slurm.submit(comment="wattsched: work=30s deadline=+2000s")
    controller.run_once()
    clock.now += 1.0
    controller.run_once()
    return controller, slurm, fake, clock, long, short


def test_with_requeue_a_preemptible_job_on_a_destroyed_slice_is_signalled_and_requeued(
    tmp_path: Path,
) -> None:
    controller, slurm, fake, clock, long, short = _to_the_wait(tmp_path, "requeue = true")
    assert [s[0] for s in slurm.signals] == [short]  # the kept job is never signalled
    clock.now += 6.0  # past grace_s: requeued (held)
    controller.run_once()
    _mark(slurm, fake)
    clock.now += 1.0
    controller.run_once()
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "done" and entry.requeued == [short] and entry.waited == [short]
    # Its Slurm record asked for the destroyed 2g's type (Slurm keeps that type in its request): a copy
    # that asks for nothing yet replaces it, with its row, its preemption and its deadline, and runs on a
    # slice of the new layout.
    row = controller.store.job(short)
    assert row is not None and row.phase == "renewed" and row.renewed_as is not None
    copy = controller.store.job(row.renewed_as)
    assert copy is not None and copy.phase == "released" and copy.preemptions == 1
    assert copy.deadline_s == row.deadline_s and copy.submit_s == row.submit_s
    assert slurm.renewed == {copy.job_id: short} and slurm.job(short).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert copy.gres is not None and copy.gres.startswith("gpu:a100_1g.5gb")
    _sync_devices(slurm, fake)  # what the gres phase did to the real Slurm
    assert copy.job_id in slurm.schedule()
    assert controller.store.job(long).phase == "running"  # type: ignore[union-attr]


def test_a_requeued_job_that_cannot_be_renewed_is_said_once_to_need_a_resubmission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller cannot replace the requeued job (e.g. it does not run where slurmctld keeps its
    state): the job is released as it is, Slurm never runs it (its record asks for the destroyed 2g's
    type), and the decision log says so once, naming what to do."""
    controller, slurm, fake, clock, switch = _setup(tmp_path, "requeue = true")
    _, short = _two_running(controller, slurm, fake, clock, preemptible="yes")

    def refuse(job_id: int, marker: str) -> int:
        raise SlurmError(f"cannot renew job {job_id}: its script and environment are not readable here")

    monkeypatch.setattr(slurm, "renew", refuse)
    switch.target = 4
    clock.now += 1.0
    slurm.submit(comment="wattsched: work=30s deadline=+2000s")
    for step in (0.0, 1.0, 6.0, 1.0, 1.0):  # the drain, the signal, the requeue, the change, the release
        clock.now += step
        controller.run_once()
        _mark(slurm, fake)
    _sync_devices(slurm, fake)
    assert controller.store.repartitions()[-1].phase == "done"
    row = controller.store.job(short)
    assert row is not None and row.phase == "released" and row.renewed_as is None
    assert short not in slurm.schedule()  # Slurm cannot run it: its record still asks for the 2g's type
    said = [t for _, t in controller.store.decisions(100) if f"job {short} cannot run" in t]
    assert said == [
        f"job {short} cannot run: its Slurm record asks for gpu:a100_2g.10gb:1, which node0 no longer has, "
        f"and it could not be replaced (cannot renew job {short}: its script and environment are not "
        "readable here); cancel and resubmit it"
    ]


@pytest.mark.parametrize(("max_wait_s", "requeued"), [(30, True), (1000, False)])
def test_with_requeue_auto_only_a_job_that_would_outlast_the_wait_is_requeued(
    tmp_path: Path, max_wait_s: float, requeued: bool
) -> None:
    """The 2g's preemptible job (60 s of work on the whole GPU) has about 200 s left on the 2g: with
    ``max_wait_s`` 30 waiting for it would give the change up, so it is signalled and requeued; with 1000 it
    is waited for."""
    controller, slurm, *_, short = _to_the_wait(tmp_path, f'requeue = "auto"\nmax_wait_s = {max_wait_s}')
    assert [s[0] for s in slurm.signals] == ([short] if requeued else [])
    entry = controller.store.repartitions()[-1]
    assert (
        entry.phase == "wait" and entry.waited == [short] and entry.requeued == ([short] if requeued else [])
    )


def test_a_refused_destroy_is_logged_once_per_try_changes_nothing_and_is_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    controller, slurm, fake, clock, switch = _setup(tmp_path, "requeue = false\nmax_attempts = 3")
    # Slurm says the 2g's job ended, but the GPU still has a process on the 2g.
    _start_repartition(controller, slurm, fake, clock, switch, process_exits=False)
    with caplog.at_level(logging.WARNING, logger="wattsched.slurm.controller"):
        clock.now += 1.0
        controller.run_once()
    refused = [r.getMessage() for r in caplog.records if "MIG change refused" in r.getMessage()]
    assert len(refused) == 1 and "try 1 of 3" in refused[0] and "2g.10gb@4" in refused[0]
    assert _labels(fake) == [KEPT, DESTROYED, "1g.10gb@6"]  # nothing changed: a valid layout
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "apply" and entry.attempts == 1 and "nothing changed" in entry.detail
    _mark(slurm, fake)  # the process is gone
    clock.now += 1.0
    controller.run_once()
    assert controller.store.repartitions()[-1].phase == "done"
    assert _labels(fake) == [KEPT, "1g.5gb@4", "1g.5gb@5", "1g.10gb@6"]


def test_after_max_attempts_the_repartition_is_rolled_back_and_the_slices_reopen(tmp_path: Path) -> None:
    controller, slurm, fake, clock, switch = _setup(tmp_path, "requeue = false\nmax_attempts = 2")
    _start_repartition(controller, slurm, fake, clock, switch, passes=2, process_exits=False)
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "rolled_back" and entry.attempts == 2 and entry.finished_s == clock.now
    assert _labels(fake) == [KEPT, DESTROYED, "1g.10gb@6"]
    assert controller.gpus[0].draining == frozenset() and controller.gpus[0].configuration.ident == 3


def test_a_restart_in_the_middle_of_apply_finishes_the_repartition_without_a_half_made_layout(
    tmp_path: Path,
) -> None:
    controller, slurm, fake, clock, switch = _setup(tmp_path)
    long, _ = _start_repartition(controller, slurm, fake, clock, switch)
    # The controller died half-way through the apply: the 2g destroyed, one of the two 1g.5gb made.
    entry = controller.store.repartitions()[-1]
    entry.phase = "apply"
    controller.store.put_repartition(entry)
    fake.destroy_instance(0, next(i.uuid for i in fake.instances(0) if i.label == DESTROYED))
    fake.create_instance(0, "1g.5gb", 4)
    again = _restart(tmp_path, controller, slurm, clock, switch)
    assert again.gpus[0].configuration.ident == 3 and again.gpus[0].repartition is not None
    clock.now += 1.0
    again.run_once()
    entry = again.store.repartitions()[-1]
    assert entry.phase == "done"
    assert _labels(fake) == [KEPT, "1g.5gb@4", "1g.5gb@5", "1g.10gb@6"]
    assert again.store.job(long).slice_index == 0  # type: ignore[union-attr]
    # A second restart sees the new configuration in force.
    third = _restart(tmp_path, again, slurm, clock, switch)
    assert third.gpus[0].configuration.ident == 4 and third.gpus[0].repartition is None


def test_a_failing_reload_command_is_retried_and_a_restart_goes_on_from_the_gres_phase(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "reload-ok"
    command = f'reload_command = ["sh", "-c", "test -e {marker}"]'
    controller, slurm, fake, clock, switch = _setup(tmp_path, f"requeue = false\n{command}")
    _start_repartition(controller, slurm, fake, clock, switch, passes=1)
    entry = controller.store.repartitions()[-1]
    assert (
        entry.phase == "gres"
        and entry.attempts == 0
        and entry.reload_attempts == 1
        and "exit status 1" in entry.detail
    )
    assert _labels(fake) == [KEPT, "1g.5gb@4", "1g.5gb@5", "1g.10gb@6"]  # the GPU changed already
    marker.touch()
    again = _restart(tmp_path, controller, slurm, clock, switch)
    clock.now += 1.0
    again.run_once()
    assert again.store.repartitions()[-1].phase == "done"
    assert again.gpus[0].configuration.ident == 4


def test_the_config_takes_registry_partitioners_and_repartition_settings(tmp_path: Path) -> None:
    gpu_file = tmp_path / "gpu.json"
    FakeGpuState.create(gpu_file, [("a100-40gb", 3)])
    config = load_config(_config(tmp_path, gpu_file, "requeue = true\nmax_wait_s = 30"))
    node = config.nodes[0]
    assert node.partitioner == "day-night" and node.dynamic
    assert dict(node.partitioner_options) == {"day_configuration": 3, "night_configuration": 4}
    assert config.repartition.requeue is True and config.repartition.max_wait_s == 30.0
    # Requeueing is off unless asked for (a requeue loses the work since the job's checkpoint).
    assert load_config(_config(tmp_path, gpu_file, "max_wait_s = 30")).repartition.requeue is False
    assert load_config(_config(tmp_path, gpu_file, 'requeue = "auto"')).repartition.requeue == "auto"
    with pytest.raises(ConfigError, match=r"unknown partitioner 'day-nite' \(did you mean 'day-night'\?\)"):
        load_config(_config(tmp_path, gpu_file, partitioner="day-nite"))
    misspelled = _config(tmp_path, gpu_file).read_text().replace("day_configuration", "day_config")
    (tmp_path / "misspelled.toml").write_text(misspelled)
    with pytest.raises(
        ConfigError,
        match=r"nodes\[0\]: partitioner_options: unknown option 'day_config' for repartitioning policy "
        r"'day-night' \(did you mean 'day_configuration'\?\); valid: day_configuration, night_configuration, "
        r"day_start_h, day_end_h$",
    ):
        load_config(tmp_path / "misspelled.toml")
    with pytest.raises(ConfigError, match=r"repartition\.requeue must be true, false or \"auto\""):
        load_config(_config(tmp_path, gpu_file, "requeue = 1"))
    with pytest.raises(ConfigError, match=r"unknown key repartition\.max_wait"):
        load_config(_config(tmp_path, gpu_file, "max_wait = 1"))
    text = _config(tmp_path, gpu_file).read_text().replace("configuration = 3", 'configuration = "no-mig"')
    (tmp_path / "nomig.toml").write_text(text)
    with pytest.raises(ConfigError, match="has MIG off"):
        load_config(tmp_path / "nomig.toml")
    static = "".join(  # the static partitioner takes none of day-night's options
        line
        for line in text.replace('partitioner = "day-night"', 'partitioner = "static"').splitlines(True)
        if not line.startswith("partitioner_options")
    )
    (tmp_path / "static.toml").write_text(static)
    assert not load_config(tmp_path / "static.toml").nodes[0].dynamic


def test_a_repartitioning_node_whose_gpu_is_not_in_mig_mode_is_refused_at_start(tmp_path: Path) -> None:
    from wattsched.cli.slurm import _check_mig_mode

    gpu_file = tmp_path / "gpu.json"
    FakeGpuState.create(gpu_file, [("a100-40gb", 3)])
    config = load_config(_config(tmp_path, gpu_file))
    _check_mig_mode(config)  # MIG on: accepted
    data = json.loads(gpu_file.read_text())
    data["gpus"][0]["mig_mode"] = False
    gpu_file.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"node 'node0' GPU 0 is not in MIG mode; partitioner 'day-night'"):
        _check_mig_mode(config)


def test_a_reload_command_that_keeps_failing_ends_the_repartition_as_failed_on_the_new_layout(
    tmp_path: Path,
) -> None:
    controller, slurm, fake, clock, switch = _setup(
        tmp_path, 'requeue = false\nmax_attempts = 2\nreload_command = ["false"]'
    )
    _start_repartition(controller, slurm, fake, clock, switch, passes=2)
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "failed" and entry.reload_attempts == 2 and entry.in_force == "4"
    assert controller.gpus[0].configuration.ident == 4 and _labels(fake) == TARGET  # what the GPU has
    assert controller.gpus[0].draining == frozenset()


class Crash(BaseException):
    """The controller process dies here (no ``except`` of the controller catches it)."""


class _Backend:
    """The node's GPU backend with a hook run before each instance is created."""

    def __init__(self, spec: str) -> None:
        self.inner = open_gpu_backend(spec)
        self.before_create: Callable[[int, int], None] = lambda profile_id, start: None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create_gpu_instance(self, index: int, profile_id: int, start: int) -> Any:
        self.before_create(profile_id, start)
        return self.inner.create_gpu_instance(index, profile_id, start)


def _restart(
    tmp_path: Path, old: Controller, slurm: FakeSlurmClient, clock: Clock, switch: Switch
) -> Controller:
    """The controller process is gone (what it held in memory is lost); a new one opens the state file."""
    old.store.close()
    config = load_config(tmp_path / "wattsched.toml")
    return Controller(
        config,
        slurm,
        StateStore(config.state_path),
        clock=clock,
        meters={"node0": FakeGpuState(tmp_path / "gpu.json", clock=clock)},
        partitioners={"node0/0": switch},
    )


def _crash(monkeypatch: pytest.MonkeyPatch, target: object, name: str) -> None:
    def die(*args: object, **kwargs: object) -> None:
        raise Crash(name)

    monkeypatch.setattr(target, name, die)


@pytest.mark.parametrize("phase", ["drain", "wait", "apply", "gres", "resume"])
def test_a_controller_killed_in_any_phase_finishes_the_repartition_on_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    """The controller dies in ``phase`` (for apply: after the destroy, before the first create; for gres:
    while the reload command runs; for resume: before the new model and the rows are written). A new
    controller on the same state file ends the repartition done, the GPU exactly on the target layout, the
    kept instances never remade and the job on the kept 4g never signalled."""
    marker = tmp_path / "reloaded"
    command = f'reload_command = ["touch", "{marker}"]'
    controller, slurm, fake, clock, switch = _setup(tmp_path, f"requeue = false\n{command}")
    long, short = _two_running(controller, slurm, fake, clock)
    kept = {i.label: i.uuid for i in fake.instances(0) if i.label in (KEPT, "1g.10gb@6")}
    switch.target = 4
    clock.now += 1.0
    slurm.submit(comment="wattsched: work=30s deadline=+2000s")
    controller.run_once()  # drain written
    if phase != "drain":
        clock.now += 1.0
        controller.run_once()  # wait: the 2g runs its job
        assert controller.store.repartitions()[-1].phase == "wait"
    if phase in ("apply", "gres", "resume"):
        clock.now += 10.0
        slurm.finish(short)
        _mark(slurm, fake)
        with monkeypatch.context() as patch:
            if phase == "apply":
                backend = _Backend(f"fake:{tmp_path / 'gpu.json'}")
                backend.before_create = lambda profile_id, start: (_ for _ in ()).throw(Crash("create"))
                controller._backends["node0"] = backend
            elif phase == "gres":
                _crash(patch, controller_module, "run_reload")
            else:
                _crash(patch, controller, "_install")
            with pytest.raises(Crash):
                controller.run_once()
    entry = controller.store.repartitions()[-1]
    assert entry.phase == phase  # the journal names the phase the controller died in
    if phase == "apply":
        assert _labels(fake) == [KEPT, "1g.10gb@6"]  # the 2g destroyed, nothing half-made
    elif phase in ("gres", "resume"):
        assert _labels(fake) == TARGET
    assert marker.exists() == (phase == "resume")
    again = _restart(tmp_path, controller, slurm, clock, switch)
    assert again.gpus[0].configuration.ident == 3 and again.gpus[0].draining == frozenset(
        {1, 2}
    )  # 2g and the moved 1g.10gb
    if phase in ("drain", "wait"):
        clock.now += 1.0
        again.run_once()
        assert again.store.repartitions()[-1].phase == "wait"  # still waits for the 2g's job
        assert _labels(fake) == [KEPT, DESTROYED, "1g.10gb@6"]
        clock.now += 10.0
        slurm.finish(short)
        _mark(slurm, fake)
    clock.now += 1.0
    again.run_once()
    entry = again.store.repartitions()[-1]
    assert entry.phase == "done" and entry.attempts == 0 and entry.waited == [short]
    assert list(entry.phase_s) == ["drain", "wait", "apply", "gres", "resume"]
    assert _labels(fake) == TARGET and marker.exists()
    assert {i.label: i.uuid for i in fake.instances(0) if i.label in kept} == kept  # kept never remade
    assert again.gpus[0].configuration.ident == 4 and again.gpus[0].labels == TARGET
    assert again.gpus[0].draining == frozenset()
    row = again.store.job(long)
    assert row is not None and row.phase == "running" and row.slice == KEPT and row.slice_index == 0
    assert row.preemptions == 0 and not slurm.signals
    assert slurm.job(long).state is JobState.RUNNING  # type: ignore[union-attr]


def test_a_create_refused_because_the_placement_is_taken_is_retried_then_rolled_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each time the controller creates a 1g.5gb, something else has just taken the placement (an idle
    1g.10gb made behind its back over it): each try is one log line, leaves a valid layout, and the next
    try starts from what the GPU holds. After max_attempts the GPU is back on the old layout."""
    controller, slurm, fake, clock, switch = _setup(tmp_path, "requeue = false\nmax_attempts = 3")
    backend = _Backend(f"fake:{tmp_path / 'gpu.json'}")
    small = next(p.nvml_id for p in backend.profiles(0) if p.name == "1g.5gb")

    def take(profile_id: int, start: int) -> None:
        if profile_id == small:
            fake.create_instance(0, "1g.10gb", start)

    backend.before_create = take
    controller._backends["node0"] = backend
    _start_repartition(controller, slurm, fake, clock, switch)
    layouts = []
    with caplog.at_level(logging.WARNING, logger="wattsched.slurm.controller"):
        for _ in range(3):
            clock.now += 1.0
            controller.run_once()
            layouts.append(_labels(fake))
    refused = [r.getMessage() for r in caplog.records if "MIG change refused" in r.getMessage()]
    assert len(refused) == 3 and all("\n" not in line for line in refused)
    assert [f"try {n} of 3" in line for n, line in enumerate(refused, start=1)] == [True] * 3
    assert all("placement taken" in line or "overlaps" in line for line in refused)
    # After tries 1 and 2: the foreign 1g.10gb@4 in place of the 2g (a valid layout; the next try's plan
    # destroys it, as it does any idle instance the target has not); then rolled back.
    assert layouts[:2] == [[KEPT, "1g.10gb@4", "1g.10gb@6"]] * 2
    assert layouts[2] == [KEPT, DESTROYED, "1g.10gb@6"]
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "rolled_back" and entry.attempts == 3 and entry.in_force == "3"
    assert controller.gpus[0].configuration.ident == 3 and controller.gpus[0].draining == frozenset()


def test_a_roll_back_that_remade_an_instance_runs_the_reload_command_once(tmp_path: Path) -> None:
    """The tries destroyed the 2g and the roll back made it again: a new instance (a new MIG UUID, on a
    real GPU a new device), so the reload command runs once and Slurm's devices are the GPU's again."""
    marker = tmp_path / "reloaded"
    command = f'reload_command = ["sh", "-c", "echo x >> {marker}"]'
    controller, slurm, fake, clock, switch = _setup(tmp_path, f"requeue = false\nmax_attempts = 2\n{command}")
    old_2g = next(i.uuid for i in fake.instances(0) if i.label == DESTROYED)
    fake.set_create_race(0, "1g.5gb", "1g.10gb")
    _start_repartition(controller, slurm, fake, clock, switch, passes=2)
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "rolled_back" and _labels(fake) == [KEPT, DESTROYED, "1g.10gb@6"]
    assert next(i.uuid for i in fake.instances(0) if i.label == DESTROYED) != old_2g  # made again
    assert marker.read_text() == "x\n"  # the reload ran once


def test_a_roll_back_after_refused_destroys_runs_no_reload_command(tmp_path: Path) -> None:
    """The tries changed nothing (the 2g's process never left): Slurm's devices are still the GPU's."""
    marker = tmp_path / "reloaded"
    command = f'reload_command = ["touch", "{marker}"]'
    controller, slurm, fake, clock, switch = _setup(tmp_path, f"requeue = false\nmax_attempts = 2\n{command}")
    _start_repartition(controller, slurm, fake, clock, switch, passes=2, process_exits=False)
    assert controller.store.repartitions()[-1].phase == "rolled_back" and not marker.exists()


def test_a_roll_back_the_gpu_refuses_fails_the_repartition_on_the_old_configuration(tmp_path: Path) -> None:
    """The instance that took the placement is busy: the tries and the roll back are refused. The MIG change
    was never finished, so the old configuration stays in force (not the target, whose 1g.5gb were never
    made), for this controller and for one restarted on the state file."""
    controller, slurm, fake, clock, switch = _setup(tmp_path, "requeue = false\nmax_attempts = 2")
    backend = _Backend(f"fake:{tmp_path / 'gpu.json'}")
    small = next(p.nvml_id for p in backend.profiles(0) if p.name == "1g.5gb")

    def take(profile_id: int, start: int) -> None:
        if profile_id == small:
            fake.set_busy(fake.create_instance(0, "1g.10gb", start).uuid, "inference")

    backend.before_create = take
    controller._backends["node0"] = backend
    _start_repartition(controller, slurm, fake, clock, switch, passes=2)
    entry = controller.store.repartitions()[-1]
    assert entry.phase == "failed" and "roll back failed" in entry.detail and entry.attempts == 2
    assert _labels(fake) == [KEPT, "1g.10gb@4", "1g.10gb@6"]  # a valid layout, neither old nor new
    assert entry.in_force == "3" and controller.gpus[0].configuration.ident == 3
    # The old configuration's 2g is not on the GPU: it takes no job (Slurm still lists it, the reload never
    # ran), here and in a controller restarted on the state file, until it is there again.
    two_g = controller.gpus[0].labels.index(DESTROYED)
    assert controller.gpus[0].missing == {two_g}
    restarted = _restart(tmp_path, controller, slurm, clock, switch)
    for d in (100, 110, 120, 130):
        slurm.submit(comment=f"wattsched: work=50s deadline=+{d}s")
    for _ in range(3):
        clock.now += 1.0
        restarted.run_once()
    assert restarted.gpus[0].configuration.ident == 3 and restarted.gpus[0].missing == {two_g}
    # Every job released since the restart (the four new ones and the one the failed repartition left
    # waiting) is on a slice the GPU holds; the old 2g's slot takes none.
    released = {r.slice for r in restarted.store.jobs(["released"])}
    assert released and DESTROYED not in released
    # An operator mends the GPU: the instance that took the placement goes, the 2g is made again.
    taker = next(i for i in fake.instances(0) if i.label == "1g.10gb@4")
    fake.set_busy(taker.uuid, None)
    fake.destroy_instance(0, taker.uuid)
    fake.create_instance(0, "2g.10gb", 4)
    clock.now += 1.0
    restarted.run_once()
    assert restarted.gpus[0].missing == frozenset()
    logged = [text for _, text in restarted.store.decisions(50)]
    assert any(f"slices {DESTROYED} are not on the GPU" in text for text in logged)
    assert any("every slice of configuration 3 is back" in text for text in logged)


def _journal(path: Path, entries: list[tuple[str, str, str, str, str, dict[str, float]]]) -> None:
    """A state file with repartitions of GPU n1/0: (from, to, from layout, to layout, phase, phase_s)."""
    store = StateStore(path)
    for old, new, old_layout, new_layout, phase, phase_s in entries:
        entry = store.add_repartition("n1", 0, (old, new), (old_layout, new_layout), 0.0)
        entry.phase, entry.phase_s = phase, phase_s
        store.put_repartition(entry)
    store.close()


_CFG3 = "4g.20gb@0,2g.10gb@4,1g.10gb@6"
_CFG4 = "4g.20gb@0,1g.5gb@4,1g.5gb@5,1g.10gb@6"


def test_measured_repartition_s_is_the_median_out_of_service_of_the_models_finished_repartitions(
    tmp_path: Path,
) -> None:
    a100 = load_gpu("a100-40gb")
    path = tmp_path / "state.db"
    _journal(
        path,
        [
            # out of service = apply + gres + resume: 0.5 + 1.0 + 0.1 = 1.6, 0.3 + 2.0 + 0.2 = 2.5,
            # 1.0 + 3.0 + 0.0 = 4.0; the median is 2.5 (drain and wait are not counted)
            (
                "3",
                "4",
                _CFG3,
                _CFG4,
                "done",
                {"drain": 0.1, "wait": 9.0, "apply": 0.5, "gres": 1.0, "resume": 0.1},
            ),
            ("4", "3", _CFG4, _CFG3, "done", {"wait": 0.0, "apply": 0.3, "gres": 2.0, "resume": 0.2}),
            ("3", "4", _CFG3, _CFG4, "done", {"apply": 1.0, "gres": 3.0}),
            ("4", "3", _CFG4, _CFG3, "rolled_back", {"apply": 50.0}),  # not done: not counted
            ("3", "4", _CFG3, _CFG4, "wait", {"drain": 0.1}),  # under way: not counted
        ],
    )
    assert measured_repartition_s(path, a100) == pytest.approx(2.5)
    # Another model's layouts (the A100-80GB's 1g is a 1g.10gb) are not the A100-40GB's.
    with pytest.raises(InputError, match="no finished repartition of GPU model a100-80gb"):
        measured_repartition_s(path, load_gpu("a100-80gb"))


def test_measured_repartition_s_refuses_a_missing_file_a_non_state_file_and_no_repartition(
    tmp_path: Path,
) -> None:
    a100 = load_gpu("a100-40gb")
    with pytest.raises(InputError, match="no such state file"):
        measured_repartition_s(tmp_path / "missing.db", a100)
    assert not (tmp_path / "missing.db").exists()  # nothing created
    text = tmp_path / "notes.txt"
    text.write_text("not SQLite at all, but long enough to have a header " * 4)
    with pytest.raises(InputError, match="not a controller's state file"):
        measured_repartition_s(text, a100)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(InputError, match="no repartitions table"):
        measured_repartition_s(other, a100)
    empty = tmp_path / "state.db"
    _journal(empty, [])
    with pytest.raises(InputError, match="no finished repartition"):
        measured_repartition_s(empty, a100)


@pytest.mark.parametrize(("hour", "configuration"), [(12, 3), (21, 4)])
def test_day_night_follows_the_local_time_of_day_from_a_midnight_origin(
    tmp_path: Path, hour: int, configuration: int
) -> None:
    """The default time origin is local midnight of the first start's day: day-night's day (5-17 h by
    default) is the wall clock's. A controller started at noon keeps the day configuration (3); one started
    at 21:00 goes to the night one (4) at its first decision epoch. With ``time_origin = "start"`` the
    origin is the first start itself."""
    started = datetime(2026, 3, 10, hour, 0, 0).timestamp()
    clock = Clock()
    clock.now = started
    gpu_file = tmp_path / "gpu.json"
    fake = FakeGpuState.create(gpu_file, [("a100-40gb", 3)], clock=clock)
    config = load_config(_config(tmp_path, gpu_file))
    assert config.time_origin == "midnight"
    slurm = FakeSlurmClient({"node0": []}, clock=clock)
    _sync_devices(slurm, fake)
    controller = Controller(config, slurm, StateStore(config.state_path), clock=clock, meters={"node0": fake})
    assert controller.origin_s == datetime(2026, 3, 10).timestamp()
    slurm.submit(comment="wattsched: work=30s deadline=+2000s")
    controller.run_once()
    entries = controller.store.repartitions()
    assert [e.to_config for e in entries] == ([] if configuration == 3 else ["4"])
    (tmp_path / "b").mkdir()
    text = (
        _config(tmp_path / "b", gpu_file).read_text().replace("[slurm]\n", '[slurm]\ntime_origin = "start"\n')
    )
    (tmp_path / "b" / "wattsched.toml").write_text(text)
    from_start = Controller(
        load_config(tmp_path / "b" / "wattsched.toml"),
        slurm,
        StateStore(tmp_path / "b" / "s.db"),
        clock=clock,
    )
    assert from_start.origin_s == int(started)
    bad = text.replace('time_origin = "start"', 'time_origin = "noon"')
    (tmp_path / "b" / "wattsched.toml").write_text(bad)
    with pytest.raises(ConfigError, match=r"slurm\.time_origin: expected 'midnight' or 'start', got 'noon'"):
        load_config(tmp_path / "b" / "wattsched.toml")
