"""`wattsched import`: every format through one command, the same traces as the format's own command, and
jobs of several GPUs kept and refused by the one-GPU commands with their count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_slurm_import import LOG as SACCT_LOG

from wattsched.cli import main
from wattsched.cli.trace_import import FORMATS
from wattsched.workload.adapters import ADAPTERS
from wattsched.workload.traces import read_trace

OPERATOR_LOG = """\
submit_time,start_time,end_time,num_gpus,due
2024-03-01T08:00:00Z,2024-03-01T08:00:00Z,2024-03-01T08:30:00Z,1,2024-03-01T10:00:00Z
2024-03-01T08:10:00Z,2024-03-01T08:12:00Z,2024-03-01T09:12:00Z,4,
2024-03-01T08:20:00Z,2024-03-01T08:20:00Z,2024-03-01T08:25:00Z,2,2024-03-01T09:00:00Z
"""
MAP = [
    "--map",
    "submit=submit_time",
    "--map",
    "start=start_time",
    "--map",
    "end=end_time",
    "--map",
    "gpus=num_gpus",
    "--map",
    "deadline=due",
]


def assert_one_line_error(capsys: pytest.CaptureFixture[str], code: int, *pieces: str) -> None:
    """Exit 2, nothing on stdout, one stderr line ``wattsched: error: ...`` holding every piece."""
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("wattsched: error: ") and err.count("\n") == 1, err
    for piece in pieces:
        assert piece in err, (piece, err)


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, dict)
    return data


def test_formats_are_the_adapter_registry() -> None:
    assert list(FORMATS) == ADAPTERS.available()


def test_an_operator_log_keeps_its_gangs_and_one_gpu_commands_refuse_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "jobs.csv"
    log.write_text(OPERATOR_LOG, encoding="utf-8")
    trace, cluster = tmp_path / "trace.csv", tmp_path / "cluster.json"
    report = _json(
        capsys,
        [
            "import",
            "--format",
            "csv",
            "--input",
            str(log),
            *MAP,
            "-o",
            str(trace),
            "--cluster-out",
            str(cluster),
            "--gpu",
            "h100-80gb",
            "--json",
        ],
    )
    assert report["rows_kept"] == 3 and report["multi_gpu_jobs"] == {"2": 1, "4": 1}
    jobs = read_trace(trace)
    assert [j.gpus for j in jobs] == [1, 4, 2]
    assert [j.arrival_s for j in jobs] == [28_800.0, 29_400.0, 30_000.0]
    assert jobs[0].deadline_s == 36_000.0 and jobs[2].deadline_s == 32_400.0  # given: + 2 h, + 40 min
    servers = json.loads(cluster.read_text(encoding="utf-8"))["servers"]
    assert servers == [{"name": "server-0000", "gpu": "h100-80gb", "gpus": 4, "model": "job log"}]

    code = main(["mig", "run", "--config", "3", "--policy", "edf-ss", "--trace", str(trace)])
    assert_one_line_error(
        capsys,
        code,
        "2 of 3 jobs need more than one GPU",
        "1 need 2 GPUs, 1 need 4 GPUs",
        "mig run simulates one GPU",
        "cluster run",
        "column 'gpus'",
    )

    code = main(["mig", "day", "--partitioner", "day-night", "--trace", str(trace)])
    assert_one_line_error(capsys, code, "2 of 3 jobs need more than one GPU", "mig day simulates one GPU")
    # The cluster it ran on runs it: the 4-GPU job waits for all four GPUs, each gang counted once.
    run = _json(
        capsys,
        [
            "cluster",
            "run",
            "--cluster",
            str(cluster),
            "--trace",
            str(trace),
            "--placement",
            "first-fit",
            "--partitioner",
            "static",
            "--config",
            "no-mig",
            "--policy",
            "edf-fs",
            "--json",
        ],
    )
    assert run["jobs"] == 3 and run["gpus"] == 4
    code = main(
        [
            "cluster",
            "run",
            "--servers",
            "2",
            "--gpus-per-server",
            "2",
            "--trace",
            str(trace),
            "--placement",
            "first-fit",
            "--partitioner",
            "static",
            "--policy",
            "edf-fs",
        ]
    )
    assert_one_line_error(
        capsys, code, "1 of 3 jobs need more GPUs than a server of the cluster has (2)", "1 need 4 GPUs"
    )

    folded = tmp_path / "folded.csv"
    assert (
        main(
            ["import", "--format", "csv", "--input", str(log), *MAP, "-o", str(folded), "--multi-gpu", "fold"]
        )
        == 0
    )
    capsys.readouterr()
    assert [j.duration_for_size(7) for j in read_trace(folded)] == [1_800.0, 4 * 3_600.0, 2 * 300.0]
    run = _json(
        capsys, ["mig", "run", "--config", "3", "--policy", "edf-ss", "--trace", str(folded), "--json"]
    )
    assert run["jobs"] == 3


def test_a_one_gpu_log_runs_alike_on_mig_run_and_a_one_gpu_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "jobs.csv"
    log.write_text("submit,duration,kind\n0,600,training\n30,120,inference\n60,900,\n", encoding="utf-8")
    trace = tmp_path / "trace.parquet"
    assert main(["import", "--format", "csv", "--input", str(log), "-o", str(trace)]) == 0
    err = capsys.readouterr().err
    assert "wrote 3 jobs" in err and "need more than one GPU" not in err
    mig = _json(
        capsys,
        ["mig", "run", "--config", "3", "--policy", "edf-ss-restricted", "--trace", str(trace), "--json"],
    )
    cluster = _json(
        capsys,
        [
            "cluster",
            "run",
            "--servers",
            "1",
            "--gpus-per-server",
            "1",
            "--trace",
            str(trace),
            "--placement",
            "first-fit",
            "--partitioner",
            "static",
            "--config",
            "3",
            "--policy",
            "edf-ss-restricted",
            "--json",
        ],
    )
    for key in ("energy_j", "avg_tardiness_s", "jobs", "late_jobs", "end_s"):
        assert cluster[key] == mig[key], key
    assert mig["jobs"] == 3


def test_sacct_and_philly_give_the_traces_of_their_own_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(SACCT_LOG, encoding="utf-8")
    mine, theirs = tmp_path / "mine.csv", tmp_path / "theirs.csv"
    assert main(["slurm", "import", "--sacct", str(sacct), "-o", str(theirs)]) == 0
    assert (
        main(["import", "--format", "sacct", "--input", str(sacct), "-o", str(mine), "--multi-gpu", "skip"])
        == 0
    )
    assert mine.read_bytes() == theirs.read_bytes()
    # Kept by default: job 103 ran on 2 whole GPUs for an hour.
    assert main(["import", "--format", "sacct", "--input", str(sacct), "-o", str(mine)]) == 0
    gangs = [j for j in read_trace(mine) if j.gpus > 1]
    assert [(j.job_id, j.gpus, j.duration_for_size(7)) for j in gangs] == [("103", 2, 3_600.0)]

    philly = tmp_path / "philly.csv"
    philly.write_text(
        "timestamp,duration,num_gpus\n2017-10-03 00:00:10,100,1\n2017-10-03 00:01:00,50,4\n", encoding="utf-8"
    )
    assert main(["mig", "import", "--format", "philly", "--input", str(philly), "-o", str(theirs)]) == 0
    assert (
        main(["import", "--format", "philly", "--input", str(philly), "-o", str(mine), "--multi-gpu", "fold"])
        == 0
    )
    assert mine.read_bytes() == theirs.read_bytes()
    assert main(["import", "--format", "philly", "--input", str(philly), "-o", str(mine)]) == 0
    assert [(j.gpus, j.duration_for_size(7)) for j in read_trace(mine)] == [(1, 100.0), (4, 50.0)]
    capsys.readouterr()


@pytest.mark.parametrize(
    ("extra", "log", "pieces"),
    [
        ([], "start,end\n0,10\n", ("column 'submit'", "no column for 'submit'", "start, end")),
        (["--map", "submit=when"], "submit,duration\n0,10\n", ("no column 'when'",)),
        (["--map", "submit"], "submit,duration\n0,10\n", ("--map expects KEY=COLUMN",)),
        (
            [],
            "submit,duration\n2024-03-01T00:00:00,10\n2024-02-30T00:00:00,10\n",
            ("row 2", "column 'submit'", "'2024-02-30T00:00:00'"),
        ),
        (["--timezone", "Europe/Berlin"], "submit,duration\n0,10\n", ("--timezone is for --format sacct",)),
        (["--servers", "2"], "submit,duration\n0,10\n", ("describe the cluster of --cluster-out",)),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], log: str, pieces: tuple[str, ...]
) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(log, encoding="utf-8")
    code = main(["import", "--format", "csv", "--input", str(path), "-o", str(tmp_path / "t.csv"), *extra])
    assert_one_line_error(capsys, code, *pieces)
    assert not (tmp_path / "t.csv").exists()


def test_map_is_only_for_csv_and_gangs_must_fit_the_cluster_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    philly = tmp_path / "philly.csv"
    philly.write_text("timestamp,duration,num_gpus\n2017-10-03 00:00:10,100,8\n", encoding="utf-8")
    out = str(tmp_path / "t.csv")
    code = main(["import", "--format", "philly", "--input", str(philly), "-o", out, "--map", "submit=x"])
    assert_one_line_error(capsys, code, "--map is for --format csv, not philly")
    code = main(
        [
            "import",
            "--format",
            "philly",
            "--input",
            str(philly),
            "-o",
            out,
            "--cluster-out",
            str(tmp_path / "c.json"),
            "--gpus-per-server",
            "4",
        ]
    )
    assert_one_line_error(
        capsys, code, "1 jobs need more GPUs than a server of the cluster has (4", "column 'gpus'"
    )


def test_a_duration_column_in_hours_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("submit,hours\n0,2\n100,5\n", encoding="utf-8")
    assert (
        main(
            [
                "import",
                "--format",
                "csv",
                "--input",
                str(path),
                "--map",
                "duration=hours",
                "-o",
                str(tmp_path / "t.csv"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "wattsched: warning:" in err and "column 'hours' looks like hours" in err
