"""Final energies into Slurm's accounting, on an in-memory Slurm: each ended job's exact energy lands in its
accounting record once, after a failure on a later pass, after a controller restart between the end and the
write; from Slurm 25.11 on also as the record's energy TRES, once; without slurmdbd the controller says once
that the energies stay in its state file."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from wattsched.slurm.accounting import (
    KIND,
    accounting_status,
    energy_comment,
    energy_tres_writable,
    status_line,
)
from wattsched.slurm.client import FakeSlurmClient, JobState, SlurmError
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.state import StateStore

from .test_controller import Clock, _mark, _setup


def _writes(slurm: FakeSlurmClient, job_id: int) -> list[str]:
    return [call[2] for call in slurm.calls if call[0] == "set_accounting_comment" and call[1] == job_id]


def _energy_writes(slurm: FakeSlurmClient, job_id: int) -> list[int]:
    return [call[2] for call in slurm.calls if call[0] == "set_accounting_energy" and call[1] == job_id]


def _run_one_job(
    tmp_path: Path, slurm_version: str = "22.05"
) -> tuple[Controller, FakeSlurmClient, Clock, int, int]:
    """One job alone on configuration 1 (one 7g slice), on Slurm ``slurm_version``: runs 100 s, then ends.
    Returns the controller, the Slurm, the clock, the job and the energy (mJ) the counter rose by while the
    job was busy — all of it the job's: the only slice is busy, so no idle slice takes a share."""
    controller, slurm, meter, clock = _setup(tmp_path, configuration=1)
    slurm.slurm_version = slurm_version
    job = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()  # arrives, released
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()  # seen running: busy on the slice from this reading on
    first = meter.energy_mj(0)
    assert first is not None
    clock.now += 100.0
    slurm.finish(job)
    _mark(slurm, meter)
    last = meter.energy_mj(0)  # the pass below reads the counter at the same (fake) time
    assert last is not None
    controller.run_once()  # seen ended: charged up to this reading, then the write
    return controller, slurm, clock, job, last - first


def test_the_final_energy_lands_once_in_the_accounting_record(tmp_path: Path) -> None:
    controller, slurm, clock, job, energy_mj = _run_one_job(tmp_path)
    row = controller.store.job(job)
    assert row is not None and row.phase == "done" and row.energy_mj == energy_mj > 0
    text = f"wattsched_energy_j={energy_mj // 1000}.{energy_mj % 1000:03d}"  # mJ as J with 3 decimals
    assert text == energy_comment(row.energy_mj)
    assert slurm.records[job].admin_comment == text and slurm.records[job].state is JobState.COMPLETED
    # slurmctld's own record still has the comment of the last pass before the end (it refuses changes after).
    running = slurm.job(job)
    assert running is not None and running.admin_comment != text
    for _ in range(3):
        clock.now += 5.0
        controller.run_once()
    assert _writes(slurm, job) == [text]  # written once, never again
    assert [a.status for a in controller.store.actions(job) if a.kind == KIND] == ["done"]
    assert accounting_status(controller.store) == {"slurm": "slurmdbd", "written": 1, "waiting": 0}
    assert status_line(accounting_status(controller.store)).endswith("1 written, 0 waiting")


def test_a_failed_write_is_retried_on_later_passes_until_it_lands(tmp_path: Path) -> None:
    controller, slurm, meter, clock = _setup(tmp_path, configuration=1)
    job = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()
    clock.now += 50.0
    slurm.dbd_up = False  # slurmdbd goes down before the job ends
    slurm.finish(job)
    _mark(slurm, meter)
    controller.run_once()
    assert controller.accounting.waiting == [job] and _writes(slurm, job) == []
    assert accounting_status(controller.store)["waiting"] == 1
    clock.now += 0.5  # the first retry comes 1 s after the failure
    slurm.dbd_up = True
    slurm.unrecorded.add(job)  # ... and the job's end has not reached the database yet
    slurm.records[job] = replace(slurm.records[job], state=JobState.RUNNING)
    controller.run_once()
    assert _writes(slurm, job) == []  # not due yet
    clock.now += 1.0
    controller.run_once()  # due: the record still says RUNNING, so no write (slurmctld's end would undo it)
    assert _writes(slurm, job) == [] and controller.accounting.waiting == [job]
    slurm.flush_accounting()
    clock.now += 2.0  # the second retry: 2 s after the second failure
    controller.run_once()
    row = controller.store.job(job)
    assert row is not None
    assert _writes(slurm, job) == [energy_comment(row.energy_mj)]
    assert slurm.records[job].admin_comment == energy_comment(row.energy_mj)
    assert controller.accounting.waiting == []
    clock.now += 120.0
    controller.run_once()
    assert len(_writes(slurm, job)) == 1


def test_a_controller_killed_between_the_end_and_the_write_writes_once_after_restart(tmp_path: Path) -> None:
    controller, slurm, meter, clock = _setup(tmp_path, configuration=1)
    job = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()
    clock.now += 50.0
    slurm.finish(job)
    _mark(slurm, meter)
    # The pass that sees the end stops right after journaling the write (a SIGKILL before it is sent).
    controller.accounting.write = lambda now: []  # type: ignore[method-assign]
    controller.run_once()
    energy = controller.store.job(job).energy_mj  # type: ignore[union-attr]
    assert [a.status for a in controller.store.actions(job) if a.kind == KIND] == ["pending"]
    assert _writes(slurm, job) == []
    restarted = Controller(
        load_config(tmp_path / "wattsched.toml"),
        slurm,
        StateStore(tmp_path / "state.db"),
        clock=clock,
        meters={"node0": meter},
    )
    clock.now += 5.0
    restarted.run_once()
    restarted.run_once()
    assert _writes(slurm, job) == [energy_comment(energy)]
    assert slurm.records[job].admin_comment == energy_comment(energy)
    assert [a.status for a in restarted.store.actions(job) if a.kind == KIND] == ["done"]


def test_a_write_that_landed_before_a_kill_is_not_written_again(tmp_path: Path) -> None:
    controller, slurm, clock, job, energy_mj = _run_one_job(tmp_path)
    # As if the write went out and the controller died before marking it done: its entry pending again.
    (action,) = [a for a in controller.store.actions(job) if a.kind == KIND]
    controller.store.finish_action(action.id, "pending")
    restarted = Controller(
        load_config(tmp_path / "wattsched.toml"),
        slurm,
        StateStore(tmp_path / "state.db"),
        clock=clock,
        meters=controller.meters,
    )
    clock.now += 5.0
    restarted.run_once()
    assert _writes(slurm, job) == [energy_comment(energy_mj)]  # the one write before the "kill"
    assert [a.status for a in restarted.store.actions(job) if a.kind == KIND] == ["done"]


def test_without_slurmdbd_the_controller_says_once_that_energies_stay_in_its_state_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    controller, slurm, meter, clock = _setup(tmp_path, configuration=1)
    slurm.accounting = False
    caplog.set_level(logging.INFO, logger="wattsched.slurm")
    for _ in range(2):
        job = slurm.submit(comment="wattsched: work=10s deadline=+1000s")
        controller.run_once()
        clock.now += 1.0
        slurm.schedule()
        _mark(slurm, meter)
        controller.run_once()
        clock.now += 10.0
        slurm.finish(job)
        _mark(slurm, meter)
        controller.run_once()
        clock.now += 1.0
    said = [r.getMessage() for r in caplog.records if "keeps no accounting database" in r.getMessage()]
    assert len(said) == 1 and str(controller.store.path) in said[0]
    assert all(row.energy_mj > 0 for row in controller.store.jobs())  # the energies are in the state file
    assert not [a for a in controller.store.actions() if a.kind == KIND]  # nothing owed, nothing journaled
    assert not [call for call in slurm.calls if call[0] == "set_accounting_comment"]
    status = accounting_status(controller.store)
    assert status["slurm"] == "none" and "stay in this state file" in status_line(status)
    assert any("keeps no accounting database" in text for _, text in controller.store.decisions())


def test_a_dry_run_journals_no_write(tmp_path: Path) -> None:
    controller, slurm, meter, clock = _setup(tmp_path, configuration=1)
    dry = Controller(
        controller.config, slurm, StateStore(":memory:"), clock=clock, meters=controller.meters, dry_run=True
    )
    job = slurm.submit(comment="wattsched: work=10s deadline=+1000s")
    slurm.release(job)
    slurm.start(job)
    _mark(slurm, meter)
    dry.run_once()
    clock.now += 10.0
    slurm.finish(job)
    dry.run_once()
    assert not [a for a in dry.store.actions() if a.kind == KIND]
    assert not [call for call in slurm.calls if call[0] == "set_accounting_comment"]


@pytest.mark.parametrize(
    ("release", "writable"),
    [
        ("22.05", False),
        ("24.11", False),
        ("25.05", False),
        ("25.11", True),
        ("26.05", True),
        ("100.01", True),
        (None, False),
        ("", False),
        ("slurm", False),
    ],
)
def test_the_energy_tres_is_written_from_slurm_25_11_on(release: str | None, writable: bool) -> None:
    assert energy_tres_writable(release) is writable


def test_on_slurm_26_05_the_energy_tres_lands_once_beside_the_comment(tmp_path: Path) -> None:
    controller, slurm, clock, job, energy_mj = _run_one_job(tmp_path, slurm_version="26.05")
    energy_j = (energy_mj + 500) // 1000  # whole joules, rounded
    assert slurm.records[job].admin_comment == energy_comment(energy_mj)
    assert slurm.records[job].energy_j == energy_j and _energy_writes(slurm, job) == [energy_j]
    for _ in range(3):
        clock.now += 5.0
        controller.run_once()
    assert _energy_writes(slurm, job) == [energy_j] and len(_writes(slurm, job)) == 1


def test_before_slurm_25_11_only_the_comment_is_written(tmp_path: Path) -> None:
    _, slurm, _, job, energy_mj = _run_one_job(tmp_path, slurm_version="24.11")
    assert slurm.records[job].admin_comment == energy_comment(energy_mj)
    assert slurm.records[job].energy_j is None and _energy_writes(slurm, job) == []


def test_a_comment_landed_and_a_tres_failed_retries_the_tres_alone(tmp_path: Path) -> None:
    controller, slurm, meter, clock = _setup(tmp_path, configuration=1)
    slurm.slurm_version = "26.05"
    refused = []
    real = slurm.set_accounting_energy

    def refuse_once(job_id: int, energy_j: int) -> None:
        if not refused:
            refused.append(job_id)
            raise SlurmError("'sacctmgr --immediate modify job' failed: Problem talking to the database")
        real(job_id, energy_j)

    slurm.set_accounting_energy = refuse_once  # type: ignore[method-assign]
    job = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    _mark(slurm, meter)
    controller.run_once()
    clock.now += 50.0
    slurm.finish(job)
    _mark(slurm, meter)
    controller.run_once()  # the comment lands, the TRES is refused
    assert refused == [job] and controller.accounting.waiting == [job] and len(_writes(slurm, job)) == 1
    clock.now += 1.0
    controller.run_once()  # the retry: the TRES alone
    row = controller.store.job(job)
    assert row is not None and slurm.records[job].energy_j == (row.energy_mj + 500) // 1000
    assert len(_writes(slurm, job)) == 1 and controller.accounting.waiting == []
