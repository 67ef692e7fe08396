"""The sandbox's stand-in GPU job: a renewed copy (a new job id) resumes from the checkpoint of the job it
replaces, named after the first job's id (``$WATTSCHED_JOB_ID``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm import sandbox_job


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
