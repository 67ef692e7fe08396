"""Energy of a block or a command against the fake's counter (84.426 W on the H200 snapshot)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import wattsched
from wattsched.energy import EnergyMeter, run_measured
from wattsched.energy.command import CommandNotRunError
from wattsched.errors import ConfigError
from wattsched.hardware.gpu import GpuError
from wattsched.hardware.gpu.fake import FakeBackend

IDLE_W = 84.426


class Clock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def changed(source: Path, folder: Path, **changes: object) -> Path:
    facts = json.loads(source.read_text())
    facts.update(changes)
    path = folder / "changed.json"
    path.write_text(json.dumps(facts))
    return path


def test_counter_energy_of_a_block(h200: Path) -> None:
    clock = Clock()
    fake = FakeBackend(h200, clock=clock)
    meter = EnergyMeter(fake, interval_s=3600.0, clock=clock)  # no sample from the thread: the clock is ours
    with meter:
        clock.now_s += 4.0
        fake.set_power_w(0, 400.0)
        clock.now_s += 6.0
    result = meter.result
    assert result is not None
    assert result.energy_j == pytest.approx(IDLE_W * 4 + 400 * 6)
    assert result.time_s == 10.0 and result.avg_power_w == pytest.approx((IDLE_W * 4 + 2400) / 10)
    assert result.max_power_w == 400.0  # sampled at the start (84.4 W) and at the end (400 W)
    assert result.gpus[0].energy_source == "counter" and result.notes == ()


def test_sampled_energy_without_a_counter(h200: Path, tmp_path: Path) -> None:
    clock = Clock()
    fake = FakeBackend(changed(h200, tmp_path, energy_counter_mj_start=None, fake_power_w=200.0), clock=clock)
    meter = EnergyMeter(fake, interval_s=3600.0, clock=clock)
    with meter:
        clock.now_s += 5.0
    result = meter.result
    assert result is not None and result.gpus[0].energy_source == "sampled"
    assert result.energy_j == pytest.approx(1000.0)  # trapezoid of 200 W over 5 s
    assert "no NVML energy counter on GPU(s) 0" in result.notes[0]


def test_mig_mode_note_and_bad_index(h200: Path, tmp_path: Path) -> None:
    fake = FakeBackend(changed(h200, tmp_path, mig_mode_current_pending=[1, 1]))
    with EnergyMeter(fake) as meter:
        pass
    assert meter.result is not None and any("whole GPU" in note for note in meter.result.notes)
    with pytest.raises(GpuError, match="no GPU with index 1"):
        EnergyMeter(fake, gpus=[1])


def test_top_level_measure_with_a_backend_string(h200: Path) -> None:
    with wattsched.measure(f"fake:{h200}", interval_s=0.01) as meter:
        time.sleep(0.2)
    result = meter.result
    assert result is not None and result.time_s >= 0.2
    assert result.avg_power_w == pytest.approx(IDLE_W, rel=1e-3)
    assert result.gpus[0].samples >= 3


def test_sleep_2_against_the_fake_counter(h200: Path) -> None:
    fake = FakeBackend(h200)
    status, result = run_measured(["sleep", "2"], EnergyMeter(fake))
    assert status == 0
    assert 2.0 <= result.time_s < 3.0
    # The energy is the counter difference, which advances at 84.426 W: energy = P * t.
    assert result.energy_j == pytest.approx(IDLE_W * result.time_s, rel=1e-4)
    assert result.to_dict().keys() >= {"energy_j", "time_s", "avg_power_w", "max_power_w", "gpus"}


def test_exit_status_and_missing_commands(h200: Path, tmp_path: Path) -> None:
    fake = FakeBackend(h200)
    assert run_measured(["sh", "-c", "exit 7"], EnergyMeter(fake))[0] == 7
    assert run_measured(["sh", "-c", "kill -TERM $$"], EnergyMeter(fake))[0] == 128 + signal.SIGTERM
    with pytest.raises(CommandNotRunError) as missing:
        run_measured(["wattsched-no-such-command"], EnergyMeter(fake))
    assert missing.value.exit_status == 127
    with pytest.raises(CommandNotRunError) as not_executable:
        run_measured([str(tmp_path)], EnergyMeter(fake))
    assert not_executable.value.exit_status == 126
    with pytest.raises(ConfigError, match="no command"):
        run_measured([], EnergyMeter(fake))


CHILD = """
import signal, sys, time
received = []
signal.signal(signal.SIGINT, lambda *_: received.append(1))
print("ready", flush=True)
deadline = time.monotonic() + 10
while not received and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.3)  # a second, duplicated SIGINT would arrive in this window
sys.exit(40 + len(received))
"""


def test_sigint_to_wattsched_reaches_the_command_once(h200: Path, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "wattsched.cli", "measure", "--backend", f"fake:{h200}", "-o", str(out), "--",
         sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGINT)  # to wattsched only, as `kill -INT <pid>` would
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 41, stderr  # the child saw exactly one SIGINT; its status passed through
    summary = json.loads(out.read_text())
    assert summary["exit_status"] == 41 and summary["energy_j"] > 0
    assert "Traceback" not in stderr
