"""`wattsched sweep` on the three example files, small; `report` and `plot` read what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from wattsched.cli import main
from wattsched.experiments.sweep_run import SWEEP_RUN_COLUMNS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _sweep(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[str], str]:
    capsys.readouterr()
    assert main(["sweep", *argv]) == 0
    out, err = capsys.readouterr()
    return out.splitlines(), err


def test_policies_example_gives_24_rows_and_report_and_plot_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "policies"
    paths, err = _sweep(
        capsys,
        str(EXAMPLES / "policies.toml"),
        "--out",
        str(out_dir),
        "--hours",
        "1",
        "--csv",
        "--workers",
        "2",
    )
    assert paths == [str(out_dir / name) for name in ("runs.parquet", "runs.csv", "sweep.json")]
    assert "sweep: 24 runs (24 ran, 0 reused)" in err and "et over the whole pool (mig 24 runs, a = " in err
    runs = pd.read_parquet(out_dir / "runs.parquet")
    assert len(runs) == 24  # 2 GPUs x 3 configurations x 2 policies x 2 seeds
    assert list(runs.columns[: len(SWEEP_RUN_COLUMNS)]) == list(SWEEP_RUN_COLUMNS)
    seeds = runs.groupby(["gpu", "configuration", "policy"]).seed.apply(sorted)
    assert len(seeds) == 12 and all(s == [1, 2] for s in seeds)
    assert set(runs.gpu) == {"a100-40gb", "h200-141gb"} and set(runs.configuration) == {"3", "6", "no-mig"}
    assert set(runs.rate_multiplier) == {2.5} and set(runs.hours) == {1.0}  # preset paper, --hours 1
    pool = json.loads((out_dir / "sweep.json").read_text())
    assert pool["et_pool"]["mig"]["runs"] == 24
    assert pool["et_pool"]["mig"]["mean_et"] == pytest.approx(runs.et.mean(), rel=1e-12)
    csv = pd.read_csv(out_dir / "runs.csv", dtype={"configuration": str})
    pd.testing.assert_frame_equal(csv, runs, check_dtype=False)

    # `report` and `plot` read the folder as it is.
    capsys.readouterr()
    assert main(["report", str(out_dir)]) == 0
    page = (out_dir / "index.html").read_text()
    assert "24 runs; seeds 1, 2" in page and "ET pool (sweep.json)" in page
    assert main(["plot", str(out_dir), "--metric", "et", "energy"]) == 0
    assert sorted(p.name for p in (out_dir / "figures").iterdir()) == ["sweep_energy.png", "sweep_et.png"]

    # A re-run reuses every row.
    _, err = _sweep(capsys, str(EXAMPLES / "policies.toml"), "--out", str(out_dir), "--hours", "1")
    assert "sweep: 24 runs (0 ran, 24 reused)" in err
    assert not (out_dir / "runs.csv").exists()  # not asked for this time: no stale copy left behind


def test_partitioners_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _sweep(capsys, str(EXAMPLES / "partitioners.toml"), "--out", str(tmp_path), "--hours", "1")
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    # 2 fixed configurations + 4 partitioners, x 2 rate multipliers x 3 seeds
    assert len(runs) == 36
    assert runs.partitioner.value_counts().to_dict() == {
        "none": 12,
        "no-mig": 6,
        "static": 6,
        "day-night": 6,
        "lookahead": 6,
    }
    assert set(runs.rate_multiplier) == {1.0, 2.5}
    static = runs[runs.partitioner == "static"]
    assert set(static.configuration) == {"3"} and set(static.repartitions) == {0}
    assert (runs[runs.partitioner == "lookahead"].repartitions >= 0).all()
    # every run beside the energy bound of its jobs: one per (workload, seed), never above a run of them
    assert (runs.bound_energy_j <= runs.energy_j).all() and (runs.gap_to_bound >= 0).all()
    assert (runs.groupby(["rate_multiplier", "seed"]).bound_energy_j.nunique() == 1).all()
    assert runs.gap_to_bound.to_numpy() == pytest.approx((runs.energy_j / runs.bound_energy_j - 1).to_numpy())
    assert main(["report", str(tmp_path)]) == 0


def test_dvfs_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _sweep(capsys, str(EXAMPLES / "dvfs.toml"), "--out", str(tmp_path))
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert len(runs) == 32  # 2 loads x 2 server sizes x 2 algorithms x DVFS on/off x 2 seeds
    assert set(runs.part) == {"dvfs"} and set(runs.policy) == {"edl", "edl+dvfs", "edf-bf", "edf-bf+dvfs"}
    keys = ["util", "pairs_per_server", "algo", "seed"]
    on = runs[runs.dvfs == "on"].set_index(keys).energy_j.sort_index()
    off = runs[runs.dvfs == "off"].set_index(keys).energy_j.sort_index()
    assert ((1 - on / off) > 0.2).all()  # P2: DVFS saves a fifth or more of the energy at these loads
    pool = json.loads((tmp_path / "sweep.json").read_text())
    assert set(pool["et_pool"]) == {"dvfs"}
    assert main(["report", str(tmp_path)]) == 0


def test_yes_runs_a_sweep_over_the_limit_and_a_gpu_file_is_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wattsched.experiments import sweep_expand

    catalogue = Path(sweep_expand.__file__).parents[1] / "hardware" / "data" / "gpus" / "a100-40gb.toml"
    (tmp_path / "mine.toml").write_text(catalogue.read_text())
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'gpus = ["a100-40gb", "mine.toml"]\nconfigurations = [3]\npolicies = ["edf-fs"]\nseeds = [1, 2]\n'
        '[workload]\nprofile = "alibaba-day"\nhours = 1\n'
    )
    monkeypatch.setattr(sweep_expand, "MAX_CELLS", 3)
    capsys.readouterr()
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out")]) == 2
    assert "4 cells, more than the limit of 3" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    _sweep(capsys, str(sweep), "--out", str(tmp_path / "out"), "--yes")
    runs = pd.read_parquet(tmp_path / "out" / "runs.parquet")
    assert list(runs.gpu) == ["a100-40gb", "a100-40gb", "mine.toml", "mine.toml"]
    by_gpu = runs.set_index(["gpu", "seed"]).energy_j
    assert by_gpu["mine.toml"].tolist() == by_gpu["a100-40gb"].tolist()  # the same GPU, read from a file
