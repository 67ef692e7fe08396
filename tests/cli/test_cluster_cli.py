"""`wattsched cluster run` and `cluster import` (CONTRACT §10): a one-GPU cluster is `mig run`, and the
Alibaba 2023 pod and node lists import with every row and GPU accounted for (bad input:
``tests/hardening/test_hostile_cluster_inputs.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.hardware.catalogue import load_gpu


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


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


@pytest.mark.parametrize("policy", ["edf-ss-restricted", "llf"])
def test_one_gpu_cluster_prints_what_mig_run_prints(
    capsys: pytest.CaptureFixture[str], trace: Path, policy: str
) -> None:
    mig = _json(capsys, ["mig", "run", "--config", "3", "--policy", policy, "--trace", str(trace), "--json"])
    cluster = _json(
        capsys,
        [
            "cluster",
            "run",
            "--servers",
            "1",
            "--gpus-per-server",
            "1",
            "--gpu",
            "a100-40gb",
            "--trace",
            str(trace),
            "--placement",
            "best-fit",
            "--partitioner",
            "static",
            "--config",
            "3",
            "--policy",
            policy,
            "--json",
        ],
    )
    for key in (
        "energy_j",
        "avg_tardiness_s",
        "max_tardiness_s",
        "jobs",
        "late_jobs",
        "preemptions",
        "repartitions",
        "end_s",
    ):
        assert cluster[key] == mig[key], key
    for key in (
        "energy_j",
        "energy_idle_j",
        "energy_overhead_j",
        "avg_tardiness_s",
        "jobs",
        "late_jobs",
        "repartitions",
        "gpus",
        "server_turn_ons",
        "end_s",
    ):
        assert key in cluster
    assert cluster["gpus"] == 1 and cluster["server_turn_ons"] == 0 and cluster["energy_overhead_j"] == 0.0


def test_generated_cluster_run_is_deterministic_and_writes_jobs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = [
        "cluster",
        "run",
        "--servers",
        "2",
        "--gpus-per-server",
        "2",
        "--preset",
        "paper",
        "--hours",
        "4",
        "--seed",
        "3",
        "--placement",
        "least-energy",
        "--partitioner",
        "static",
        "--policy",
        "edf-fs",
        "--power-states",
        "on",
        "--json",
    ]
    first = _json(capsys, [*argv, "--jobs-out", str(tmp_path / "jobs.csv")])
    assert _json(capsys, argv) == first
    assert first["gpus"] == 4 and first["jobs"] > 100
    import pandas as pd

    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert list(jobs.columns) == ["job_id", "gpu", "start_s", "completion_s", "tardiness_s", "preemptions"]
    assert len(jobs) == first["jobs"] and jobs["job_id"].is_unique and set(jobs["gpu"]) <= {0, 1, 2, 3}
    assert main([*argv[:-1]]) == 0  # the table form
    out, _ = capsys.readouterr()
    assert "server turn-ons" in out


def test_alibaba_import_places_pods_on_the_node_list(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, unshipped: Callable[[str], Path]
) -> None:
    out = tmp_path / "openb.csv"
    pods = str(unshipped("traces/openb_pod_list_default.csv"))
    nodes_csv = str(unshipped("traces/openb_node_list_all_node.csv"))
    report = _json(
        capsys,
        [
            "cluster",
            "import",
            "--format",
            "alibaba-2023",
            "--input",
            pods,
            "--nodes",
            nodes_csv,
            "-o",
            str(out),
            "--json",
        ],
    )
    assert report["rows_read"] == 8152
    assert report["rows_kept"] + sum(report["skipped"].values()) + sum(report["filtered"].values()) == 8152
    nodes = report["nodes"]
    assert nodes["gpus"] == 6212 and nodes["servers"] == 1213 and nodes["cpu_only_nodes"] == 310
    assert nodes["models"]["G2"] == {"gpu": "a100-40gb", "how": "fallback", "gpus": 4392}
    cluster = json.loads((tmp_path / "openb.cluster.json").read_text())
    assert sum(s["gpus"] for s in cluster["servers"]) == 6212
    # The replay runs (one day of it here, to keep the test short).
    day = tmp_path / "day.csv"
    assert (
        main(
            [
                "cluster",
                "import",
                "--format",
                "alibaba-2023",
                "--input",
                pods,
                "--nodes",
                nodes_csv,
                "-o",
                str(day),
                "--day",
                "120",
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    result = _json(
        capsys,
        [
            "cluster",
            "run",
            "--cluster",
            str(tmp_path / "day.cluster.json"),
            "--trace",
            str(day),
            "--placement",
            "best-fit",
            "--partitioner",
            "static",
            "--policy",
            "edf-ss-restricted",
            "--power-states",
            "on",
            "--json",
        ],
    )
    assert result["gpus"] == 6212 and result["jobs"] > 0


def test_philly_day_runs_on_a_given_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, repo_data: Path
) -> None:
    out = tmp_path / "philly.csv"
    philly = str(repo_data / "traces" / "philly.csv")
    report = _json(
        capsys,
        [
            "cluster",
            "import",
            "--format",
            "philly",
            "--input",
            philly,
            "--day",
            "40",
            "-o",
            str(out),
            "--json",
        ],
    )
    assert report["rows_kept"] > 100 and "nodes" not in report
    result = _json(
        capsys,
        [
            "cluster",
            "run",
            "--servers",
            "4",
            "--gpus-per-server",
            "8",
            "--trace",
            str(out),
            "--placement",
            "deadline-aware",
            "--partitioner",
            "no-mig",
            "--policy",
            "edf-fs",
            "--json",
        ],
    )
    assert result["jobs"] == report["rows_kept"] and result["gpus"] == 32


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[dict[str, object], str]:
    assert main(argv) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


CLUSTER = [
    "cluster",
    "run",
    "--servers",
    "1",
    "--gpus-per-server",
    "2",
    "--placement",
    "first-fit",
    "--partitioner",
    "static",
    "--policy",
    "edf-ss-restricted",
    "--json",
]


def test_clocks_on_a_gpu_without_a_clock_table_say_unsupported(
    capsys: pytest.CaptureFixture[str], trace: Path
) -> None:
    # The H100 entry has no clock table (and borrows the H200's power curves): --clocks on changes nothing.
    on, err = _run(capsys, [*CLUSTER, "--gpu", "h100-80gb", "--trace", str(trace), "--clocks", "on"])
    off, _ = _run(capsys, [*CLUSTER, "--gpu", "h100-80gb", "--trace", str(trace)])
    assert on["clocks"] == "unsupported" and off["clocks"] is False
    assert on["energy_j"] == off["energy_j"] and on["clock_levels_used"] == 0
    assert on["power_model"] == "estimated"
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("wattsched: warning: ") for line in lines)
    assert "estimated power model" in lines[0] and "clocks unsupported" in lines[1]


def test_clocks_on_a_gpu_with_a_clock_table_report_the_levels(
    capsys: pytest.CaptureFixture[str], trace: Path
) -> None:
    on, err = _run(capsys, [*CLUSTER, "--gpu", "h200-141gb", "--trace", str(trace), "--clocks", "on"])
    assert on["clocks"] is True and on["power_model"] == "measured" and err == ""
    levels = on["clock_levels_mhz"]
    assert isinstance(levels, list) and on["clock_levels_used"] == len(levels) >= 1
    assert levels == sorted(levels, reverse=True) and set(levels) <= set(load_gpu("h200-141gb").clocks.sm_mhz)


def test_mig_run_says_which_power_model(capsys: pytest.CaptureFixture[str], trace: Path) -> None:
    argv = ["mig", "run", "--config", "3", "--policy", "edf-ss", "--trace", str(trace), "--json"]
    measured, err = _run(capsys, [*argv, "--gpu", "a100-40gb"])
    assert measured["power_model"] == "measured" and "estimated" not in err
    estimated, err = _run(capsys, [*argv, "--gpu", "a100-80gb"])
    assert estimated["power_model"] == "estimated"
    (line,) = [entry for entry in err.splitlines() if "power model" in entry]
    assert line.startswith("wattsched: warning: ") and "a100-80gb" in line


def _state_file(path: Path, *done: tuple[str, tuple[str, str], tuple[str, str], dict[str, float]]) -> Path:
    """A controller's state file holding one finished repartition per ``(node, configurations, layouts,
    seconds per phase)``, on GPU 0 of the node."""
    from wattsched.slurm.state import StateStore

    store = StateStore(path)
    for node, configurations, layouts, phase_s in done:
        entry = store.add_repartition(node, 0, configurations, layouts, 0.0)
        entry.phase, entry.phase_s = "done", phase_s
        store.put_repartition(entry)
    store.close()
    return path


#: A finished 6 -> 2 on an A100-40GB and on an H200: 60 + 30 + 10 = 100 s and 5 + 10 + 5 = 20 s out of
#: service (apply + gres + resume; the wait does not count).
A100_DONE = (
    "n1",
    ("6", "2"),
    ("2g.10gb@0,2g.10gb@2,3g.20gb@4", "4g.20gb@0,3g.20gb@4"),
    {"wait": 7.0, "apply": 60.0, "gres": 30.0, "resume": 10.0},
)
H200_DONE = (
    "n2",
    ("6", "2"),
    ("2g.35gb@0,2g.35gb@2,3g.71gb@4", "4g.71gb@0,3g.71gb@4"),
    {"wait": 3.0, "apply": 5.0, "gres": 10.0, "resume": 5.0},
)
DAY_NIGHT = [
    "cluster",
    "run",
    "--profile",
    "alibaba-day",
    "--seed",
    "1",
    "--placement",
    "first-fit",
    "--partitioner",
    "day-night",
    "--policy",
    "edf-ss-restricted",
    "--json",
]
KEYS = ("energy_j", "avg_tardiness_s", "repartitions", "blackout_s", "end_s")


def test_repartition_s_sets_every_gpus_blackout_from_seconds_or_a_state_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    one_gpu = [*DAY_NIGHT, "--servers", "1", "--gpus-per-server", "1"]
    runs = {value: _json(capsys, [*one_gpu, "--repartition-s", value]) for value in ("0", "100")}
    # Two repartitions a day, 100 s without slices each: 200 s, and tardiness that none does not cost.
    assert runs["0"]["repartitions"] == runs["100"]["repartitions"] == 2
    assert (runs["0"]["blackout_s"], runs["100"]["blackout_s"]) == (0.0, 200.0)
    assert runs["100"]["avg_tardiness_s"] > runs["0"]["avg_tardiness_s"]  # type: ignore[operator]
    # A cluster of one GPU is `mig day` of the same day with the same cost.
    day = _json(
        capsys,
        [
            "mig",
            "day",
            "--partitioner",
            "day-night",
            "--profile",
            "alibaba-day",
            "--seed",
            "1",
            "--repartition-s",
            "100",
            "--json",
        ],
    )
    assert {k: runs["100"][k] for k in KEYS} == {k: day[k] for k in KEYS}
    state = _state_file(tmp_path / "state.db", A100_DONE, H200_DONE)
    measured = _json(capsys, [*one_gpu, "--repartition-s", f"measured:{state}"])
    assert {k: measured[k] for k in KEYS} == {k: runs["100"][k] for k in KEYS}
    # Two models: each GPU's blackout is its own model's median (2 x 100 s on the A100, 2 x 20 s on the H200).
    cluster = tmp_path / "mixed.cluster.json"
    cluster.write_text(
        json.dumps(
            {
                "format": "wattsched-cluster",
                "servers": [{"gpu": "a100-40gb", "gpus": 1}, {"gpu": "h200-141gb", "gpus": 1}],
            }
        )
    )
    mixed = _json(capsys, [*DAY_NIGHT, "--cluster", str(cluster), "--repartition-s", f"measured:{state}"])
    assert mixed["repartitions"] == 4 and mixed["blackout_s"] == 2 * 100.0 + 2 * 20.0
    assert main([*DAY_NIGHT[:-1], "--cluster", str(cluster), "--repartition-s", "3"]) == 0
    assert "4 (12 s without slices)" in capsys.readouterr().out  # the table form


def test_repartition_s_refuses_bad_values_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = _state_file(tmp_path / "state.db", A100_DONE)
    h200 = [*DAY_NIGHT, "--servers", "1", "--gpus-per-server", "1", "--gpu", "h200-141gb"]
    missing = tmp_path / "missing.db"
    for bad in (
        "-1",
        "nan",
        "ten",
        "measured:",
        f"measured:{missing}",
        f"measured:{tmp_path}",
        f"measured:{state}",
    ):
        status: object
        try:
            status = main([*h200, "--repartition-s", bad])
        except SystemExit as exc:  # argparse's own refusal
            status = exc.code
        out, err = capsys.readouterr()
        assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, (bad, err)
    # The state file has the A100's repartition only: the line names the model and the file.
    assert "h200-141gb" in err and str(state) in err
