"""`wattsched dvfs generate|solve|run|fit` end to end through ``wattsched.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from wattsched.cli import main

RUN_KEYS = {
    "energy_total_j",
    "energy_run_j",
    "energy_idle_j",
    "energy_overhead_j",
    "tasks",
    "deadline_misses",
    "pairs_used",
    "turn_ons",
}


def test_generate_then_solve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks.csv"
    assert (
        main(["dvfs", "generate", "--mode", "offline", "--util", "0.1", "--pairs", "64", "-o", str(tasks)])
        == 0
    )
    out = tmp_path / "solved.parquet"
    assert main(["dvfs", "solve", "--tasks", str(tasks), "-o", str(out)]) == 0
    frame = pd.read_parquet(out)
    assert len(frame) == 6
    for column in ("v", "f_core", "f_mem", "time_s", "power_w", "energy_j", "feasible"):
        assert column in frame.columns
    assert frame["feasible"].all()
    assert (frame["time_s"] <= frame["deadline_s"] - frame["arrival_s"] + 1e-6).all()
    assert (frame["energy_j"] - frame["time_s"] * frame["power_w"]).abs().max() < 1e-6


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_run_json(capsys: pytest.CaptureFixture[str], mode: str) -> None:
    code = main(
        [
            "dvfs",
            "run",
            "--mode",
            mode,
            "--util",
            "0.3",
            "--pairs",
            "64",
            "--pairs-per-server",
            "4",
            "--algo",
            "edl",
            "--theta",
            "0.7",
            "--dvfs",
            "on",
            "--seed",
            "3",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= RUN_KEYS
    parts = data["energy_run_j"] + data["energy_idle_j"] + data["energy_overhead_j"]
    assert data["energy_total_j"] == pytest.approx(parts)
    assert data["deadline_misses"] == 0


def test_run_from_task_file_matches_generated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "day.csv"
    main(
        [
            "dvfs",
            "generate",
            "--mode",
            "online",
            "--util",
            "0.2",
            "--pairs",
            "32",
            "--seed",
            "5",
            "-o",
            str(tasks),
        ]
    )
    capsys.readouterr()
    common = ["dvfs", "run", "--mode", "online", "--pairs", "32", "--algo", "bin", "--dvfs", "off", "--json"]
    main([*common, "--tasks", str(tasks)])
    from_file = json.loads(capsys.readouterr().out)
    main([*common, "--util", "0.2", "--seed", "5"])
    generated = json.loads(capsys.readouterr().out)
    assert from_file["energy_total_j"] == pytest.approx(generated["energy_total_j"], rel=1e-9)


def test_user_errors_print_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "day.csv"
    main(["dvfs", "generate", "--mode", "online", "--util", "0.2", "--pairs", "32", "-o", str(tasks)])
    capsys.readouterr()
    cases = [
        ["dvfs", "run", "--mode", "offline", "--tasks", str(tasks)],  # online arrivals in offline mode
        ["dvfs", "run", "--util", "1", "--theta", "0"],
        ["dvfs", "run", "--util", "-1"],
        ["dvfs", "run", "--util", "1", "--pairs-per-server", "0"],
        ["dvfs", "solve", "--tasks", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "o.csv")],
        ["dvfs", "solve", "--tasks", str(tasks), "-o", str(tmp_path / "o.json")],
        ["dvfs", "run", "--util", "1", "--gpu", "a100"],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("wattsched: error:") and "\n" not in err, err
    main(["dvfs", "run", "--mode", "offline", "--tasks", str(tasks)])
    assert "day.csv, row" in capsys.readouterr().err


def test_fit(shared_data: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = shared_data / "dvfs-measurements" / "gtx1080ti.csv"
    assert main(["dvfs", "fit", "--data", str(data), "--json", "-o", str(tmp_path / "fit.csv")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["applications"]) == 30
    assert 0 < result["mean_saving_narrow"] < result["mean_saving_wide"]
    assert len(pd.read_csv(tmp_path / "fit.csv")) == 30
