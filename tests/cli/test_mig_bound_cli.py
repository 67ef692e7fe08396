"""`wattsched mig bound` and the bound beside `mig day --json`: the JSON keys, the numbers against the library
and against the day's own run, the text, and bad input in one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.mig.bound import lower_bound
from wattsched.workload.job import Job, JobKind, Scaling
from wattsched.workload.traces import write_trace


def _trace(tmp_path: Path) -> Path:
    jobs = [
        Job("a", 0.0, 500.0, JobKind.TRAINING, Scaling.MEASURED, (400, 250, 200, 180, 150), 145),
        Job("b", 30.0, 400.0, JobKind.INFERENCE, Scaling.MEASURED, (300, 200, 160, 150, 120), 118),
        Job("c", 60.0, 90.0, JobKind.INFERENCE, Scaling.MEASURED, (300, 200, 160, 150, 120), 118),
    ]
    path = tmp_path / "day.csv"
    write_trace(jobs, path)
    return path


def test_bound_of_a_trace_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace(tmp_path)
    assert main(["mig", "bound", "--trace", str(path), "--horizon-s", "600", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    from wattsched.workload.traces import read_trace

    expected = lower_bound(read_trace(path), horizon_s=600.0)
    assert out["bound_energy_j"] == pytest.approx(expected.energy_j)
    # job c is due 30 s after it arrives and needs 118 s: 88 s late at least, 88/3 s on average
    assert out["bound_tardiness_s"] == pytest.approx(88.0 / 3, rel=2e-6)
    assert out["bound_on_time_energy_j"] is None
    assert out["method"].startswith("time-indexed LP") and out["resolution_s"] is None  # auto: events
    assert out["jobs"] == 3 and out["gpu"] == "a100-40gb"


def test_bound_text_and_a_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace(tmp_path)
    assert main(["mig", "bound", "--trace", str(path), "--resolution-s", "120", "--configs", "1,2"]) == 0
    text = capsys.readouterr().out
    assert "for any schedule that finishes every job" in text and "no schedule is on time" in text
    assert "a 120 s grid" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--resolution-s", "-5"], "expected seconds > 0"),
        (["--configs", "1,,2"], "--configs: an empty id"),
        (["--configs", "42"], "unknown configuration '42'"),
    ],
)
def test_bad_bound_options_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    try:
        code = main(["mig", "bound", "--trace", str(_trace(tmp_path)), *argv])
    except SystemExit as stop:  # argparse's own refusal of a bad value
        code = int(stop.code or 0)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_mig_day_reports_its_gap_to_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "day", "--partitioner", "day-night", "--profile", "alibaba-day", "--hours", "2",
                 "--seed", "4", "--json"]) == 0  # fmt: skip
    day = json.loads(capsys.readouterr().out)
    assert 0 < day["bound_energy_j"] <= day["energy_j"]
    assert day["gap_to_bound"] == pytest.approx(day["energy_j"] / day["bound_energy_j"] - 1.0)
