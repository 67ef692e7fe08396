"""Reading a sweep directory (CONTRACT §9) for figures: factors that vary, metrics present, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from viz_fixtures import make_sweep_dir, sweep_runs

from wattsched.errors import InputError
from wattsched.viz.stats import METRICS, group_summary
from wattsched.viz.sweep import read_sweep, split_factors


def test_factors_are_the_columns_that_vary(tmp_path: Path) -> None:
    sweep = read_sweep(make_sweep_dir(tmp_path / "s"))
    assert sweep.factors == ["policy", "configuration"]  # gpu, workload, rate_multiplier are constant
    assert split_factors(sweep.factors) == ("policy", ["configuration"])
    assert sweep.pool["runs"] == 12
    assert [m.name for m in sweep.metrics()] == ["et", "energy", "tardiness", "late-jobs", "preemptions"]


def test_numeric_factors_group_as_short_text(tmp_path: Path) -> None:
    runs = sweep_runs()
    runs["rate_multiplier"] = [1.0, 2.5] * 6
    sweep = read_sweep(make_sweep_dir(tmp_path / "s", runs))
    assert sorted(set(sweep.runs["rate_multiplier"])) == ["1", "2.5"]
    assert "rate_multiplier" in sweep.factors


def test_group_summary_of_the_fixture(tmp_path: Path) -> None:
    sweep = read_sweep(make_sweep_dir(tmp_path / "s"))
    summary = group_summary(sweep.runs, METRICS["energy"], ["configuration", "policy"])
    means = dict(
        zip(zip(summary["configuration"], summary["policy"], strict=True), summary["mean"], strict=True)
    )
    assert means == pytest.approx(
        {("3", "edf-fs"): 2.0, ("3", "edf-ss"): 1.0, ("no-mig", "edf-fs"): 7 / 3, ("no-mig", "edf-ss"): 1.0}
    )


def test_missing_pool_is_allowed(tmp_path: Path) -> None:
    folder = make_sweep_dir(tmp_path / "s")
    (folder / "sweep.json").unlink()
    assert read_sweep(folder).pool == {}


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "runs.parquet").unlink(), "not a sweep directory: no runs.parquet"),
        (
            lambda f: sweep_runs().drop(columns=["et", "seed"]).to_parquet(f / "runs.parquet"),
            "missing column(s) seed, et",
        ),
        (lambda f: sweep_runs().iloc[0:0].to_parquet(f / "runs.parquet"), "no runs"),
        (
            lambda f: (
                sweep_runs().assign(energy_j=[float("nan")] + [1.0] * 11).to_parquet(f / "runs.parquet")
            ),
            "row 1, column 'energy_j': not a finite number",
        ),
        (
            lambda f: (
                sweep_runs()
                .assign(avg_tardiness_s=[1.0] * 5 + [-2.0] + [1.0] * 6)
                .to_parquet(f / "runs.parquet")
            ),
            "row 6, column 'avg_tardiness_s': must be >= 0",
        ),
        (lambda f: (f / "runs.parquet").write_bytes(b"PAR1 not really"), "cannot parse parquet file"),
        (lambda f: (f / "sweep.json").write_text("{not json"), "sweep.json: cannot read the ET pool"),
        (lambda f: (f / "sweep.json").write_text(json.dumps([1, 2])), "must be a JSON object"),
    ],
)
def test_bad_sweep_directories(tmp_path: Path, damage, message: str) -> None:  # type: ignore[no-untyped-def]
    folder = make_sweep_dir(tmp_path / "s")
    damage(folder)
    with pytest.raises(InputError, match=None) as caught:
        read_sweep(folder)
    assert message in str(caught.value)
