"""slurmrestd on a Slurm 26.05 sandbox (``rest=True``: a unix socket, JSON web tokens): the REST client sees
the same jobs and nodes as the command-line client, changes jobs as the commands do, and ``stop`` leaves no
slurmrestd and no socket behind."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator

import pytest

from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import JobState

from .conftest import require_release, require_slurm, sandbox_directory

RELEASE = "26.05"


@pytest.fixture(scope="module")
def box() -> Iterator[sandbox_module.Sandbox]:
    require_slurm()
    release = require_release(RELEASE)
    directory = sandbox_directory("wattsched-rest-")
    try:
        yield sandbox_module.start(directory, gpus=[("a100-40gb", 3)], slurm=release, rest=True)
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def _submit(box: sandbox_module.Sandbox, *flags: str) -> int:
    out = box.client().run("sbatch", "--parsable", *flags, "--wrap", "sleep 60")
    return int(out.strip().split(";")[0])


def test_the_same_jobs_and_nodes_as_the_commands_and_a_round_trip_of_changes(
    box: sandbox_module.Sandbox, wait_for: Callable[..., None]
) -> None:
    commands, through_rest = box.client(), box.rest_client()
    assert box.rest_socket is not None and box.rest_socket.is_socket() and through_rest.ping()
    kind = box.gres_types[-1]
    running = _submit(box, f"--partition={box.unmanaged_partition}", f"--gres=gpu:{kind}:1")
    held = _submit(box, f"--partition={box.partition}")  # held at submission (job_submit.lua)
    wait_for(lambda: (j := commands.job(running)) is not None and j.state is JobState.RUNNING, 30, "a run")
    assert through_rest.jobs() == commands.jobs()
    assert through_rest.job(running) == commands.job(running)
    job = through_rest.job(running)
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
    wait_for(lambda: (j := commands.job(held)) is not None and j.state is JobState.RUNNING, 30, "the release")
    through_rest.cancel(held)
    through_rest.cancel(running)
    wait_for(lambda: all(j.state.finished for j in commands.jobs()), 30, "the cancels")


def test_stop_leaves_no_slurmrestd_and_no_socket(box: sandbox_module.Sandbox) -> None:
    socket = box.rest_socket
    assert socket is not None
    pid = int((box.directory / "run" / "slurmrestd.pid").read_text())
    assert sandbox_module.stop(box.directory)
    assert not socket.exists() and not (box.directory / "run" / "slurmrestd.pid").exists()
    assert not sandbox_module._alive(pid)  # ended (a zombie of this process at most)
