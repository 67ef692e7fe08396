"""On a real Slurm (the sandbox): a pending job given a second GRES type still waits for a free device of the
first (Slurm 22.05 keeps every type a job was given), and :meth:`SlurmClient.renew` replaces it by a copy —
same script and arguments, submission environment, output file (appended to) — that asks for nothing, runs
on the type it is then given at once, and leaves the original cancelled."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import JobState


def _sbatch(
    box: sandbox_module.Sandbox,
    script: Path,
    *flags: str,
    env: dict[str, str] | None = None,
    arguments: tuple[str, ...] = (),
) -> int:
    out = subprocess.run(
        ["sbatch", "--parsable", "--partition", box.partition, *flags, str(script), *arguments],
        env=dict(os.environ, **box.env, **(env or {})),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out.strip().split(";")[0])


def test_a_job_keeps_its_first_gres_type_in_slurm_and_its_renewed_copy_does_not(
    slurm_sandbox: sandbox_module.Sandbox, tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    box = slurm_sandbox
    client = box.client()
    two_g = next(t for t in box.gres_types if "2g" in t)
    one_g = next(t for t in box.gres_types if "1g" in t)
    uuid_of = dict(zip(box.gres_types, box.gpu_uuids, strict=True))
    hold = tmp_path / "hold.sh"
    hold.write_text("#!/bin/sh\nsleep 20\n")
    hold.chmod(0o755)
    script = tmp_path / "job.sh"
    script.write_text(
        '#!/bin/sh\necho "start $MY_MARK $1 $CUDA_VISIBLE_DEVICES $WATTSCHED_JOB_ID"\nsleep 0.5\necho done\n'
    )
    script.chmod(0o755)
    tmp_path.chmod(0o755)
    busy = _sbatch(box, hold, "-o", str(tmp_path / "hold.out"))
    client.set_gres(busy, f"gpu:{two_g}:1", box.node)
    client.release(busy)
    wait_for(lambda: client.job(busy).state is JobState.RUNNING, 30, "the 2g's job to run")  # type: ignore[union-attr]
    job = _sbatch(
        box,
        script,
        "--open-mode=append",
        "--comment=wattsched: work=1s",
        "--job-name=renew-me",
        "-o",
        f"{script}.%j.out",
        env={"MY_MARK": "mark-42"},
        arguments=("arg-1",),
    )
    try:
        client.set_gres(job, f"gpu:{two_g}:1", box.node)
        client.set_gres(job, f"gpu:{one_g}:1", box.node)
        client.release(job)
        time.sleep(4.0)
        # Slurm's own behaviour: the 1g is free, but the job waits for the 2g it no longer asks for.
        seen = client.job(job)
        assert seen is not None and seen.state is JobState.PENDING and seen.gres == f"gpu:{one_g}:1"
        client.hold(job)
        copy = client.renew(job, f"wattsched: renewal of job {job}")
        renewed = client.job(copy)
        assert renewed is not None and renewed.state is JobState.PENDING and renewed.held
        assert renewed.gres == "" and renewed.name == "renew-me" and renewed.comment == "wattsched: work=1s"
        assert renewed.admin_comment == f"wattsched: renewal of job {job}"
        wait_for(lambda: client.job(job).state is JobState.CANCELLED, 10, "the original to be cancelled")  # type: ignore[union-attr]
        client.set_gres(copy, f"gpu:{one_g}:1", box.node)
        client.release(copy)
        wait_for(lambda: client.job(copy).state is JobState.COMPLETED, 30, "the copy to run")  # type: ignore[union-attr]
        assert client.job(busy).state is JobState.RUNNING  # type: ignore[union-attr] - the 2g still busy
    finally:
        for i in (busy, job):
            client.cancel(i)
    # The copy ran the same script with the submission environment, on the 1g, into the original's output.
    lines = Path(f"{script}.{job}.out").read_text().splitlines()
    assert lines == [f"start mark-42 arg-1 {uuid_of[one_g]} {job}", "done"]  # told the first job's id
