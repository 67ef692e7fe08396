"""Hostile inputs to `wattsched plot`, `wattsched report` and `mig run --timeline-out`: one stderr line naming
what was wrong and where, exit status 2, no traceback, nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run_in, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))
from viz_fixtures import make_sweep_dir, sweep_runs

RUN_HEADER = "job_id,kind,start_s,end_s,configuration,slice_index,profile,slice_start,slice_size,compute"


def _run_file(tmp_path: Path, *rows: str) -> Path:
    return write(tmp_path / "run.csv", "\n".join([RUN_HEADER, *rows]) + "\n")


@pytest.mark.parametrize(
    ("rows", "pieces"),
    [
        (
            ["A,run,0,50,3,0,4g.20gb,0,4,4", "A,oops,0,50,3,0,4g.20gb,0,4,4"],
            ["row 2", "column 'kind'", "oops"],
        ),
        (["A,run,0,x,3,0,4g.20gb,0,4,4"], ["row 1", "column 'end_s'", "not a finite number"]),
        (["A,run,10,5,3,0,4g.20gb,0,4,4"], ["row 1", "column 'end_s'", "must be >= start_s"]),
        (["A,run,0,50,3,0,4g.20gb,0,4,4", "B,run,0,50,3,0,4g.20gb,0,4,4"], ["busy at t = 0 s", "overlap"]),
        (["A,run,0,50,99,0,4g.20gb,0,4,4"], ["unknown configuration '99'"]),
        ([], ["no rows"]),
    ],
)
def test_bad_run_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: list[str], pieces: list[str]
) -> None:
    path = _run_file(tmp_path, *rows)
    code = run_in(tmp_path, ["plot", str(path)])
    assert_one_line_error(capsys, code, *pieces)


def test_a_bad_job_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "run.csv", f"{RUN_HEADER},job_kind\nA,run,0,50,3,0,4g.20gb,0,4,4,gaming\n")
    code = run_in(tmp_path, ["plot", str(path)])
    assert_one_line_error(capsys, code, "row 1", "column 'job_kind'", "inference, training or empty")


def test_a_run_file_missing_a_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "run.csv", "job_id,start_s,end_s\nA,0,1\n")
    assert_one_line_error(capsys, run_in(tmp_path, ["plot", str(path)]), str(path), "missing column(s) kind")


def test_metric_on_a_run_file_and_unknown_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _run_file(tmp_path, "A,run,0,50,3,0,4g.20gb,0,4,4")
    assert_one_line_error(capsys, run_in(tmp_path, ["plot", str(path), "--metric", "et"]), "--metric")
    assert_one_line_error(capsys, run_in(tmp_path, ["plot", str(tmp_path / "absent")]), "no such file")
    assert_one_line_error(capsys, run_in(tmp_path, ["plot", str(path), "--format", "jpg"]), "jpg")
    assert_one_line_error(
        capsys, run_in(tmp_path, ["plot", str(path), "--out", str(path)]), "--out is not a directory"
    )


@pytest.mark.parametrize(
    ("damage", "pieces"),
    [
        (lambda f: (f / "runs.parquet").unlink(), ["runs.parquet"]),
        (
            lambda f: sweep_runs().drop(columns=["et"]).to_parquet(f / "runs.parquet"),
            ["missing column(s) et"],
        ),
        (
            lambda f: sweep_runs().assign(seed=["x"] * 12).to_parquet(f / "runs.parquet"),
            ["row 1", "column 'seed'"],
        ),
        (lambda f: write(f / "runs.parquet", b"garbage"), ["cannot parse parquet file"]),
    ],
)
def test_bad_sweep_directories(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage,  # type: ignore[no-untyped-def]
    pieces: list[str],
) -> None:
    folder = make_sweep_dir(tmp_path / "sweep")
    damage(folder)
    assert_one_line_error(capsys, run_in(folder, ["plot", str(folder)]), *pieces)
    assert_one_line_error(capsys, run_in(folder, ["report", str(folder)]), *pieces)


def test_a_metric_the_sweep_lacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_sweep_dir(tmp_path / "sweep")
    code = run_in(folder, ["plot", str(folder), "--metric", "repartitions"])
    assert_one_line_error(capsys, code, "repartitions", "available:")
    code = run_in(folder, ["plot", str(folder), "--gpu", "h200-141gb"])
    assert_one_line_error(capsys, code, "--gpu applies to run files")


def test_report_of_folders_that_are_not_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(capsys, run_in(tmp_path, ["report", str(tmp_path)]), "not a reproduce or sweep")
    file = write(tmp_path / "f.txt", "x")
    assert_one_line_error(capsys, run_in(tmp_path, ["report", str(file)]), "not a directory")
    write(tmp_path / "summary.json", "{broken")
    assert_one_line_error(
        capsys, run_in(tmp_path, ["report", str(tmp_path)]), "summary.json", "cannot read JSON"
    )


def test_timeline_out_with_a_bad_suffix_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "mig",
        "run",
        "--config",
        "3",
        "--policy",
        "edf-fs",
        "--rate",
        "0.5",
        "--hours",
        "1",
        "--timeline-out",
        str(tmp_path / "t.txt"),
    ]
    assert_one_line_error(capsys, run_in(tmp_path, argv), "t.txt", "unsupported file suffix")
