"""Hostile input to `wattsched cluster run` and `cluster import`: one stderr line, exit 2, nothing written —
unknown GPU models (listed), zero GPUs, names not registered, jobs needing more than any GPU offers."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, cli, lines, run_in, write

from wattsched.cli import main

RUN = [
    "cluster",
    "run",
    "--placement",
    "first-fit",
    "--partitioner",
    "static",
    "--policy",
    "edf-ss-restricted",
]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "day.csv"
    assert (
        main(
            [
                "mig",
                "generate",
                "--profile",
                "alibaba-day",
                "--rate-multiplier",
                "2.5",
                "--hours",
                "6",
                "--seed",
                "7",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    return path


NODES_HEADER = "sn,cpu_milli,memory_mib,gpu,model"


def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, trace: Path) -> None:
    pods = write(
        tmp_path / "pods.csv",
        lines(
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
            "scheduled_time",
            "p0,1000,1024,1,500,,LS,Succeeded,0,100,10",
        ),
    )
    unknown = write(
        tmp_path / "nodes.csv",
        lines(NODES_HEADER, "n0,1,1,8,G2", "n1,1,1,4,X9", "n2,1,1,2,X9", "n3,1,1,1,Y1"),
    )
    cpu_only = write(tmp_path / "cpu.csv", lines(NODES_HEADER, "n0,1,1,0,", "n1,1,1,0,"))
    out = str(tmp_path / "out.csv")
    base_import = ["cluster", "import", "--format", "alibaba-2023", "--input", str(pods), "-o", out]
    cases: list[tuple[list[str], tuple[str, ...]]] = [
        ([*base_import, "--nodes", str(unknown)], ("unknown GPU model(s) X9 (2 nodes), Y1 (1 node)",)),
        ([*base_import, "--nodes", str(cpu_only)], ("no node has a GPU", "2 CPU-only")),
        ([*base_import], ("needs --nodes",)),
        ([*base_import, "--nodes", str(unknown), "--map", "X9"], ("MODEL=GPU",)),
        ([*base_import, "--nodes", str(unknown), "--fallback", "b200"], ("unknown GPU 'b200'",)),
        ([*RUN, "--servers", "0", "--gpus-per-server", "8", "--trace", str(trace)], ("positive integer",)),
        ([*RUN, "--servers", "2", "--trace", str(trace)], ("--gpus-per-server",)),
        (
            [*RUN, "--servers", "1", "--gpus-per-server", "1", "--gpu", "b200", "--trace", str(trace)],
            ("unknown GPU 'b200'",),
        ),
        (
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
                "random",
                "--partitioner",
                "static",
                "--policy",
                "edf-fs",
            ],
            ("unknown placement 'random'", "best-fit"),
        ),
        (
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
                "oracle",
                "--policy",
                "edf-fs",
            ],
            ("unknown repartitioning policy 'oracle'", "day-night"),
        ),
        (
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
                "--policy",
                "fifo",
            ],
            ("unknown scheduling policy 'fifo'",),
        ),
        (
            [*RUN, "--servers", "1", "--gpus-per-server", "1", "--trace", str(trace), "--config", "13"],
            ("unknown configuration '13'",),
        ),
        ([*RUN, "--cluster", str(unknown), "--trace", str(trace)], ("not JSON",)),
        (
            [
                *RUN,
                "--servers",
                "1",
                "--gpus-per-server",
                "1",
                "--preset",
                "paper",
                "--power-states",
                "maybe",
            ],
            ("on or off",),
        ),
        (
            [*RUN, "--servers", "1", "--gpus-per-server", "1", "--trace", str(trace), "--seed", "3"],
            ("only apply to generated workloads",),
        ),
    ]
    for argv, pieces in cases:
        assert_one_line_error(capsys, run_in(tmp_path, argv), *pieces)


def test_jobs_needing_more_gpus_than_a_server_are_counted_and_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trace: Path
) -> None:
    import pandas as pd

    frame = pd.read_csv(trace)
    frame["gpus"] = 1
    frame.loc[:2, "gpus"] = 8
    frame.loc[3, "gpus"] = 2
    big = tmp_path / "big.csv"
    frame.to_csv(big, index=False)
    code = run_in(tmp_path, [*RUN, "--servers", "4", "--gpus-per-server", "1", "--trace", str(big)])
    assert_one_line_error(
        capsys,
        code,
        f"4 of {len(frame)} jobs need more GPUs than a server of the cluster has (1)",
        "1 need 2 GPUs, 3 need 8 GPUs",
        "column 'gpus'",
    )
    code = run_in(tmp_path, [*RUN, "--servers", "4", "--gpus-per-server", "4", "--trace", str(big)])
    assert_one_line_error(
        capsys,
        code,
        f"3 of {len(frame)} jobs need more GPUs than a server of the cluster has (4)",
        "3 need 8 GPUs",
        "column 'gpus'",
    )
    frame.loc[3, "gpus"] = 0
    frame.to_csv(big, index=False)
    code = run_in(tmp_path, [*RUN, "--servers", "1", "--gpus-per-server", "1", "--trace", str(big)])
    assert_one_line_error(capsys, code, "row 4", "whole number of GPUs >= 1")
    assert cli(["cluster", "run", "--help"]) == 0
    capsys.readouterr()


def test_bad_node_lists_and_cluster_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trace: Path
) -> None:
    pods = write(
        tmp_path / "pods.csv",
        lines(
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
            "scheduled_time",
            "p0,1000,1024,1,500,,LS,Succeeded,0,100,10",
        ),
    )
    good = write(tmp_path / "good.csv", lines(NODES_HEADER, "n0,1,1,2,T4"))
    out = str(tmp_path / "out.csv")
    base = ["cluster", "import", "--format", "alibaba-2023", "--input", str(pods), "-o", out]
    node_cases = [
        (lines("sn,gpu", "n0,2"), ("column 'model'",)),
        (lines(NODES_HEADER, "n0,1,1,two,T4"), ("row 1", "column 'gpu'", "whole number")),
        (lines(NODES_HEADER, "n0,1,1,1.5,T4"), ("row 1", "column 'gpu'")),
        (lines(NODES_HEADER, "n0,1,1,2,"), ("row 1", "needs a model")),
        (lines(NODES_HEADER), ("no rows",)),
    ]
    for content, pieces in node_cases:
        nodes = write(tmp_path / "nodes.csv", content)
        assert_one_line_error(capsys, run_in(tmp_path, [*base, "--nodes", str(nodes)]), *pieces)
    more = [
        ([*base, "--nodes", str(good), "--cluster-out", str(tmp_path / "c.toml")], ("must end in .json",)),
        (
            [*base, "--nodes", str(good), "--cluster-out", str(tmp_path / "no" / "c.json")],
            ("does not exist",),
        ),
        (
            [
                "cluster",
                "import",
                "--format",
                "philly",
                "--input",
                str(pods),
                "-o",
                out,
                "--map",
                "T4=a100-40gb",
            ],
            ("need --nodes",),
        ),
        ([*base, "--nodes", str(good), "--end-s", "10"], ("--end-s needs --start-s",)),
    ]
    for argv, pieces in more:
        assert_one_line_error(capsys, run_in(tmp_path, argv), *pieces)
    cluster_files = [
        ('{"format": "other"}', ("not a cluster file",)),
        ('{"format": "wattsched-cluster", "servers": []}', ("'servers'", "non-empty")),
        (
            '{"format": "wattsched-cluster", "servers": [{"gpu": "a100-40gb", "gpus": 0}]}',
            ("servers[0].gpus",),
        ),
        ('{"format": "wattsched-cluster", "servers": [{"gpu": 7, "gpus": 1}]}', ("servers[0].gpu",)),
        ('{"format": "wattsched-cluster", "servers": [{"gpu": "b200", "gpus": 1}]}', ("unknown GPU 'b200'",)),
    ]
    for content, pieces in cluster_files:
        path = write(tmp_path / "c.json", content)
        assert_one_line_error(
            capsys, run_in(tmp_path, [*RUN, "--cluster", str(path), "--trace", str(trace)]), *pieces
        )
    path = write(
        tmp_path / "c.json", '{"format": "wattsched-cluster", "servers": [{"gpu": "a100-40gb", "gpus": 2}]}'
    )
    code = run_in(tmp_path, [*RUN, "--cluster", str(path), "--servers", "2", "--trace", str(trace)])
    assert_one_line_error(capsys, code, "cannot be combined with --cluster")
    assert_one_line_error(
        capsys,
        run_in(tmp_path, [*RUN, "--cluster", str(tmp_path / "none.json"), "--trace", str(trace)]),
        "file not found",
    )
