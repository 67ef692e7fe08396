"""scripts/device_check.sh's own logic, on the fake H200 with `sleep 2` in place of the GPU matmul."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # ~40 s: fifteen wattsched processes
def test_device_check_smoke_run_on_the_fake(repo_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "device"
    snapshot = repo_data / "hardware" / "h200" / "nvml_facts.json"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # the venv's wattsched first
    env = {**os.environ, "WATTSCHED_GPU_BACKEND": f"fake:{snapshot}", "WORKLOAD": "sleep 2", "PATH": path,
           "PYTHON": sys.executable}  # fmt: skip
    done = subprocess.run(["bash", str(REPO / "scripts" / "device_check.sh"), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    check = json.loads((out / "counter_check.json").read_text())
    assert all(check["checks"].values())
    # One counter for every process replaying the file: the outer reading encloses the measured 2 s.
    assert check["measured_energy_j"] <= check["outer_counter_difference_j"]
    assert check["measured_energy_j"] == pytest.approx(84.426 * check["time_s"], rel=1e-3)
    for name in (
        "info.json",
        "record.json",
        "snapshot.toml",
        "calibrate.csv",
        "snapshot_calibrated.toml",
        "plan_1_38.json",
        "plan_38_1.json",
        "mig-parted.yaml",
    ):
        assert (out / name).stat().st_size > 0, name
    assert "--apply" not in (REPO / "scripts" / "device_check.sh").read_text().replace("no --apply", "")
