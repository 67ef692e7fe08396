"""Sweeps (CONTRACT §9): rows equal the single-run commands, ET over the whole pool, resume, stale code,
Ray."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wattsched.cli import main
from wattsched.errors import ConfigError
from wattsched.experiments import store as store_module
from wattsched.experiments import sweep_run
from wattsched.experiments.executors import CellFailedError
from wattsched.experiments.sweep import validate_sweep
from wattsched.experiments.sweep_expand import expand_sweep
from wattsched.experiments.sweep_run import SWEEP_RUN_COLUMNS, run_sweep

#: 1 GPU x 2 configurations x 2 policies x 2 seeds = 8 runs, plus 2 partitioners x 2 seeds = 4 days.
SMALL = {
    "gpus": ["a100-40gb"],
    "configurations": [3, "no-mig"],
    "policies": ["edf-fs", "edf-ss-restricted"],
    "partitioners": ["static", "no-mig"],
    "seeds": [1, 2],
    "workload": {"profile": "alibaba-day", "rate_multiplier": 2.5, "hours": 1},
}


def _sweep(
    tmp_path: Path, data: dict[str, object], name: str = "out", **options: object
) -> sweep_run.SweepResult:
    spec = validate_sweep(data, "small.toml")
    return run_sweep(spec, tmp_path, tmp_path / name, where="small.toml", progress=False, **options)  # type: ignore[arg-type]


def _cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(argv) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_rows_equal_mig_run_and_et_uses_the_whole_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _sweep(tmp_path, SMALL, workers=1)
    runs = result.runs
    assert len(runs) == 12 and list(runs.columns[: len(SWEEP_RUN_COLUMNS)]) == list(SWEEP_RUN_COLUMNS)
    # A fixed cell is `mig run` with the same options (the sweep's preset default is literal, as mig run's).
    row = runs[(runs.configuration == "3") & (runs.policy == "edf-fs") & (runs.seed == 2)].iloc[0]
    single = _cli_json(
        [
            "mig",
            "run",
            "--config",
            "3",
            "--policy",
            "edf-fs",
            "--profile",
            "alibaba-day",
            "--hours",
            "1",
            "--rate-multiplier",
            "2.5",
            "--seed",
            "2",
            "--json",
        ],
        capsys,
    )
    for key in ("energy_j", "avg_tardiness_s", "max_tardiness_s", "jobs", "late_jobs", "preemptions"):
        assert row[key] == pytest.approx(single[key], rel=1e-12), key
    # The static partitioner's day is configuration 3 under restricted EDF-SS; no-mig's is no-mig, EDF-FS.
    for partitioner, configuration, policy in (
        ("static", "3", "edf-ss-restricted"),
        ("no-mig", "no-mig", "edf-fs"),
    ):
        day = runs[runs.partitioner == partitioner].set_index("seed")
        fixed = runs[
            (runs.partitioner == "none") & (runs.configuration == configuration) & (runs.policy == policy)
        ].set_index("seed")
        assert list(day.configuration) == [configuration] * 2 and list(day.policy) == [policy] * 2
        np.testing.assert_allclose(day.energy_j, fixed.energy_j, rtol=1e-12)
    # Common random numbers: every run of a seed sees the same jobs.
    assert runs.groupby("seed")["jobs"].nunique().eq(1).all()
    # ET by hand over all 12 runs: a = mean(y) / (2 mean(x)), y in minutes.
    x, y = runs.energy_j.to_numpy(), runs.avg_tardiness_s.to_numpy() / 60.0
    a = y.mean() / (2 * x.mean())
    np.testing.assert_allclose(runs.et, (a * x + y) / (a + 1), rtol=1e-12)
    pool = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert pool["et_pool"]["mig"]["runs"] == 12
    assert pool["et_pool"]["mig"]["a_per_j"] == pytest.approx(a, rel=1e-12)
    assert (
        pool["spec"]["configurations"] == [3, "no-mig"] and pool["code_digest"] == store_module.code_digest()
    )
    stored = pd.read_parquet(tmp_path / "out" / "runs.parquet")
    pd.testing.assert_frame_equal(stored, runs, check_dtype=False)


def test_partitioner_rows_equal_mig_day(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {
        "gpus": ["h200-141gb"],
        "partitioners": ["day-night"],
        "seeds": [1],
        "workload": {"profile": "alibaba-day", "rate_multiplier": 2.5, "hours": 1},
    }
    row = _sweep(tmp_path, data).runs.iloc[0]
    day = _cli_json(
        [
            "mig",
            "day",
            "--partitioner",
            "day-night",
            "--gpu",
            "h200-141gb",
            "--profile",
            "alibaba-day",
            "--hours",
            "1",
            "--rate-multiplier",
            "2.5",
            "--seed",
            "1",
            "--json",
        ],
        capsys,
    )
    assert row["configuration"] == str(day["initial_configuration"])
    for key in ("energy_j", "avg_tardiness_s", "jobs", "late_jobs", "preemptions", "repartitions", "end_s"):
        assert row[key] == pytest.approx(day[key], rel=1e-12), key


def test_several_workloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {
        "gpus": ["a100-40gb"],
        "configurations": [2],
        "policies": ["llf"],
        "seeds": [7],
        "workloads": [
            {"profile": "alibaba-day", "rate_multiplier": [1.0, 2.5], "hours": 1},
            {"rate_per_min": 0.5, "hours": 1, "deadline_rule": "slice-aware", "inference_share": 0.5},
        ],
    }
    runs = _sweep(tmp_path, data).runs
    assert list(runs.workload) == [
        "alibaba-day",
        "alibaba-day",
        "poisson-0.5/min inference=0.5 slice-aware",
    ]
    assert list(runs.rate_multiplier) == [1.0, 2.5, 1.0]
    single = _cli_json(
        [
            "mig",
            "run",
            "--config",
            "2",
            "--policy",
            "llf",
            "--rate",
            "0.5",
            "--hours",
            "1",
            "--seed",
            "7",
            "--deadline-rule",
            "slice-aware",
            "--inference-share",
            "0.5",
            "--json",
        ],
        capsys,
    )
    assert runs.energy_j.iloc[2] == pytest.approx(single["energy_j"], rel=1e-12)
    assert runs.late_jobs.iloc[2] == single["late_jobs"]


def test_dvfs_rows_equal_dvfs_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {
        "seeds": [3],
        "dvfs": {
            "util": [1.2],
            "pairs": [64],
            "pairs_per_server": [4],
            "algos": ["edl"],
            "dvfs": [True, False],
            "mode": ["offline", "online"],
        },
    }
    runs = _sweep(tmp_path, data, workers=1).runs
    assert len(runs) == 4 and set(runs.part) == {"dvfs"}
    for _, row in runs.iterrows():
        single = _cli_json(
            [
                "dvfs",
                "run",
                "--mode",
                row["mode"],
                "--util",
                "1.2",
                "--pairs",
                "64",
                "--pairs-per-server",
                "4",
                "--algo",
                "edl",
                "--dvfs",
                row["dvfs"],
                "--seed",
                "3",
                "--json",
            ],
            capsys,
        )
        assert row["energy_j"] == pytest.approx(single["energy_total_j"], rel=1e-12)
        for key in ("energy_run_j", "energy_idle_j", "energy_overhead_j", "pairs_used", "turn_ons"):
            assert row[key] == pytest.approx(single[key], rel=1e-12), key
        assert row["late_jobs"] == single["deadline_misses"] and row["jobs"] == single["tasks"]
    on = runs[runs.dvfs == "on"].set_index("mode").energy_j
    off = runs[runs.dvfs == "off"].set_index("mode").energy_j
    assert (on < off).all()  # DVFS saves energy in both modes (P2)
    assert "rate_multiplier" not in runs.columns  # no MIG run fills it


def test_mig_and_dvfs_parts_have_separate_et_pools(tmp_path: Path) -> None:
    data = {
        **SMALL,
        "partitioners": None,
        "dvfs": {"util": [1.0], "pairs": [32], "algos": ["edl", "bin"]},
    }
    result = _sweep(tmp_path, data, workers=2)
    runs, pools = result.runs, result.summary["et_pool"]
    assert runs.part.value_counts().to_dict() == {"mig": 8, "dvfs": 8}  # DVFS: 2 algos x on/off x 2 seeds
    assert list(runs.part) == ["mig"] * 8 + ["dvfs"] * 8  # file order: the MIG part first
    mig = runs[runs.part == "mig"]
    x, y = mig.energy_j.to_numpy(), mig.avg_tardiness_s.to_numpy() / 60.0
    assert pools["mig"]["a_per_j"] == pytest.approx(y.mean() / (2 * x.mean()), rel=1e-12)
    dvfs = runs[runs.part == "dvfs"]
    # Every DVFS task meets its deadline here: the pool has no tardiness, a = 0 and every et is 0.
    assert (dvfs.late_jobs == 0).all() and (dvfs.avg_tardiness_s == 0).all()
    assert pools["dvfs"]["a_per_j"] == 0 and (dvfs.et == 0).all()
    assert mig["mode"].isna().all() and dvfs["rate_multiplier"].isna().all()


def test_rerun_reuses_every_row_and_an_interrupted_sweep_picks_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sweep_run.run_sweep_cell
    calls: list[str] = []

    def failing(cell):  # type: ignore[no-untyped-def]
        calls.append(cell.key)
        if len(calls) == 5:
            raise RuntimeError("killed")
        return real(cell)

    monkeypatch.setattr(sweep_run, "run_sweep_cell", failing)
    with pytest.raises(CellFailedError, match="killed"):
        _sweep(tmp_path, SMALL, workers=1)
    assert not (tmp_path / "out" / "runs.parquet").exists()
    monkeypatch.setattr(sweep_run, "run_sweep_cell", real)
    resumed = _sweep(tmp_path, SMALL, workers=1)
    assert (resumed.executed, resumed.reused) == (8, 4)  # the 4 cells that finished before the failure
    first = (tmp_path / "out" / "runs.parquet").read_bytes()
    again = _sweep(tmp_path, SMALL, workers=2)
    assert (again.executed, again.reused) == (0, 12)
    assert (tmp_path / "out" / "runs.parquet").read_bytes() == first
    fresh = _sweep(tmp_path, SMALL, name="fresh", workers=2)
    pd.testing.assert_frame_equal(fresh.runs, resumed.runs)


def test_a_code_change_reruns_every_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = {**SMALL, "partitioners": None, "seeds": [1]}
    assert _sweep(tmp_path, data).executed == 4
    assert _sweep(tmp_path, data).reused == 4  # same code digest: reused
    monkeypatch.setattr(store_module, "code_digest", lambda: "edited-source")
    again = _sweep(tmp_path, data)
    assert (again.executed, again.reused) == (4, 0)


def test_code_digest_covers_sources_and_data_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import wattsched

    package = tmp_path / "wattsched"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")
    (package / "data" / "gpu.toml").write_text("a = 1\n")
    monkeypatch.setattr(wattsched, "__file__", str(package / "__init__.py"))

    def digest() -> str:
        store_module.code_digest.cache_clear()
        return store_module.code_digest()

    try:
        first = digest()
        (package / "__pycache__").mkdir()
        (package / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
        assert digest() == first  # compiled files do not count
        (package / "data" / "gpu.toml").write_text("a = 2\n")
        assert digest() != first  # a data file does
        (package / "data" / "gpu.toml").write_text("a = 1\n")
        assert digest() == first
        (package / "__init__.py").write_text("x = 2\n")
        assert digest() != first  # and so does the source
    finally:
        store_module.code_digest.cache_clear()


def test_cell_count_limit_and_expansion_order(tmp_path: Path) -> None:
    spec = validate_sweep({**SMALL, "seeds": list(range(200))}, "big.toml")
    with pytest.raises(
        ConfigError, match=r"big.toml: the cross product has 1,200 cells, more than the limit of 1,000"
    ):
        expand_sweep(spec, tmp_path, "big.toml", max_cells=1000)
    cells = expand_sweep(spec, tmp_path, "big.toml", max_cells=1000, confirm=True)
    assert len(cells) == 1200
    assert [c.key for c in cells[:6]] == [
        "mig/a100-40gb/alibaba-day/x2.5/1h/s0/3/edf-fs",
        "mig/a100-40gb/alibaba-day/x2.5/1h/s0/3/edf-ss-restricted",
        "mig/a100-40gb/alibaba-day/x2.5/1h/s0/no-mig/edf-fs",
        "mig/a100-40gb/alibaba-day/x2.5/1h/s0/no-mig/edf-ss-restricted",
        "mig/a100-40gb/alibaba-day/x2.5/1h/s0/static",
        "mig/a100-40gb/alibaba-day/x2.5/1h/s0/no-mig",
    ]


def test_trace_workload_and_gpu_file_paths_are_relative_to_the_sweep_file(tmp_path: Path) -> None:
    from wattsched.workload.generators import WorkloadSpec, generate_jobs
    from wattsched.workload.traces import write_trace

    write_trace(generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 4), tmp_path / "jobs.csv")
    data = {
        "gpus": ["a100-40gb"],
        "configurations": [1, 3],
        "policies": ["edf-ss"],
        "seeds": [0],
        "workload": {"trace": "jobs.csv"},
    }
    runs = _sweep(tmp_path, data).runs
    assert list(runs.workload) == ["jobs.csv"] * 2 and "rate_multiplier" not in runs.columns
    # An edited trace is a new cell: its digest is part of the cell.
    before = expand_sweep(validate_sweep(data), tmp_path)[0]
    write_trace(generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 5), tmp_path / "jobs.csv")
    after = expand_sweep(validate_sweep(data), tmp_path)[0]
    assert before.key == after.key and before != after


@pytest.mark.ray
def test_ray_gives_the_same_rows_as_local(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    import ray

    data = {**SMALL, "seeds": [1], "partitioners": ["day-night"]}
    ray_runs = _sweep(tmp_path, data, name="ray", executor="ray", workers=2).runs
    assert not ray.is_initialized()
    local_runs = _sweep(tmp_path, data, name="local", executor="local", workers=2).runs
    assert len(ray_runs) == 5
    pd.testing.assert_frame_equal(ray_runs, local_runs)
    assert (tmp_path / "ray" / "runs.parquet").read_bytes() == (
        tmp_path / "local" / "runs.parquet"
    ).read_bytes()


def _stored_rows(unfinished: list[int] | None) -> pd.DataFrame:
    """Three MIG rows as the store holds them (``None``: a store written before ``unfinished_jobs``)."""
    rows = pd.DataFrame(
        {
            "part": ["mig"] * 3,
            "gpu": ["a100-40gb"] * 3,
            "configuration": ["3"] * 3,
            "policy": ["edf-ss", "edf-fs", "llf"],
            "seed": [1, 1, 1],
            "energy_j": [100.0, 200.0, 300.0],
            "avg_tardiness_s": [60.0, 120.0, 180.0],
            "late_jobs": [1, 2, 3],
            "preemptions": [0, 0, 0],
            "cell": ["a", "b", "c"],
        }
    )
    if unfinished is not None:
        rows["unfinished_jobs"] = unfinished
    return rows


def test_old_stores_read_as_finished_and_unfinished_runs_get_no_et(caplog: pytest.LogCaptureFixture) -> None:
    old, pools = sweep_run.tidy_runs(_stored_rows(None))
    assert list(old.unfinished_jobs) == [0, 0, 0] and old.et.notna().all()
    # Pool of all three: mean tardiness 2 min, mean energy 200 J, a = 2 / (2 * 200) = 0.005 per J.
    assert pools["mig"]["a_per_j"] == pytest.approx(0.005)
    assert old.et.iloc[0] == pytest.approx((0.005 * 100 + 1) / 1.005)

    runs, pools = sweep_run.tidy_runs(_stored_rows([0, 0, 4]))
    assert np.isnan(runs.et.iloc[2]) and runs.unfinished_jobs.iloc[2] == 4
    # The pool leaves the unfinished run out: mean tardiness 1.5 min, mean energy 150 J, a = 0.005 again.
    assert pools["mig"]["runs"] == 2 and pools["mig"]["mean_energy_j"] == 150.0
    assert runs.et.iloc[1] == pytest.approx((0.005 * 200 + 2) / 1.005)
    assert "1 run(s) left jobs unfinished" in caplog.text
