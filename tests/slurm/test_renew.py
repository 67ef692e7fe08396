"""A job whose Slurm record must change GRES type is renewed: Slurm 22.05 keeps every type a job was given
(a job asked for A, then B, waits for a free A too, and never runs once the node has no A), so the
controller replaces it by a copy that asked for nothing yet. In memory: the fake Slurm keeps the types as
the real one does; the controller renews, and a renewal cut short by a crash is finished on restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.slurm.client import FakeSlurmClient, JobState, SlurmError
from wattsched.slurm.controller import Controller
from wattsched.slurm.state import StateStore

from .test_controller import _mark, _setup

TWO_G, FOUR_G, ONE_G = "gpu:a100_2g.10gb:1", "gpu:a100_4g.20gb:1", "gpu:a100_1g.10gb:1"


def test_the_fake_slurm_keeps_every_type_a_job_asked_for_as_slurm_does() -> None:
    slurm = FakeSlurmClient({"node0": ["a100_4g.20gb", "a100_2g.10gb"]})
    busy = slurm.submit(partition="debug", gres=TWO_G)
    slurm.start(busy)
    job = slurm.submit()
    slurm.set_gres(job, TWO_G, "node0")
    slurm.set_gres(job, FOUR_G, "node0")
    slurm.release(job)
    assert slurm.job(job).gres == "gpu:a100_4g.20gb:1"  # type: ignore[union-attr]
    assert slurm.schedule() == []  # the 4g is free, but the 2g it once asked for is not
    slurm.finish(busy)
    assert slurm.schedule() == [job] and slurm.job(job).gpu_indices == (0,)  # type: ignore[union-attr]


def test_a_renewed_copy_asks_for_nothing_is_held_and_the_original_is_cancelled() -> None:
    slurm = FakeSlurmClient({"node0": ["a100_4g.20gb", "a100_2g.10gb"]})
    busy = slurm.submit(partition="debug", gres=TWO_G)
    slurm.start(busy)
    job = slurm.submit(comment="wattsched: work=5s", name="train")
    slurm.set_gres(job, TWO_G, "node0")
    copy = slurm.renew(job, "wattsched: renewal of job 2")
    renewed = slurm.job(copy)
    assert renewed is not None and renewed.held and renewed.gres == "" and renewed.name == "train"
    assert renewed.comment == "wattsched: work=5s" and renewed.admin_comment == "wattsched: renewal of job 2"
    assert slurm.job(job).state is JobState.CANCELLED  # type: ignore[union-attr]
    slurm.set_gres(copy, FOUR_G, "node0")
    slurm.release(copy)
    assert slurm.schedule() == [copy]  # the 2g still busy: the copy never asked for it
    with pytest.raises(SlurmError, match="not pending"):
        slurm.renew(busy, "x")  # a running job is never renewed


def _released_on_the_2g_before(tmp_path: Path) -> tuple[Controller, FakeSlurmClient, int, int]:
    """Configuration 3 (4g, 2g, 1g.10gb): a job the controller released on the 1g.10gb, whose Slurm record had
    asked for the 2g before (as a job released on the 2g, then moved before Slurm started it), while another
    job runs on the 2g. The controller is restarted on its state file."""
    controller, slurm, meter, clock = _setup(tmp_path, configuration=3)
    job = slurm.submit(comment="wattsched: work=100s deadline=+1000s")
    controller.run_once()
    row = controller.store.job(job)
    assert row is not None and row.phase == "released" and row.gres == ONE_G
    other = slurm.submit(partition="debug", gres=TWO_G)
    slurm.start(other)
    _mark(slurm, meter)
    slurm.hold(job)
    slurm.set_gres(job, TWO_G, "node0")
    row.phase, row.gres, row.slice_index, row.slice = "queued", TWO_G, None, None
    controller.store.put_job(row)
    restarted = Controller(
        controller.config,
        slurm,
        StateStore(controller.config.state_path),
        clock=clock,
        meters={"node0": meter},
    )
    return restarted, slurm, job, other


def test_a_job_given_another_type_than_its_slurm_record_names_is_renewed_and_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    controller, slurm, job, other = _released_on_the_2g_before(tmp_path)
    report = controller.run_once()
    row = controller.store.job(job)
    assert row is not None and row.phase == "renewed" and row.renewed_as is not None
    copy = row.renewed_as
    assert report.released == [copy] and slurm.renewed == {copy: job}
    new = controller.store.job(copy)
    assert new is not None and new.phase == "released" and new.gres == ONE_G and new.submit_s == row.submit_s
    assert slurm.schedule() == [copy]  # the 2g is still busy with the other job
    assert slurm.job(other).state is JobState.RUNNING  # type: ignore[union-attr]
    controller.run_once()
    assert controller.store.job(copy).phase == "running"  # type: ignore[union-attr]
    logged = [text for _, text in controller.store.decisions()]
    assert any(f"job {job} renewed as job {copy}" in text for text in logged)
    # `wattsched slurm jobs` names the copy beside the original.
    assert main(["slurm", "jobs", "--config", str(tmp_path / "wattsched.toml")]) == 0
    table = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert table[str(job)][2:4] == [f"renewed:{copy}", "CANCELLED"] and table[str(copy)][2:4] == [
        "running",
        "RUNNING",
    ]
    assert main(["slurm", "jobs", "--config", str(tmp_path / "wattsched.toml"), "--json"]) == 0
    rows = {r["job_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[job]["renewed_as"] == copy and rows[copy]["renewed_as"] is None


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "before-the-marker"])
def test_a_renewal_cut_short_by_a_crash_is_finished_on_restart(tmp_path: Path, marked: bool) -> None:
    controller, slurm, job, _ = _released_on_the_2g_before(tmp_path)
    # The crash: the renewal journaled and done by Slurm, the controller killed before it wrote the rows
    # (or even before the copy got its marker: then it is found by its name and comment).
    now = controller.clock()
    action = controller.store.journal(job, "renew", {"marker": f"wattsched: renewal of job {job}"}, now)
    copy = slurm.renew(job, f"wattsched: renewal of job {job}")
    if not marked:
        slurm.set_admin_comment(copy, "")
    restarted = Controller(
        controller.config,
        slurm,
        StateStore(controller.config.state_path),
        clock=controller.clock,
        meters=controller.meters,
    )
    restarted.run_once()
    assert [a.status for a in restarted.store.actions(job) if a.id == action] == ["done"]
    old, new = restarted.store.job(job), restarted.store.job(copy)
    assert old is not None and old.phase == "renewed" and old.renewed_as == copy
    assert new is not None and new.phase == "released" and new.gres == ONE_G
    assert len(slurm.renewed) == 1  # renewed once, not again
