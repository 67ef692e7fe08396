"""The cluster study: its grid, one cell's rows against the engine, the summary, report and figures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from wattsched.cluster import (
    ClusterOptions,
    ClusterSpec,
    PowerStates,
    cluster_spec,
    preset_spec,
    simulate_cluster,
)
from wattsched.errors import ConfigError, UnknownNameError
from wattsched.experiments.executors import LocalExecutor
from wattsched.experiments.runner import run_study
from wattsched.experiments.study import STUDIES
from wattsched.studies.cluster import BASELINE, ClusterStudy, _binned_gpus_on
from wattsched.workload.generators import generate_jobs


def test_the_grid_has_the_baseline_and_every_combination() -> None:
    assert "cluster" in STUDIES.available()
    study = ClusterStudy(workloads=["synthetic"])
    quick, paper = study.cells("quick"), study.cells("paper")
    assert len(quick) == 1 + 3 * 2 * 2 * 2 and len(paper) == 1 + 4 * 2 * 2 * 2
    assert quick[0].baseline and (quick[0].placement, quick[0].partitioner) == BASELINE[:2]
    assert quick[0].days == 1.0 and paper[0].days == 7.0
    assert len({c.key for c in paper}) == len(paper)
    with pytest.raises(UnknownNameError):
        ClusterStudy(placements=["random"])
    with pytest.raises(ConfigError, match="unknown cluster workloads"):
        ClusterStudy(workloads=["philly"])


def test_gpus_on_is_binned_by_time() -> None:
    # 4 GPUs on for the first half, 2 for the second: means 4, 4, then 3 (the bin straddles), then 2.
    bins = _binned_gpus_on(((0.0, 4), (150.0, 2)), 300.0)
    assert len(bins) == 96 and bins[0] == (0.0, 4.0) and bins[-1][1] == pytest.approx(2.0)
    assert sum(mean for _, mean in bins) * (300.0 / 96) == pytest.approx(4 * 150 + 2 * 150)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[ClusterStudy, pd.DataFrame, Path]:
    study = ClusterStudy(
        workloads=["synthetic"], days=0.1, placements=["least-energy"], partitioners=["static"]
    )
    out = tmp_path_factory.mktemp("cluster")
    run = run_study(study, "quick", out, LocalExecutor(workers=1), progress=False)
    return study, run.rows, out


def test_a_cell_reports_what_the_engine_returns(tiny: tuple[ClusterStudy, pd.DataFrame, Path]) -> None:
    _, rows, _ = tiny
    runs = rows[rows["part"] == "run"]
    assert len(runs) == 1 + 4  # the baseline and least-energy/static x power x clocks
    cell = runs[(runs["power_states"]) & (runs["clocks"])].iloc[0]
    per_gpu = preset_spec("paper", hours=24.0 * 0.1)
    jobs = generate_jobs(cluster_spec(per_gpu, 64), 14)
    options = ClusterOptions(
        placement="least-energy",
        configuration=3,
        power_states=PowerStates(enabled=True),
        clocks=True,
        seed=14,
    )
    spec = ClusterSpec.homogeneous(8, 8, "h200-141gb")
    expected = simulate_cluster(jobs, spec, options, horizon_s=per_gpu.horizon_s)
    assert cell["energy_j"] == expected.energy_j and cell["avg_tardiness_s"] == expected.avg_tardiness_s
    assert cell["jobs"] == len(jobs)
    cdf = rows[(rows["part"] == "cdf") & (rows["key"] == cell["key"])]
    assert (
        len(cdf) == 101
        and cdf["y"].is_monotonic_increasing
        and cdf["y"].iloc[-1] == pytest.approx(expected.max_tardiness_s)
    )
    timeline = rows[(rows["part"] == "timeline") & (rows["key"] == cell["key"])]
    assert len(timeline) == 96 and (timeline["y"] <= 64 + 1e-9).all() and (timeline["y"] >= 0).all()


def test_summary_report_and_figures(tiny: tuple[ClusterStudy, pd.DataFrame, Path], tmp_path: Path) -> None:
    study, rows, _ = tiny
    block = study.summarize(rows)["cluster"]["synthetic"]
    assert block["gpus"] == 64 and block["baseline"]["energy_saving_vs_baseline"] == 0.0
    assert block["best_energy"]["energy_kwh"] == min(r["energy_kwh"] for r in block["runs"].values())
    text = study.report(rows, tmp_path)
    assert "### synthetic" in text and "baseline (no MIG, on, default)" in text
    for name in ("cluster_energy_components.png", "cluster_tardiness_cdf.png", "cluster_gpus_on.png"):
        assert (tmp_path / name).stat().st_size > 10_000
        assert f"figures/{name}" in text
