"""`wattsched mig import` end to end: import a Philly day, run it, and one-line errors with status 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from wattsched.cli import main
from wattsched.workload.traces import read_trace


def test_import_philly_day_then_run(
    repo_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "philly_day40.csv"
    status = main([
        "mig", "import", "--format", "philly", "--input", str(repo_data / "traces" / "philly.csv"),
        "-o", str(trace), "--day", "40", "--target-rate", "0.2", "--max-duration-s", "14400",
        "--target-load", "0.5", "--seed", "1", "--json",
    ])  # fmt: skip
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rows_read"] == 82_247 and report["rows_kept"] == 288  # 0.2 jobs/min · 1440 min
    assert report["rows_read"] == report["rows_kept"] + sum(report["skipped"].values()) + sum(
        report["filtered"].values()
    )
    jobs = read_trace(trace)
    assert len(jobs) == 288
    assert sum(j.durations_s[4] for j in jobs) / 86_400 == pytest.approx(0.5)
    pytest.importorskip("wattsched.mig.simulator")
    status = main([
        "mig", "run", "--trace", str(trace), "--config", "3", "--policy", "edf-ss-restricted",
        "--horizon-s", "86400", "--json",
    ])  # fmt: skip
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert result["jobs"] == 288 and result["energy_j"] > 0 and result["end_s"] >= 86_400


def test_import_alibaba_with_measured_curves(
    repo_data: Path, unshipped: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "ali.parquet"
    status = main([
        "mig", "import", "--format", "alibaba-2023",
        "--input", str(unshipped("traces/openb_pod_list_default.csv")), "-o", str(trace),
        "--day", "130", "--scaling", "measured",
        "--speeds", str(repo_data / "mig-profiles" / "slice_speed.csv"),
    ])  # fmt: skip
    assert status == 0
    err = capsys.readouterr().err
    assert "rows read 8152" in err and "filtered (cpu_only): 1088" in err
    frame = pd.read_parquet(trace)
    assert set(frame["scaling"]) == {"measured"} and len(frame) > 100


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--scaling", "measured"], "--speeds"),
        (["--end-s", "100"], "--end-s needs --start-s"),
        (["--day", "1", "--target-rate", "1000"], "stretch"),
        (["--class-rule", "source"], "no job class"),
    ],
)
def test_user_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    source = tmp_path / "philly.csv"
    source.write_text("timestamp,duration,num_gpus\n2017-10-01 00:00:10,100,1\n2017-10-02 00:00:10,50,1\n")
    out = tmp_path / "out.csv"
    status = main(["mig", "import", "--format", "philly", "--input", str(source), "-o", str(out), *extra])
    err = capsys.readouterr().err.strip()
    assert status == 2 and message in err and "\n" not in err
    assert not out.exists()


def test_missing_column_names_file_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "pods.csv"
    source.write_text("name,num_gpu\np,1\n")
    status = main(
        ["mig", "import", "--format", "alibaba-2023", "--input", str(source), "-o", str(tmp_path / "o.csv")]
    )
    err = capsys.readouterr().err
    assert status == 2 and str(source) in err and "column 'gpu_milli'" in err


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["mig", "import", "--format", "borg", "--input", "x", "-o", str(tmp_path / "o.csv")])
    assert info.value.code == 2
