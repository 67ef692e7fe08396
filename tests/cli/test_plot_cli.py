"""`wattsched plot` (sweep directories and run files) and `wattsched mig run --timeline-out`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.viz.timeline import TIMELINE_COLUMNS, power_series, read_timeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))
from viz_fixtures import make_sweep_dir

RUN = [
    "mig",
    "run",
    "--config",
    "3",
    "--policy",
    "edf-ss-restricted",
    "--rate",
    "0.5",
    "--hours",
    "2",
    "--seed",
    "4",
]


def test_sweep_plots_default_to_three_metrics_in_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_sweep_dir(tmp_path / "sweep")
    assert main(["plot", str(folder)]) == 0
    written = capsys.readouterr().out.split()
    names = ["sweep_et.png", "sweep_energy.png", "sweep_tardiness.png"]
    assert written == [str(folder / "figures" / name) for name in names]
    assert all((folder / "figures" / name).read_bytes().startswith(b"\x89PNG") for name in names)


def test_formats_metrics_and_out_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_sweep_dir(tmp_path / "sweep")
    out = tmp_path / "figs"
    argv = [
        "plot",
        str(folder),
        "--out",
        str(out),
        "--format",
        "svg",
        "pdf",
        "--metric",
        "preemptions",
        "--format",
        "png",
    ]
    assert main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "sweep_preemptions.pdf",
        "sweep_preemptions.png",
        "sweep_preemptions.svg",
    ]
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(argv) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first  # same input, same bytes
    capsys.readouterr()


def test_timeline_out_matches_the_run_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "day.parquet"
    assert main([*RUN, "--json", "--timeline-out", str(path)]) == 0
    result = json.loads(capsys.readouterr().out)
    timeline = read_timeline(path)
    assert tuple(timeline.columns) == (*TIMELINE_COLUMNS, "job_kind")
    assert set(timeline.loc[timeline["kind"] == "run", "job_kind"]) <= {"inference", "training"}
    assert timeline["end_s"].max() == pytest.approx(result["end_s"])
    assert power_series(timeline)["energy_j"].iloc[-1] == pytest.approx(result["energy_j"], rel=1e-12)
    assert main(["plot", str(path), "--format", "png", "svg"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "day.parquet",
        "day_gantt.png",
        "day_gantt.svg",
        "day_power.png",
        "day_power.svg",
    ]


def test_timeline_out_with_jobs_out_in_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--timeline-out", str(tmp_path / "t.csv"), "--jobs-out", str(tmp_path / "j.csv")]) == 0
    capsys.readouterr()
    timeline = read_timeline(tmp_path / "t.csv")
    runs = timeline[timeline["kind"] == "run"]
    jobs = (tmp_path / "j.csv").read_text().splitlines()
    assert runs["job_id"].nunique() == len(jobs) - 1  # every job ran; header excluded
    assert set(runs["configuration"]) == {"3"} and set(runs["compute"]) <= {1, 2, 4}


def test_a_run_on_the_h200_plots_with_its_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "h200.csv"
    argv = [
        "mig",
        "run",
        "--gpu",
        "h200-141gb",
        "--config",
        "3",
        "--policy",
        "edf-fs",
        "--rate",
        "0.5",
        "--hours",
        "2",
        "--seed",
        "1",
        "--json",
        "--timeline-out",
        str(path),
    ]
    assert main(argv) == 0
    energy_j = json.loads(capsys.readouterr().out)["energy_j"]
    from wattsched.hardware.catalogue import load_gpu

    series = power_series(read_timeline(path), load_gpu("h200-141gb"))
    assert series["energy_j"].iloc[-1] == pytest.approx(energy_j, rel=1e-12)  # per job kind, as simulated
    assert main(["plot", str(path), "--gpu", "h200-141gb"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h200.csv", "h200_gantt.png", "h200_power.png"]
