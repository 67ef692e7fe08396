"""Final energies in a real Slurm's accounting: the sandbox with its accounting database (a private MariaDB
and slurmdbd), the controller on it, a few short jobs; once they have ended, ``sacct`` shows each one's
AdminComment with the controller's exact energy (its state row's), ``wattsched import --format sacct`` of
that log reads the same energies back, and ``stop`` leaves nothing running. On the host's Slurm and on the
newer releases' (their slurmdbd and MariaDB from their root filesystems); from 25.11 on ``sacct`` also shows
each energy as the job's energy TRES (``ConsumedEnergyRaw``, ``energy=`` in ``AllocTRES``), which the import
reads first."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm import sandbox_accounting
from wattsched.slurm.accounting import energy_comment, energy_tres_writable

from .conftest import RELEASES, require_release, require_slurm, sandbox_directory


@pytest.fixture(scope="module", params=RELEASES)
def accounted(request: pytest.FixtureRequest) -> Iterator[sandbox_module.Sandbox]:
    require_slurm()
    release = require_release(request.param)
    missing = sandbox_accounting.missing_binaries() if release is None else []  # a root has its own
    if missing:
        reason = (
            f"the sandbox's accounting needs {', '.join(missing)} (apt-get install slurmdbd mariadb-server)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm tests must run in CI: {reason}")
        pytest.skip(reason)
    directory = sandbox_directory("wattsched-acct-")
    try:
        yield sandbox_module.start(directory, gpus=[("a100-40gb", 3)], accounting=True, slurm=release)
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def _run(box: sandbox_module.Sandbox, *args: str) -> str:
    return subprocess.run(
        list(args), env=dict(os.environ, **box.env), check=True, capture_output=True, text=True
    ).stdout


def _wattsched(box: sandbox_module.Sandbox, *args: str) -> object:
    return json.loads(_run(box, sys.executable, "-m", "wattsched", "slurm", *args, "--json"))


def test_sacct_shows_each_ended_jobs_exact_energy_from_the_controller(
    accounted: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    box = accounted
    assert box.accounting and box.dbd_port is not None
    config = sandbox_module.write_controller_config(box, tmp_path / "wattsched.toml", poll_s=0.5)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsleep 2\n")
    script.chmod(0o755)
    ids = [
        int(
            _run(
                box,
                "sbatch",
                "--parsable",
                f"--comment=wattsched: work=2s deadline=+{deadline}s kind=training",
                "-o",
                "/dev/null",
                str(script),
            ).split(";")[0]
        )
        for deadline in (300, 600, 900)
    ]
    log = (tmp_path / "controller.log").open("ab")
    controller = subprocess.Popen(
        [sys.executable, "-m", "wattsched", "slurm", "controller", "--config", str(config)],
        stdout=log,
        stderr=log,
        env=dict(os.environ, **box.env),
    )
    try:
        deadline_s = time.monotonic() + 45.0
        status: dict[str, object] = {}
        while time.monotonic() < deadline_s:
            shown = subprocess.run(
                [sys.executable, "-m", "wattsched", "slurm", "status", "--config", str(config), "--json"],
                env=dict(os.environ, **box.env),
                capture_output=True,
                text=True,
            )
            if shown.returncode == 0:  # 2 until the controller's first pass has made its state file
                status = json.loads(shown.stdout)
                if status["accounting"] == {"slurm": "slurmdbd", "written": len(ids), "waiting": 0}:
                    break
            time.sleep(0.5)
        else:
            text = (tmp_path / "controller.log").read_text(errors="replace")[-3000:]
            raise AssertionError(f"the final energies did not land: {status.get('accounting')}\n{text}")
    finally:
        controller.send_signal(signal.SIGTERM)
        assert controller.wait(20) == 0
        log.close()
    rows = {row["job_id"]: row for row in _wattsched(box, "jobs", "--config", str(config))}  # type: ignore[attr-defined]
    out = _run(
        box,
        "sacct",
        "--noheader",
        "--parsable2",
        "--allocations",
        f"--jobs={','.join(map(str, ids))}",
        "--format=JobID,State,ConsumedEnergyRaw,AdminComment",
    )
    shown = {int(line.split("|")[0]): line.split("|", 3)[1:] for line in out.splitlines() if line}
    tres = energy_tres_writable(box.slurm)
    expected: dict[str, float] = {}
    for job_id in ids:
        row = rows[job_id]
        assert row["state"] == "done" and float(row["energy_j"]) > 0
        energy_mj = round(float(row["energy_j"]) * 1000)
        energy_j = (energy_mj + 500) // 1000
        consumed = str(energy_j) if tres else shown[job_id][1]  # before 25.11: what Slurm measured (0)
        assert shown[job_id] == ["COMPLETED", consumed, energy_comment(energy_mj)], shown
        expected[str(job_id)] = float(energy_j) if tres else float(row["energy_j"])
    # The loop closed: the sacct log, imported, gives back each job's energy as the controller measured it.
    log_file = tmp_path / "sacct.txt"
    log_file.write_text(
        _run(
            box,
            "sacct",
            "--parsable2",
            "--allocations",
            f"--jobs={','.join(map(str, ids))}",
            "--format=JobID,User,Partition,Submit,Start,End,Elapsed,Timelimit,State,AllocTRES,Comment,"
            "AdminComment,NodeList",
        )
    )
    imported = json.loads(
        _run(
            box,
            sys.executable,
            "-m",
            "wattsched",
            "import",
            "--format",
            "sacct",
            "--input",
            str(log_file),
            "-o",
            str(tmp_path / "trace.csv"),
            "--json",
        )
    )
    assert imported["rows_kept"] == len(ids), log_file.read_text()
    assert imported["measured_energy_j"] == expected


def test_stop_ends_slurmdbd_and_mariadb_too(accounted: sandbox_module.Sandbox) -> None:
    """Last in this file: it stops the module's sandbox (the fixture's stop then finds nothing running)."""
    run = accounted.directory / "run"
    pids = {name: int((run / f"{name}.pid").read_text().split()[0]) for name in sandbox_module.ALL_DAEMONS}
    assert set(pids) == {"munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"}
    assert (accounted.directory / "etc" / "slurmdbd.conf").stat().st_mode & 0o777 == 0o600
    assert sandbox_module.stop(accounted.directory)
    assert not any(
        Path(f"/proc/{pid}/cmdline").exists() and Path(f"/proc/{pid}/cmdline").read_bytes()
        for pid in pids.values()
    )
    assert not sandbox_module.stop(accounted.directory)
