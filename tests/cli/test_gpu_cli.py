"""`wattsched gpu info|record|snapshot|calibrate`, `measure`, `dvfs apply|reset` on the H200 snapshot."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.hardware.gpu import BACKEND_ENV
from wattsched.hardware.gpu.fake import FakeBackend


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def fake(path: Path) -> str:
    return f"fake:{path}"


def variant(source: Path, folder: Path, **changes: object) -> Path:
    facts = json.loads(source.read_text())
    facts.update(changes)
    path = folder / "variant.json"
    path.write_text(json.dumps(facts))
    return path


def test_info_json_has_the_contract_keys(h200: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpu", "info", "--backend", fake(h200), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info.keys() >= {
        "name",
        "mig_mode",
        "profiles",
        "power_limit_w",
        "supported_clocks_mhz",
        "catalogue",
    }
    assert (info["name"], info["mig_mode"], info["power_limit_w"], info["driver"]) == (
        "NVIDIA H200",
        False,
        700.0,
        "580.159.04",
    )
    assert info["catalogue_id"] == "h200-141gb" and len(info["profiles"]) == 7
    assert info["supported_clocks_mhz"]["3201"][:2] == [1980, 1965]
    first = info["profiles"][0]
    assert first == {
        "name": "1g.18gb",
        "nvml_id": 19,
        "compute": 1,
        "memory_slots": 1,
        "sms": 16,
        "memory_mb": 16384,
        "placements": [[s, 1] for s in range(7)],
        "media": False,
    }


def test_info_text_and_environment_backend(
    h200: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BACKEND_ENV, fake(h200))
    assert main(["gpu", "info"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "MIG mode          off" in out and "3g.71gb" in out


def test_record_replays(h200: Path, tmp_path: Path) -> None:
    out = tmp_path / "me.json"
    assert main(["gpu", "record", "--backend", fake(h200), "-o", str(out)]) == 0
    replayed = FakeBackend(out)
    assert replayed.identity(0).name == "NVIDIA H200"
    assert replayed.profiles(0) == FakeBackend(h200).profiles(0)


def test_snapshot_writes_a_catalogue_entry(h200: Path, repo_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "h200.toml"
    assert main(["gpu", "snapshot", "--backend", fake(h200), "-o", str(out)]) == 0
    entry = tomllib.loads(out.read_text())
    assert entry["gpu"]["catalogue"] == "h200-141gb" and entry["power"]["estimated"] is True


def test_calibrate_then_snapshot_with_the_curve(h200: Path, tmp_path: Path) -> None:
    curve = tmp_path / "curve.csv"
    assert main(["gpu", "calibrate", "--backend", fake(h200), "--quick", "-o", str(curve)]) == 0
    rows = list(csv.DictReader(curve.open()))
    assert len(rows) == 16 and {r["curve"] for r in rows} == {"compute", "memory"}
    assert float(rows[7]["power_w"]) == pytest.approx(366.3917122401065)  # fma_7of7 of the recording
    assert {r["load"] for r in rows} == {"replay"} and {r["energy_source"] for r in rows} == {"counter"}
    entry_path = tmp_path / "h200.toml"
    assert (
        main(["gpu", "snapshot", "--backend", fake(h200), "--power-curve", str(curve), "-o", str(entry_path)])
        == 0
    )
    power = tomllib.loads(entry_path.read_text())["power"]
    assert power["estimated"] is False and sorted(power["curves"]) == ["compute", "memory"]
    assert power["curves"]["compute"]["busy_w"][-1] == pytest.approx(366.392)


def test_measure_json_and_passthrough(h200: Path, capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    status = main(
        [
            "measure",
            "--backend",
            fake(h200),
            "--json",
            "-o",
            str(out),
            "--",
            "sh",
            "-c",
            "echo from-the-command; exit 5",
        ]
    )
    assert status == 5
    lines = capfd.readouterr().out.splitlines()  # the command writes to file descriptor 1 itself
    assert lines[0] == "from-the-command"
    summary = json.loads(lines[-1])
    assert summary == json.loads(out.read_text())
    assert summary.keys() >= {"energy_j", "time_s", "avg_power_w", "max_power_w", "gpus", "exit_status"}
    assert summary["exit_status"] == 5 and summary["gpus"][0]["energy_source"] == "counter"


def test_measure_text_report_goes_to_stderr(
    h200: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = variant(h200, tmp_path, mig_mode_current_pending=[1, 1], energy_counter_mj_start=None)
    assert main(["measure", "--backend", fake(path), "--interval-s", "0.01", "--", "true"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert "wattsched measure:" in err and "sampled power" in err and "whole GPU" in err


def test_measure_missing_command_is_127(h200: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["measure", "--backend", fake(h200), "--", "wattsched-no-such-command", "x"]) == 127
    out, err = capsys.readouterr()
    assert out == "" and err == "wattsched: error: command not found: wattsched-no-such-command\n"


def test_dvfs_apply_dry_run_chooses_supported_clocks(h200: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dvfs", "apply", "--backend", fake(h200), "--gpu-clock-mhz", "1401", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # 1401 MHz is not supported; the next one up is 1410 (15 MHz steps), memory the default 3201 MHz.
    assert (summary["sm_mhz"], summary["mem_mhz"], summary["applied"]) == (1410, 3201, False)
    assert (
        main(["dvfs", "apply", "--backend", fake(h200), "--f-core", "0.7", "--f-mem", "0.6", "--json"]) == 0
    )
    summary = json.loads(capsys.readouterr().out)
    # f_core 0.7 x 1980 = 1386 MHz -> 1395; f_mem 0.6 x 3201 = 1920.6 MHz -> 2201 (the lowest memory clock).
    assert (summary["sm_mhz"], summary["mem_mhz"]) == (1395, 2201)
    assert summary["f_core"] == pytest.approx(1395 / 1980) and not summary["clamped"]
    assert main(["dvfs", "apply", "--backend", fake(h200), "--gpu-clock-mhz", "2500", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["clamped"] is True


def test_dvfs_apply_and_reset_as_root(h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = variant(h200, tmp_path, fake_root=True)
    assert main(["dvfs", "apply", "--backend", fake(root), "--gpu-clock-mhz", "1500", "--apply"]) == 0
    assert "locked SM 1500 MHz, memory 3201 MHz" in capsys.readouterr().out
    assert main(["dvfs", "reset", "--backend", fake(root), "--apply", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"index": 0, "applied": True}
