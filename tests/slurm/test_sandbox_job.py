"""The sandbox's stand-in GPU job: a renewed copy (a new job id) resumes from the checkpoint of the job it
replaces, named after the first job's id (``$WATTSCHED_JOB_ID``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from wattsched.cluster.clocks import clock_schedule
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm import sandbox_job
from wattsched.workload.job import Scaling


@pytest.mark.parametrize(("first_id", "resumed"), [("4", True), (None, False)])
def test_a_renewed_copy_resumes_from_the_first_jobs_checkpoint(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    first_id: str | None,
    resumed: bool,
) -> None:
    state = FakeGpuState.create(tmp_path / "gpu.json", [("a100-40gb", 1)])
    (tmp_path / ".wattsched-checkpoint-4").write_text("0.99")  # the original job 4 checkpointed at 99 %
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", state.instances(0)[0].uuid)
    monkeypatch.setenv("SLURM_SUBMIT_DIR", str(tmp_path))
    monkeypatch.setenv("SLURM_JOB_ID", "9")  # the copy
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    if first_id is None:
        monkeypatch.delenv("WATTSCHED_JOB_ID", raising=False)
    else:
        monkeypatch.setenv("WATTSCHED_JOB_ID", first_id)
    assert sandbox_job.main(["--work", "0.5s", "--state", str(state.path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("start job=9 ") and out[0].endswith(f"done={'0.9900' if resumed else '0.0000'}")
    assert out[-1].startswith("finish job=9 ")
    # The finished job's checkpoint is gone; another job's is never touched.
    assert (tmp_path / ".wattsched-checkpoint-4").exists() is not resumed


def test_the_job_runs_at_the_speed_of_the_locked_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Locked at the H200's slowest level the job takes its run time over that level's speed: never less
    (it cannot finish early, however loaded the machine)."""
    state = FakeGpuState.create(tmp_path / "gpu.json", [("h200-141gb", 1)])
    schedule = clock_schedule(load_gpu("h200-141gb"))
    assert schedule is not None
    slow = len(schedule.sm_mhz) - 1
    state.set_locked_clocks(0, (schedule.sm_mhz[slow], 2619))
    uuid = state.instances(0)[0].uuid
    run_s, _, _ = sandbox_job.run_time_s(0.4, Scaling.LINEAR, uuid, state)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", uuid)
    monkeypatch.setenv("SLURM_SUBMIT_DIR", str(tmp_path))
    began = time.monotonic()
    assert sandbox_job.main(["--work", "0.4s", "--state", str(state.path)]) == 0
    assert time.monotonic() - began >= 0.95 * run_s / schedule.speed[slow] > 1.3 * run_s
    assert capsys.readouterr().out.splitlines()[-1].startswith("finish ")
