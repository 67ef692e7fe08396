"""`wattsched slurm import`: a sacct log to a trace and a cluster file that `cluster run` accepts; bad input
is one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.workload.traces import read_trace

HEADER = "JobID|User|Partition|Submit|Start|End|Elapsed|Timelimit|State|AllocTRES|Comment|NodeList"
LOG = (
    "\n".join(
        [
            HEADER,
            "100|alice|mig|2024-03-01T12:00:00|2024-03-01T12:01:00|2024-03-01T12:11:00|00:10:00|01:00:00|COMPLETED|"
            "billing=1,cpu=1,gres/gpu:a100_3g.20gb=1,gres/gpu=1,mem=1G,node=1||gpu01",
            "100.batch|||2024-03-01T12:00:00|2024-03-01T12:01:00|2024-03-01T12:11:00|00:10:00||COMPLETED|"
            "cpu=1,gres/gpu=1,mem=1G,node=1||gpu01",
            "101|bob|mig|2024-03-01T13:00:00|2024-03-01T13:00:00|2024-03-01T14:00:00|01:00:00|02:00:00|COMPLETED|"
            "cpu=1,gres/gpu=1,node=1|wattsched: deadline=+3h kind=inference work=30m|gpu02",
            "102|bob|mig|2024-03-01T13:30:00|Unknown|Unknown|00:00:00|02:00:00|PENDING|||None assigned",
            "103|bob|mig|2024-03-01T13:30:00|2024-03-01T13:31:00|2024-03-01T14:31:00|01:00:00|02:00:00|COMPLETED|"
            "cpu=2,gres/gpu=2,node=1||gpu02",
            "104|carol|mig|2024-03-01T14:00:00|2024-03-01T14:00:00|2024-03-01T14:20:00|00:20:00|UNLIMITED|COMPLETED|"
            "gres/gpu:a100_1g.5gb=1|wattsched: kind=fast|gpu01",
        ]
    )
    + "\n"
)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "sacct.txt"
    path.write_text(LOG, encoding="utf-8")
    return path


def test_import_then_run_on_the_cluster_it_writes(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, cluster = tmp_path / "trace.csv", tmp_path / "cluster.json"
    argv = ["slurm", "import", "--sacct", str(log), "-o", str(trace), "--cluster-out", str(cluster)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"sacct import: kept 2 of 6 rows (1 annotated) -> {trace}; skipped: bad_annotation 1; filtered: "
        f"job_step 1, multi_gpu 1, not_completed 1; horizon 86400 s; cluster: 2 servers, 2 GPUs -> "
        f"{cluster}\n"
    )
    jobs = read_trace(trace)
    assert [(j.job_id, j.arrival_s) for j in jobs] == [("100", 43_200.0), ("101", 46_800.0)]
    assert jobs[1].deadline_s == 46_800.0 + 3 * 3600.0
    data = json.loads(cluster.read_text(encoding="utf-8"))
    assert [(s["name"], s["gpus"], s["gpu"]) for s in data["servers"]] == [
        ("gpu01", 1, "a100-40gb"),
        ("gpu02", 1, "a100-40gb"),
    ]
    assert (
        main(
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
                "--policy",
                "edf-ss-restricted",
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["jobs"] == 2 and result["gpus"] == 2 and result["energy_j"] > 0


def test_json_report_and_options(log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, cluster = tmp_path / "trace.parquet", tmp_path / "c.json"
    assert (
        main(
            [
                "slurm",
                "import",
                "--sacct",
                str(log),
                "-o",
                str(trace),
                "--cluster-out",
                str(cluster),
                "--gpu",
                "h100-80gb",
                "--gpus-per-server",
                "4",
                "--multi-gpu",
                "fold",
                "--states",
                "completed,pending",
                "--timezone",
                "Europe/Berlin",
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["rows_read"] == 6 and report["rows_kept"] == 3 and report["annotated"] == 1
    assert report["filtered"] == {"job_step": 1, "no_gpu": 1}  # the pending job has no allocation yet
    assert report["nodes"]["gpus"] == 8 and report["output"] == str(trace)
    assert "+01:00" in report["origin"]
    assert len(read_trace(trace)) == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-o", "{tmp}/t.txt"], "t.txt"),
        (["--cluster-out", "{tmp}/c.toml"], "--cluster-out {tmp}/c.toml: expected a file ending in .json"),
        (["--cluster-out", "{tmp}/absent/c.json"], "cannot write: the folder does not exist"),
        (["--gpu", "a100-40gb"], "--gpu and --gpus-per-server describe the cluster of --cluster-out"),
        (["--timezone", "Mars/Olympus"], "--timezone: unknown time zone 'Mars/Olympus'"),
        (["--states", "COMPLETE"], "unknown job state 'COMPLETE' (did you mean 'COMPLETED'?)"),
        (["--start-s", "0", "--end-s", "0"], "end_s (0.0) must be after start_s (0.0)"),
        (["--end-s", "10"], "--end-s needs --start-s"),
        (["--cluster-out", "{tmp}/c.json", "--gpu", "a100-4"], "a100-4"),
        (["--sacct", "{tmp}/absent.txt"], "absent.txt: file not found"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["slurm", "import", "--sacct", str(log), "-o", str(tmp_path / "t.csv")]
    argv += [e.replace("{tmp}", str(tmp_path)) for e in extra]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("wattsched: error: ")
    assert message.replace("{tmp}", str(tmp_path)) in err
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seed", "-1"], "argument --seed: expected a non-negative integer, got -1"),
        (["--duration-scale", "2", "--target-load", "0.5"], "not allowed with argument --duration-scale"),
        (["--multi-gpu", "folds"], "invalid choice: 'folds'"),
    ],
)
def test_usage_errors_are_one_line_and_status_2(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["slurm", "import", "--sacct", str(log), "-o", str(tmp_path / "t.csv"), *extra])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("wattsched: error: wattsched slurm import: ") and err.count("\n") == 1
    assert message in err


def test_a_log_without_a_required_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "short.txt"
    path.write_text("JobID|Submit|Start|End|State\n1|a|b|c|COMPLETED\n", encoding="utf-8")
    assert main(["slurm", "import", "--sacct", str(path), "-o", str(tmp_path / "t.csv")]) == 2
    err = capsys.readouterr().err
    assert f"{path}, column 'AllocTRES': missing field AllocTRES" in err and err.count("\n") == 1
