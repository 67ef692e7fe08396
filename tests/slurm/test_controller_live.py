"""The controller on a real Slurm (the sandbox: munge, slurmctld and slurmd on this host with fake MIG GPUs):
real ``sbatch`` jobs held at submission, released on the slice type the policy chose, their energy written
into their AdminComment; a SIGKILL of the controller and a restart lose no job and start none twice."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.mig import simulate
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.gres_update import visible_uuids
from wattsched.slurm.jobs import engine_job
from wattsched.workload.job import JobKind, Scaling

from .conftest import RELEASES, require_release

_REASON = "needs root and Debian's slurmctld, slurmd, slurm-client and munge"


def _available() -> bool:
    return os.geteuid() == 0 and all(shutil.which(b) for b in ("slurmctld", "slurmd", "sbatch", "munged"))


@pytest.fixture(scope="module", params=RELEASES)
def live(request: pytest.FixtureRequest) -> Iterator[sandbox_module.Sandbox]:
    if not _available():
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm tests must run in CI: {_REASON}")
        pytest.skip(_REASON)
    release = require_release(request.param)
    # munged wants every folder above its socket open to all: not pytest's private temporary folder.
    directory = Path(tempfile.mkdtemp(prefix="wattsched-live-", dir="/tmp"))
    directory.chmod(0o755)
    # On 26.05 the controller drives Slurm through slurmrestd (its config: api = "rest"), as a site with
    # slurmrestd would; the commands on the other releases.
    box = sandbox_module.start(directory, gpus=[("a100-40gb", 3)], slurm=release, rest=release == "26.05")
    try:
        yield box
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def _controller(box: sandbox_module.Sandbox, config: Path) -> subprocess.Popen[bytes]:
    log = open(box.directory / "controller.log", "ab")  # noqa: SIM115 - the child keeps it
    return subprocess.Popen(
        [sys.executable, "-m", "wattsched", "slurm", "controller", "--config", str(config)],
        stdout=log,
        stderr=log,
        env=dict(os.environ, **box.env),
    )


def _sbatch(box: sandbox_module.Sandbox, script: Path, comment: str) -> int:
    out = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--open-mode=append",
            f"--comment={comment}",
            "-o",
            str(script) + ".%j.out",
            str(script),
        ],
        env=dict(os.environ, **box.env),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out.strip().split(";")[0])


def _jobs(box: sandbox_module.Sandbox, config: Path) -> dict[int, dict[str, object]]:
    out = subprocess.run(
        [sys.executable, "-m", "wattsched", "slurm", "jobs", "--json", "--config", str(config)],
        env=dict(os.environ, **box.env),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {row["job_id"]: row for row in json.loads(out)}


def _wait(predicate, timeout_s: float, what: str, box: sandbox_module.Sandbox) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    log = (box.directory / "controller.log").read_text(errors="replace")[-3000:]
    raise AssertionError(f"timed out waiting for {what}; controller log:\n{log}")


def test_real_jobs_run_on_the_chosen_slices_and_survive_a_controller_kill(
    live: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    config = sandbox_module.write_controller_config(
        live, tmp_path / "wattsched.toml", {"policy": "edf-ss-restricted"}
    )
    config.write_text(config.read_text().replace("[slurm]\n", "[slurm]\npoll_s = 0.5\n"))
    assert ('api = "rest"' in config.read_text()) == (live.rest_socket is not None)
    script = tmp_path / "job.sh"
    script.write_text(
        '#!/bin/sh\necho "start $SLURM_JOB_ID $CUDA_VISIBLE_DEVICES $SLURM_RESTART_COUNT"\n'
        "sleep 6\necho done\n"
    )
    script.chmod(0o755)
    # Four jobs, three slices (4g, 2g, 1g of configuration 3): one waits for a slice to free. Each runs 6 s,
    # longer than the controller's restart after its kill takes on a loaded host (with 3 s, a job that ran
    # wholly while it was down under load 6 had no energy comment yet: seen once in CI's dry run).
    ids = [
        _sbatch(live, script, f"wattsched: work={w}s deadline=+{d}s kind=training")
        for w, d in [(2, 600), (2, 300), (2, 900), (2, 1200)]
    ]
    client = live.client()
    assert all(client.job(i).held for i in ids)  # type: ignore[union-attr]  # the lua plugin holds them
    controller = _controller(live, config)
    try:
        _wait(
            lambda: sum(1 for i in ids if client.job(i).state.value == "RUNNING") >= 2,  # type: ignore[union-attr]
            60,
            "the first jobs to run",
            live,
        )
        through = "slurmrestd" if live.rest_socket is not None else "its commands"
        assert f"driving Slurm through {through}" in (live.directory / "controller.log").read_text()
        controller.send_signal(signal.SIGKILL)  # a crash mid-run
        controller.wait(10)
        controller = _controller(live, config)
        _wait(
            lambda: all(client.job(i).state.value == "COMPLETED" for i in ids),  # type: ignore[union-attr]
            120,
            "every job to complete",
            live,
        )
        _wait(
            lambda: all(row["state"] == "done" for row in _jobs(live, config).values()),
            30,
            "the controller to see every job end",
            live,
        )
    finally:
        controller.send_signal(signal.SIGTERM)
        assert controller.wait(20) == 0  # SIGTERM stops it cleanly
    rows = _jobs(live, config)
    uuids = set(live.gpu_uuids)
    labels = {i.uuid: i.label for i in FakeGpuState(live.fake_gpu_state).instances(0)}
    for job_id in ids:
        out = Path(f"{script}.{job_id}.out").read_text().split("\n")
        starts = [line for line in out if line.startswith("start")]
        assert len(starts) == 1, f"job {job_id} started {len(starts)} times"  # none started twice
        _, _, visible, restarts = starts[0].split(" ")
        # 22.05 and 24.11 give the job its MIG UUID, 26.05 the device's index: either names one device.
        (uuid,) = visible_uuids({"CUDA_VISIBLE_DEVICES": visible, "SLURM_CONF": str(live.conf_path)})
        assert uuid in uuids and restarts in ("", "0")  # Slurm sets SLURM_RESTART_COUNT after a requeue only
        row = rows[job_id]
        assert row["state"] == "done" and row["slice"] == labels[uuid]  # it ran on the slice recorded
        assert float(row["energy_j"]) > 0  # type: ignore[arg-type]
        # The comment Slurm keeps is the energy at the controller's last pass before the job ended.
        comment = str(client.job(job_id).admin_comment)  # type: ignore[union-attr]
        assert 0 < float(comment.removeprefix("wattsched_energy_j=")) <= float(row["energy_j"])  # type: ignore[arg-type]
    # The slice type of each job is the one the simulator gives the same jobs (all present at the first pass).
    specs = [(2, 600), (2, 300), (2, 900), (2, 1200)]
    jobs = [
        engine_job(str(i), 0.0, d, JobKind.TRAINING, Scaling.LINEAR, w)
        for i, (w, d) in zip(ids, specs, strict=True)
    ]
    expected = simulate(jobs, 3, "edf-ss-restricted", record_jobs=True)
    assert expected.records is not None
    first = {int(r.job_id): r for r in expected.records if r.start_s == 0.0}
    profile = {s.start: s.label for s in load_gpu("a100-40gb").configuration(3).slices}
    assert len(first) == 3
    for job_id, record in first.items():
        assert rows[job_id]["slice"] == profile[record.slices[0][3]]


def test_a_preemptible_job_checkpoints_is_requeued_and_resumes(tmp_path: Path) -> None:
    """One 7g slice: a long preemptible job runs; an urgent job arrives that would be late behind it. The
    controller signals the long one (it checkpoints), requeues it held after the grace time, runs the
    urgent one, then gives the slice back to the long one, which resumes from its checkpoint."""
    if not _available():
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm tests must run in CI: {_REASON}")
        pytest.skip(_REASON)
    directory = Path(tempfile.mkdtemp(prefix="wattsched-preempt-", dir="/tmp"))
    directory.chmod(0o755)
    box = sandbox_module.start(directory, gpus=[("a100-40gb", 1)], cred_expire_s=5)
    try:
        config = sandbox_module.write_controller_config(
            box, tmp_path / "wattsched.toml", {"grace_s": 2, "signal": "USR1"}
        )
        config.write_text(config.read_text().replace("[slurm]\n", "[slurm]\npoll_s = 0.5\n"))
        job = [sys.executable, "-m", "wattsched.slurm.sandbox_job", "--state", str(box.fake_gpu_state)]
        long_script, urgent_script = tmp_path / "long.sh", tmp_path / "urgent.sh"
        # exec: the signal goes to the job's program (sh would die of SIGUSR1).
        long_script.write_text("#!/bin/sh\nexec " + " ".join(job) + " --work 12s\n")
        urgent_script.write_text("#!/bin/sh\nexec " + " ".join(job) + " --work 2s\n")
        for script in (long_script, urgent_script):
            script.chmod(0o755)
        client = box.client()
        long_id = _sbatch(box, long_script, "wattsched: work=12s deadline=+600s preemptible=yes")
        controller = _controller(box, config)
        try:
            _wait(
                lambda: (
                    "start" in Path(f"{long_script}.{long_id}.out").read_text()
                    if Path(f"{long_script}.{long_id}.out").exists()
                    else False
                ),
                60,
                "the long job to run",
                box,
            )
            time.sleep(3.0)
            urgent_id = _sbatch(box, urgent_script, "wattsched: work=2s deadline=+8s")
            _wait(
                lambda: all(
                    client.job(i).state.value == "COMPLETED"  # type: ignore[union-attr]
                    for i in (long_id, urgent_id)
                ),
                120,
                "both jobs to complete",
                box,
            )
            _wait(
                lambda: all(row["state"] == "done" for row in _jobs(box, config).values()),
                30,
                "the controller to see both end",
                box,
            )
        finally:
            controller.send_signal(signal.SIGTERM)
            controller.wait(20)
        rows = _jobs(box, config)
        assert rows[long_id]["preemptions"] == 1 and rows[urgent_id]["preemptions"] == 0
        out = Path(f"{long_script}.{long_id}.out").read_text()
        assert "checkpoint" in out and "signal=SIGUSR1" in out
        starts = [line for line in out.splitlines() if line.startswith("start")]
        assert [line.split("restart=")[1].split()[0] for line in starts] == ["0", "1"]
        resumed = float(starts[1].split("done=")[1])
        assert 0.1 < resumed < 1.0  # it went on from its checkpoint, not from the start
        assert float(rows[urgent_id]["end_s"]) < float(rows[long_id]["end_s"])  # type: ignore[arg-type]
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
