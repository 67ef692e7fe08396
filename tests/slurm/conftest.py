"""The ``slurm_sandbox`` fixture: one real single-host Slurm (munge, slurmctld, slurmd, fake MIG GPUs) for
the whole test session. It skips when not root or when Slurm is not installed, except under ``CI=true``,
where a missing Slurm fails: a CI job that forgot to install it must not pass by skipping."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import SlurmClient
from wattsched.slurm.controller import Controller
from wattsched.workload.job import Job

_BINARIES = ("slurmctld", "slurmd", "munged", "mungekey", "sbatch", "squeue", "sinfo", "scontrol", "scancel")


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the Slurm sandbox needs root"
    missing = [b for b in _BINARIES if not (shutil.which(b) or shutil.which(b, path="/usr/sbin:/sbin"))]
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} not found; apt-get install slurmctld slurmd "
            "slurm-client munge)"
        )
    return None


def require_slurm() -> None:
    """Skip (fail under ``CI=true``) unless a Slurm sandbox can run here."""
    reason = _why_not()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm tests must run in CI: {reason}")
        pytest.skip(reason)


#: The Slurm releases the parametrised live tests run on: the host's (``None``) and the newer ones a root
#: filesystem holds (:mod:`wattsched.slurm.roots`).
RELEASES = [
    pytest.param(None, id="host"),
    pytest.param("24.11", id="slurm-24.11"),
    pytest.param("26.05", id="slurm-26.05"),
]


def require_release(release: str | None) -> str | None:
    """``release`` when a sandbox of it can run here (its root cached, or debootstrap to make it); skip
    otherwise (fail under ``CI=true``: every release must run in CI)."""
    if release is None:
        return None
    from wattsched.slurm import roots

    ready = (roots.root_path(release) / ".wattsched-root").is_file()
    if not ready and not (shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin")):
        reason = f"Slurm {release} needs its root filesystem, and debootstrap is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm tests must run in CI on every release: {reason}")
        pytest.skip(reason)
    return release


def sandbox_directory(prefix: str) -> Path:
    """A fresh folder under /tmp: munged wants every folder above its socket open to all, which pytest's
    private temporary folder is not."""
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    directory.chmod(0o755)
    return directory


@pytest.fixture(scope="session")
def slurm_sandbox() -> Iterator[sandbox_module.Sandbox]:
    require_slurm()
    directory = sandbox_directory("wattsched-slurm-")
    try:
        box = sandbox_module.start(directory)
        yield box
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def wait_for() -> Callable[..., None]:
    """``wait_for(predicate, timeout_s, what)``: poll every 0.1 s, fail naming ``what`` on timeout."""

    def wait(predicate: Callable[[], object], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")

    return wait


class Killed(BaseException):
    """Stands for a SIGKILL: nothing after it runs."""


def kill_in_a_release(monkeypatch: pytest.MonkeyPatch, slurm: object, store: object, when: str) -> None:
    """Make the next release stop as a SIGKILL would: ``"after the journal"`` (before Slurm gets it) or
    ``"after the send"`` (before the journal marks it done)."""

    def killed(*_: object, **__: object) -> None:
        raise Killed

    if when == "after the journal":
        monkeypatch.setattr(slurm, "release", killed)
    else:
        monkeypatch.setattr(store, "finish_action", killed)


def run_trace(
    controller: Controller,
    client: SlurmClient,
    trace: list[tuple[float, Job]],
    scripts: dict[str, Path],
    limit_s: float,
) -> tuple[dict[int, int], dict[int, float]]:
    """Submit each job of ``trace`` (``(offset s, job)``, its deadline relative to its arrival) at its offset,
    with its script and an annotation of its work, deadline, kind, scaling and GPUs (when more than one),
    between the controller's passes (every ``poll_s``) until every job is done; Slurm's id of each trace job
    and when the controller first saw each Slurm job (epoch s). Fails after ``limit_s``."""
    ids: dict[int, int] = {}
    seen_s: dict[int, float] = {}
    begin = time.time()
    pending = list(trace)
    while time.time() - begin < limit_s:
        tick = time.time()
        while pending and pending[0][0] <= tick - begin:
            _, job = pending.pop(0)
            note = (
                f"wattsched: work={job.dur_full_s}s deadline=+{job.deadline_s}s kind={job.kind.value} "
                f"scaling={job.scaling.value}" + (f" gpus={job.gpus}" if job.gpus > 1 else "")
            )
            script = scripts[job.job_id]
            ids[int(job.job_id)] = client.submit(script, comment=note, output=f"{script}.out")
        report = controller.run_once()
        for job_id in report.arrived:
            seen_s[job_id] = report.time_s
        if (
            not pending
            and len(seen_s) == len(trace)
            and all(r.phase == "done" for r in controller.store.jobs())
        ):
            return ids, seen_s
        time.sleep(max(0.0, controller.config.poll_s - (time.time() - tick)))
    raise AssertionError(f"the day did not finish in {limit_s:.0f} s: {controller.store.jobs()}")
