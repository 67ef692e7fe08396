"""GPU clocks with real Slurm daemons (the sandbox, on a fake H200 state file): a real ``sbatch`` job with
slack gets the GPU's SM clock locked at the level the data-centre simulator's rule gives, the clock is
unlocked once the GPU is idle, and again when SIGTERM stops the controller. No real GPU is touched."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wattsched.cluster.clocks import clock_schedule
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm import sandbox as sandbox_module

_REASON = "needs root and Debian's slurmctld, slurmd, slurm-client and munge"


@pytest.fixture(scope="module")
def live() -> Iterator[sandbox_module.Sandbox]:
    if not (os.geteuid() == 0 and all(shutil.which(b) for b in ("slurmctld", "slurmd", "sbatch", "munged"))):
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm tests must run in CI: {_REASON}")
        pytest.skip(_REASON)
    directory = Path(tempfile.mkdtemp(prefix="wattsched-clocks-", dir="/tmp"))  # munged: not pytest's
    directory.chmod(0o755)
    box = sandbox_module.start(directory, gpus=[("h200-141gb", 3)])
    try:
        yield box
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def _wait(predicate: Callable[[], object], timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}; controller log:\n{tail}")


def test_a_real_job_gets_the_chosen_clock_and_idle_and_stop_unlock_it(
    live: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    schedule = clock_schedule(load_gpu("h200-141gb"))
    assert schedule is not None
    optimum = (schedule.sm_mhz[schedule.optimum_level], 3201)  # a job with ample slack: the optimum
    config = sandbox_module.write_controller_config(live, tmp_path / "wattsched.toml")
    config.write_text(
        config.read_text().replace("[slurm]\n", "[slurm]\npoll_s = 0.5\n") + "[clocks]\nenabled = true\n"
    )
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsleep 4\n")
    script.chmod(0o755)
    env = dict(os.environ, **live.env)
    log_path = tmp_path / "controller.log"
    fake = FakeGpuState(live.fake_gpu_state)

    def sbatch() -> int:
        out = subprocess.run(
            [
                "sbatch",
                "--parsable",
                "--comment=wattsched: work=100s deadline=+10000s",
                "-o",
                "/dev/null",
                str(script),
            ],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return int(out.strip().split(";")[0])

    with open(log_path, "ab") as log:
        controller = subprocess.Popen(
            [sys.executable, "-m", "wattsched", "slurm", "controller", "--config", str(config)],
            stdout=log,
            stderr=log,
            env=env,
        )
    try:
        client = live.client()
        first = sbatch()
        _wait(
            lambda: fake.fact(0).locked_clocks_mhz == optimum, 60, f"the clock locked at {optimum}", log_path
        )
        _wait(lambda: client.job(first).state.value == "COMPLETED", 60, "the job to end", log_path)  # type: ignore[union-attr]
        _wait(lambda: fake.fact(0).locked_clocks_mhz is None, 30, "the idle GPU's clock unlocked", log_path)
        second = sbatch()
        _wait(lambda: fake.fact(0).locked_clocks_mhz == optimum, 60, "the clock locked again", log_path)
        controller.send_signal(signal.SIGTERM)
        assert controller.wait(30) == 0
        assert fake.fact(0).locked_clocks_mhz is None  # unlocked on the way out
        assert client.job(second) is not None
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait(10)
