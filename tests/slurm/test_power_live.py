"""Slurm itself calls `wattsched slurm suspend` (written by `power-settings -o`) on an idle node of a real
single-host Slurm: the call is journaled and Slurm shows the node powered down. Resuming the only node of a
single host is not tested: that node is the one running Slurm (only a real cluster can show it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.state import StateStore

from .conftest import require_slurm, sandbox_directory

REPO = Path(__file__).resolve().parents[2]


def test_slurm_calls_the_suspend_program_on_an_idle_node(wait_for: Callable[..., None]) -> None:
    require_slurm()
    directory = sandbox_directory("wattsched-power-")
    node = socket.gethostname().split(".")[0]
    config = directory / "power.toml"
    config.write_text(f"""
[slurm]
partition = "mig"
state = "{directory / "power.db"}"
[[nodes]]
name = "{node}"
gpus = ["a100-40gb"]
configuration = 3
backend = "fake:{directory / "unused.json"}"
""")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    written = subprocess.run(
        [
            sys.executable,
            "-m",
            "wattsched",
            "slurm",
            "power-settings",
            "--config",
            str(config),
            "-o",
            str(directory / "programs"),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert written.returncode == 0, written.stderr
    programs = [line for line in written.stdout.splitlines() if line.endswith(".sh")]
    assert [p.split("=")[0] for p in programs] == ["SuspendProgram", "ResumeProgram"]
    try:
        box = sandbox_module.start(
            directory, extra_conf=["SuspendTime=3", "SuspendTimeout=5", "ResumeTimeout=30", *programs]
        )

        def journaled() -> bool:
            if not (directory / "power.db").exists():
                return False
            store = StateStore(directory / "power.db")
            try:
                return any(a["node"] == node and a["status"] == "recorded" for a in store.power_actions())
            finally:
                store.close()

        wait_for(journaled, 60, "Slurm to call the SuspendProgram")

        def state() -> str:
            shown = subprocess.run(
                ["sinfo", "-h", "-n", node, "-o", "%T"],
                capture_output=True,
                text=True,
                env={**os.environ, **box.env},
                check=False,
            )
            return shown.stdout.strip()

        # "idle%": powering down (for SuspendTimeout), then "idle~": powered down
        wait_for(lambda: state().endswith("~"), 30, "Slurm to show the node powered down")
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
