"""Partitioners on a trace, the same way everywhere: no-mig, static, day-night and lookahead run on one in
`mig day`, `cluster run`, a sweep file and the Python API (a sweep's rows equal `mig day`'s); rollout, which
simulates days drawn from a generated workload, is refused by each of them with one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from cli_checks import assert_one_line_error, run_in, write

from wattsched.cli import main
from wattsched.errors import ConfigError
from wattsched.experiments.sweep import validate_sweep
from wattsched.experiments.sweep_expand import expand_sweep
from wattsched.experiments.sweep_run import run_sweep
from wattsched.mig.partition import check_workload_source

REFUSAL = "partitioner 'rollout' needs a generated workload"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "day.csv"
    assert main(["mig", "generate", "--gpu", "a100-40gb", "--profile", "alibaba-day", "--rate-multiplier",
                 "2.5", "--hours", "2", "--seed", "7", "-o", str(path)]) == 0  # fmt: skip
    return path


def _sweep_file(tmp_path: Path, partitioners: list[str]) -> Path:
    names = ", ".join(f'"{p}"' for p in partitioners)
    return write(tmp_path / "sweep.toml", f'gpus = ["a100-40gb"]\npartitioners = [{names}]\nseeds = [1]\n'
                 '[workload]\ntrace = "day.csv"\n')  # fmt: skip


def test_a_sweep_runs_partitioners_on_a_trace_as_mig_day_does(
    tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = _sweep_file(tmp_path, ["no-mig", "static", "day-night", "lookahead"])
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out")]) == 0
    runs = pd.read_parquet(tmp_path / "out" / "runs.parquet").set_index("partitioner")
    assert sorted(runs.index) == ["day-night", "lookahead", "no-mig", "static"]
    for name in runs.index:
        capsys.readouterr()
        assert main(["mig", "day", "--partitioner", name, "--gpu", "a100-40gb", "--trace", str(trace),
                     "--json"]) == 0  # fmt: skip
        day = json.loads(capsys.readouterr().out)
        row = runs.loc[name]
        assert row["configuration"] == str(day["initial_configuration"]), name
        for key in ("energy_j", "avg_tardiness_s", "jobs", "late_jobs", "repartitions", "end_s"):
            assert row[key] == pytest.approx(day[key], rel=1e-12), (name, key)
    assert runs.loc["day-night", "repartitions"] == 0  # 2 h from midnight: the night configuration holds
    assert runs.loc["no-mig", "configuration"] == "no-mig" and runs.loc["lookahead", "repartitions"] > 0


def test_rollout_on_a_trace_is_refused_by_mig_day_and_lookahead_runs(
    tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_in(tmp_path, ["mig", "day", "--partitioner", "rollout", "--trace", str(trace)])
    assert_one_line_error(capsys, code, REFUSAL, "day.csv")
    assert main(["mig", "day", "--partitioner", "lookahead", "--trace", str(trace), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["partitioner"] == "lookahead"


def test_rollout_on_a_trace_is_refused_by_cluster_run_and_lookahead_runs(
    tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["cluster", "run", "--servers", "1", "--gpus-per-server", "2", "--placement", "first-fit",
            "--policy", "edf-ss-restricted", "--trace", str(trace), "--json", "--partitioner"]  # fmt: skip
    code = run_in(tmp_path, [*argv, "rollout"])
    assert_one_line_error(capsys, code, REFUSAL, "day.csv")
    assert main([*argv, "lookahead"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 30


def test_the_python_api_shares_the_check(tmp_path: Path, trace: Path) -> None:
    data = {
        "gpus": ["a100-40gb"],
        "partitioners": ["lookahead"],
        "seeds": [1],
        "workload": {"trace": "day.csv"},
    }
    spec = validate_sweep(data, "api.toml")
    (cell,) = expand_sweep(spec, tmp_path, "api.toml")
    assert cell.partitioner == "lookahead"
    runs = run_sweep(spec, tmp_path, tmp_path / "out", where="api.toml", progress=False).runs
    assert list(runs.partitioner) == ["lookahead"] and runs.jobs.iloc[0] == 30
    with pytest.raises(ConfigError, match=f"{REFUSAL}.*x.csv"):
        check_workload_source("rollout", "x.csv")
    for name in ("no-mig", "static", "day-night", "lookahead"):
        check_workload_source(name, "x.csv")
    check_workload_source("rollout", None)
