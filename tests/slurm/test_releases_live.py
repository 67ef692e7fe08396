"""A sandbox of another Slurm release than the host's (24.11 and 26.05, from their Debian root filesystems):
its daemons and commands are that release's, a job gets its fake MIG device, the client reads that release's
JSON, and ``stop`` leaves no process and no mount behind. On 26.05 the sandbox runs slurmrestd too
(``rest=True``): the REST client sees the same jobs and nodes as the commands and changes jobs as they do
(one sandbox per release for all of it: the CI's time is short)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattsched.slurm import roots
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import JobState, SlurmError
from wattsched.slurm.gres_update import visible_uuids

from .conftest import require_release, require_slurm, sandbox_directory

NEWER = ["24.11", "26.05"]
#: The release whose root has slurmrestd.
REST = "26.05"


@pytest.fixture(scope="module", params=NEWER)
def box(request: pytest.FixtureRequest) -> Iterator[sandbox_module.Sandbox]:
    require_slurm()
    release = require_release(request.param)
    directory = sandbox_directory("wattsched-release-")
    try:
        yield sandbox_module.start(directory, gpus=[("a100-40gb", 3)], slurm=release, rest=release == REST)
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


def test_the_host_python_runs_the_sandbox_programs_inside_the_root(
    box: sandbox_module.Sandbox, wait_for
) -> None:  # type: ignore[no-untyped-def]
    """slurmctld runs the power programs inside the root, with the host's interpreter: the libraries of its
    ``ctypes`` and ``sqlite3`` must be there (a minimal root lacked libffi and libsqlite3, and every suspend
    and resume failed). A job in the root imports what those programs import."""
    output = box.directory / "imports.out"
    program = f"{sys.executable} -c 'import ctypes, sqlite3, wattsched.slurm.sandbox; print(\"imported\")'"
    job_id = int(
        _run(
            box,
            "sbatch",
            "--parsable",
            f"--partition={box.unmanaged_partition}",
            f"--output={output}",
            "--wrap",
            program,
        ).split(";")[0]
    )
    client = box.client()
    wait_for(lambda: (j := client.job(job_id)) is not None and j.state.finished, 30, "the job to end")
    assert output.read_text().strip() == "imported", output.read_text()


def _submit(box: sandbox_module.Sandbox, *flags: str) -> int:
    return int(_run(box, "sbatch", "--parsable", *flags, "--wrap", "sleep 60").split(";")[0])


def test_through_slurmrestd_the_same_jobs_and_nodes_and_a_round_trip_of_changes(
    box: sandbox_module.Sandbox, wait_for
) -> None:  # type: ignore[no-untyped-def]
    if box.slurm != REST:
        pytest.skip(f"slurmrestd is in the {REST} root only")
    commands, through_rest = box.client(), box.rest_client()
    assert box.rest_socket is not None and box.rest_socket.is_socket() and through_rest.ping()
    kind = box.gres_types[-1]
    running = _submit(box, f"--partition={box.unmanaged_partition}", f"--gres=gpu:{kind}:1", "--requeue")
    held = _submit(box, f"--partition={box.partition}")  # held at submission (job_submit.lua)
    wait_for(lambda: (j := commands.job(running)) is not None and j.state is JobState.RUNNING, 30, "a run")
    assert through_rest.jobs() == commands.jobs()
    job = through_rest.job(running)
    assert job == commands.job(running)
    assert job is not None and job.gpu_uuids == (box.gpu_uuids[box.gres_types.index(kind)],)
    assert through_rest.nodes() == commands.nodes()
    assert through_rest.job(987654) is None

    through_rest.release(held)
    through_rest.hold_with_reason(held, "waits for a slice")
    through_rest.set_gres(held, f"gpu:{box.gres_types[0]}:1", node=box.node)
    job = commands.job(held)
    assert job is not None and job.held and job.reason == "JobHeldAdmin"
    assert job.admin_comment == "wattsched: waits for a slice"
    assert job.gres == f"gpu:{box.gres_types[0]}:1" and job.required_nodes == box.node
    through_rest.release(held)
    released = commands.job(held)
    assert released is not None and not released.held
    # requeue-hold of a running batch job: pending and held again, its restart counted
    through_rest.requeue_hold(running)
    wait_for(
        lambda: (j := commands.job(running)) is not None and j.state is JobState.PENDING, 30, "the requeue"
    )
    requeued = commands.job(running)
    assert requeued is not None and requeued.held and requeued.restart_count == 1
    with pytest.raises(SlurmError, match="Invalid job id"):
        through_rest.requeue_hold(987654)
    for job_id in (held, running):
        through_rest.cancel(job_id)
    wait_for(lambda: all(j.state.finished for j in commands.jobs()), 30, "the cancels")


def test_stop_leaves_no_process_no_socket_and_no_mount(tmp_path: Path) -> None:
    """On 26.05 with slurmrestd: the namespace and the wrappers work alike for every release."""
    require_slurm()
    release = require_release(REST)
    directory = sandbox_directory("wattsched-release-stop-")
    try:
        box = sandbox_module.start(directory, gpus=[("a100-40gb", 1)], slurm=release, rest=True)
        holder = roots.holder_pid(directory)
        assert holder is not None and box.rest_socket is not None
        rest_pid = int((directory / "run" / "slurmrestd.pid").read_text())
        assert sandbox_module.stop(directory)
        assert roots.holder_pid(directory) is None and not (directory / "bin").exists()
        assert not box.rest_socket.exists() and not sandbox_module._alive(rest_pid)
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
