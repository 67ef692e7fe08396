"""A sandbox of another Slurm release than the host's (24.11 and 26.05, from their Debian root filesystems):
its daemons and commands are that release's, a job gets its fake MIG device, the client reads that release's
JSON, and ``stop`` leaves no process and no mount behind."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattsched.slurm import roots
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.gres_update import visible_uuids

from .conftest import require_release, require_slurm, sandbox_directory

NEWER = ["24.11", "26.05"]


@pytest.fixture(scope="module", params=NEWER)
def box(request: pytest.FixtureRequest) -> Iterator[sandbox_module.Sandbox]:
    require_slurm()
    release = require_release(request.param)
    directory = sandbox_directory("wattsched-release-")
    try:
        yield sandbox_module.start(directory, gpus=[("a100-40gb", 3)], slurm=release)
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def _run(box: sandbox_module.Sandbox, *args: str) -> str:
    env = dict(os.environ, **box.env)
    return subprocess.run(
        list(args), env=env, cwd=box.directory, check=True, capture_output=True, text=True
    ).stdout


def test_the_daemons_and_the_commands_are_the_releases(box: sandbox_module.Sandbox) -> None:
    assert box.slurm in NEWER and box.bin_dir == box.directory / "bin"
    assert roots.release_of(_run(box, "scontrol", "--version")) == box.slurm
    assert roots.release_of(_run(box, "sinfo", "--version")) == box.slurm
    nodes = box.client().nodes()
    assert [n.name for n in nodes] == [box.node] and nodes[0].available
    assert sorted(e.type for e in nodes[0].gres) == sorted(set(box.gres_types))


def test_a_job_runs_on_its_fake_mig_device_and_is_read_back_once_ended(
    box: sandbox_module.Sandbox, wait_for
) -> None:  # type: ignore[no-untyped-def]
    output = box.directory / "job.out"
    kind = box.gres_types[-1]
    job_id = int(
        _run(
            box,
            "sbatch",
            "--parsable",
            f"--partition={box.unmanaged_partition}",
            f"--gres=gpu:{kind}:1",
            f"--output={output}",
            "--wrap",
            'echo "gpus=$CUDA_VISIBLE_DEVICES"; sleep 2',
        ).split(";")[0]
    )
    client = box.client()
    uuid = box.gpu_uuids[box.gres_types.index(kind)]
    wait_for(
        lambda: (j := client.job(job_id)) is not None and j.state.value == "RUNNING", 30, "the job to run"
    )
    running = client.job(job_id)
    assert running is not None and running.gpu_uuids == (uuid,)  # its device, from the release's JSON
    wait_for(lambda: (j := client.job(job_id)) is not None and j.state.finished, 30, "the job to end")
    job = client.job(job_id)
    assert job is not None and job.state.value == "COMPLETED"  # an ended job is still listed
    # 22.05 and 24.11 hand the job the MIG UUID, 26.05 the device's index: either names this device.
    printed = output.read_text().strip().removeprefix("gpus=")
    assert visible_uuids({"CUDA_VISIBLE_DEVICES": printed, "SLURM_CONF": str(box.conf_path)}) == [uuid]
    assert printed == uuid or box.slurm == "26.05"


def test_stop_leaves_no_process_and_no_mount(tmp_path: Path) -> None:
    require_slurm()
    release = require_release(NEWER[0])
    directory = sandbox_directory("wattsched-release-stop-")
    try:
        sandbox_module.start(directory, gpus=[("a100-40gb", 1)], slurm=release)
        holder = roots.holder_pid(directory)
        assert holder is not None
        assert sandbox_module.stop(directory)
        assert roots.holder_pid(directory) is None and not (directory / "bin").exists()
        mark = f"SLURM_CONF={directory}/etc/slurm.conf".encode()
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if mark in (entry / "environ").read_bytes().split(b"\0"):
                        left.append(entry.name)
                except OSError:
                    continue
        assert left == []
        assert str(directory) not in Path("/proc/mounts").read_text()
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
