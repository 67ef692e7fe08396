from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from wattsched.errors import ConfigError, UnknownNameError
from wattsched.experiments.executors import LocalExecutor
from wattsched.experiments.grid import load_grid_config
from wattsched.experiments.runner import run_study
from wattsched.studies.table2 import BUSY_COLUMNS, DEFAULT_CONFIG, Table2Study, run_queue

POLICIES = ["edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf"]


def test_shipped_table2_configuration() -> None:
    config = load_grid_config(DEFAULT_CONFIG)
    assert config.policies == ("edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf")
    assert config.configurations is None and config.gpu == "a100-40gb"  # every configuration of the GPU
    assert config.configuration_ids() == tuple(range(1, 13))
    assert [(c.rate_per_min, c.inference_share) for c in config.conditions] == [
        (0.5, 0.8),
        (0.1, 0.8),
        (0.75, 0.8),
        (0.5, 0.2),
    ]
    assert config.iterations.paper == 250 and config.hours == 24.0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table2Study, pd.DataFrame]:
    """The paper preset: all 4 conditions × 5 policies × 12 configurations on one 1-hour queue each."""
    study = Table2Study(iterations=1, hours=1.0, variants=["paper"])
    out = tmp_path_factory.mktemp("table2")
    run = run_study(study, "quick", out, LocalExecutor(workers=2), progress=False)
    return study, run.rows


def test_cells_share_one_queue_per_condition_and_iteration() -> None:
    study = Table2Study(iterations=3)
    cells = study.cells("paper")
    # paper and literal on 4 conditions; slice-aware (both presets) and the H200 on the default condition
    assert len(cells) == (4 + 4 + 1 + 1 + 1) * 3
    assert [c.key for c in cells[:3]] == ["paper/default/i0000", "paper/default/i0001", "paper/default/i0002"]
    paper = [c for c in cells if c.variant == "paper"]
    assert len({c.seed for c in paper}) == 12
    assert paper[0].policies == tuple(POLICIES) and paper[0].configurations == tuple(range(1, 13))
    assert Table2Study().cells("paper")[0] == cells[0]  # the paper scale only adds iterations
    # presets fix the queue length (CONTRACT §4); every variant draws the same queue seeds
    hours = {c.variant: c.hours for c in cells}
    assert hours == {
        "paper": 8.0,
        "literal": 24.0,
        "paper+slice-aware": 8.0,
        "literal+slice-aware": 24.0,
        "paper+h200-141gb": 8.0,
    }
    seeds = {(c.variant, c.condition, c.iteration): c.seed for c in cells}
    for (_, condition, iteration), seed in seeds.items():
        assert seed == seeds[("paper", condition, iteration)]
    rules = {c.variant: c.deadline_rule for c in cells}
    assert rules["paper+slice-aware"] == "slice-aware" and rules["paper"] == "p1"
    h200 = [c for c in cells if c.gpu == "h200-141gb"]
    assert {c.condition for c in h200} == {"default"} and len(h200[0].configurations) == 12


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError, match="unknown policy 'fifo'"):
        Table2Study(policies=["fifo"])
    with pytest.raises(ConfigError, match="hours"):
        Table2Study(hours=-1.0)
    with pytest.raises(ConfigError, match="unknown table2 conditions"):
        Table2Study(conditions=["rate-9"])
    with pytest.raises(ConfigError, match="unknown table2 variants"):
        Table2Study(variants=["paper+x"])
    with pytest.raises(UnknownNameError, match="unknown preset 'bogus'"):
        Table2Study(preset="bogus")
    only = Table2Study(conditions=["rate-0.1"], iterations=1, variants=["paper"]).cells("quick")
    assert [c.condition for c in only] == ["rate-0.1"]
    # a variant limited to conditions that were left out contributes no cells
    left_out = Table2Study(conditions=["rate-0.1"], iterations=1, variants=["paper+slice-aware"])
    assert left_out.cells("quick") == []


def test_rows_of_the_tiny_study(tiny: tuple[Table2Study, pd.DataFrame]) -> None:
    _, rows = tiny
    assert len(rows) == 4 * 5 * 12
    assert set(rows["variant"]) == {"paper"} and set(rows["gpu"]) == {"a100-40gb"}
    for _, cell in rows.groupby("cell"):
        assert cell["jobs"].nunique() == 1 and cell["seed"].nunique() == 1  # every run saw the same queue
    # busy-time levels cover the whole run: they sum to end_s
    assert (rows[list(BUSY_COLUMNS)].sum(axis=1) - rows["end_s"]).abs().max() < 1e-6 * rows["end_s"].max()
    # On configuration 1 (one 7g slice) EDF-FS and EDF-SS make the same choices (papers.md §A.8: a tie).
    one = rows[rows["config"] == "1"].set_index(["cell", "policy"])
    for cell in rows["cell"].unique():
        assert one.loc[(cell, "edf-fs"), "energy_j"] == one.loc[(cell, "edf-ss"), "energy_j"]
        assert one.loc[(cell, "edf-fs"), "avg_tardiness_s"] == one.loc[(cell, "edf-ss"), "avg_tardiness_s"]
    assert (rows["late_inference_jobs"] <= rows["late_jobs"]).all()


def test_a_cell_is_a_pure_function() -> None:
    cell = Table2Study(iterations=1, hours=0.5, configurations=[3], policies=["llf"]).cells("quick")[0]
    assert run_queue(cell) == run_queue(cell)


def synthetic_rows() -> pd.DataFrame:
    """Default condition, one configuration, one queue; energies and tardiness chosen by hand."""
    energy = {"edf-fs": 1000.0, "edf-ss": 2000.0, "llf": 3000.0, "lalf": 2000.0, "edf-ss-restricted": 1000.0}
    tardy_min = {"edf-fs": 1.0, "edf-ss": 2.0, "llf": 0.0, "lalf": 1.0, "edf-ss-restricted": 3.0}
    rows = []
    for policy in POLICIES:
        row = {
            "variant": "paper",
            "preset": "paper",
            "deadline_rule": "p1",
            "gpu": "a100-40gb",
            "condition": "default",
            "iteration": 0,
            "seed": 1,
            "policy": policy,
            "config": "2",
            "energy_j": energy[policy],
            "avg_tardiness_s": 60 * tardy_min[policy],
            "max_tardiness_s": 0.0,
            "late_jobs": 0,
            "late_inference_jobs": 0,
            "jobs": 5,
            "preemptions": 4,
            "end_s": 10.0,
        }
        row.update({c: (10.0 if c == "busy_time_u0_s" else 0.0) for c in BUSY_COLUMNS})
        rows.append(row)
    return pd.DataFrame(rows).assign(cell="paper/default/i0000")


def test_summary_pools_the_four_paper_algorithms() -> None:
    blocks = Table2Study().summarize(synthetic_rows())
    # Pool = the 4 paper algorithms: s̄ = 2000 J, t̄ = 1 min, so a = 1 / (2·2000) = 2.5e-4 per J.
    # ET = (a·x + y)/(a + 1): edf-fs (0.25 + 1)/1.00025, edf-ss (0.5 + 2)/1.00025, llf 0.75/1.00025,
    # lalf 1.5/1.00025; restricted (not in the pool, same a) (0.25 + 3)/1.00025.
    expected = {"edf-fs": 1.25, "edf-ss": 2.5, "llf": 0.75, "lalf": 1.5, "edf-ss-restricted": 3.25}
    assert blocks["table2"] == pytest.approx({p: v / 1.00025 for p, v in expected.items()}, rel=1e-12)
    assert blocks["table2_meta"]["a"] == pytest.approx(2.5e-4)
    assert blocks["table2_meta"]["ranking"] == ["llf", "edf-fs", "lalf", "edf-ss"]
    assert blocks["table2_detail"]["edf-ss"] == {
        "energy_j": 2000.0,
        "avg_tardiness_s": 120.0,
        "preemptions": 4.0,
    }
    checks = blocks["table2_checks"]
    assert checks["ranking"]["ok"] is False and checks["ranking"]["measured"].startswith("llf 0.75")
    assert checks["restricted_et"]["ok"] is False  # 3.25 vs 2.5: +30 %
    assert checks["rate_0_1"]["ok"] is None  # no λ 0.1 rows in this grid
    rows = synthetic_rows()
    without = Table2Study().summarize(rows[rows["policy"] != "edf-ss-restricted"])["table2_checks"]
    assert without["restricted_preemptions"] == {
        "ok": None,
        "claim": checks["restricted_preemptions"]["claim"],
        "measured": "not measured (no 'edf-ss-restricted' in this run)",
    }


def test_summary_and_report_of_the_tiny_study(tiny: tuple[Table2Study, pd.DataFrame], tmp_path: Path) -> None:
    study, rows = tiny
    blocks = study.summarize(rows)
    assert sorted(blocks["table2"]) == sorted(POLICIES)
    assert set(blocks["table2_conditions"]) == {"default", "rate-0.1", "rate-0.75", "inference-20"}
    assert len(blocks["table2_per_config"]["default"]) == 12
    assert {c["ok"] for c in blocks["table2_checks"].values()} <= {True, False}  # all measurable here
    assert "cfg 1 EDF gap 0.0%" in blocks["table2_checks"]["ties_uniform_cfgs"]["measured"]
    text = study.report(rows, tmp_path)
    assert "Table II" in text and "| edf-ss |" in text and ("✔" in text or "✗" in text)
    assert "agrees with P1's Table II" in text or "disagrees with P1's Table II" in text
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "table2_fig10_et_default.png",
        "table2_fig4_preemptions.png",
        "table2_fig6_utilisation.png",
        "table2_fig7_et_rate-0.1.png",
        "table2_fig8_et_rate-0.75.png",
        "table2_fig9_et_inference-20.png",
    ]
    for name in names:
        assert f"figures/{name}" in text and (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_variants_fill_the_preset_rule_and_gpu_blocks(tmp_path: Path) -> None:
    """Every default variant on one 30-minute default-condition queue, two configurations."""
    study = Table2Study(iterations=1, hours=0.5, conditions=["default"], configurations=[1, 3])
    run = run_study(study, "quick", tmp_path, LocalExecutor(workers=1), progress=False)
    rows = run.rows
    blocks = study.summarize(rows)
    assert set(blocks["presets"]) == {"paper", "literal"}
    assert set(blocks["deadline_rules"]) == {"p1", "slice-aware"}
    assert set(blocks["gpus"]) == {"a100-40gb", "h200-141gb"}
    assert blocks["table2"] == blocks["presets"]["paper"]["table2"]  # the default preset fills the top level
    assert blocks["table2_meta"]["preset"] == "paper"
    literal = Table2Study(
        iterations=1, hours=0.5, conditions=["default"], configurations=[1, 3], preset="literal"
    )
    assert literal.summarize(rows)["table2"] == blocks["presets"]["literal"]["table2"]
    # restricted EDF-SS's ET cost, by hand from the table
    entry = blocks["deadline_rules"]["slice-aware"]["paper"]
    assert entry["restricted_cost"] == pytest.approx(
        entry["table2"]["edf-ss-restricted"] / entry["table2"]["edf-ss"] - 1
    )
    # with hours overridden, both presets ran the same queue: identical tables; the rules differ
    assert blocks["presets"]["paper"]["table2"] == blocks["presets"]["literal"]["table2"]
    assert entry["table2"] != blocks["deadline_rules"]["p1"]["paper"]["table2"]
    # same jobs on both GPUs and a slice's speed depends on its compute size only: same tardiness
    a100 = rows[rows["variant"] == "paper"].set_index(["policy", "config"]).sort_index()
    h200 = rows[rows["variant"] == "paper+h200-141gb"].set_index(["policy", "config"]).sort_index()
    assert a100["avg_tardiness_s"].tolist() == pytest.approx(h200["avg_tardiness_s"].tolist())
    assert (h200["energy_j"] > a100["energy_j"]).all()  # 84 W idle and up to 700 W vs 40 / 250 W
    text = study.report(rows, tmp_path / "figures")
    assert "Both presets side by side" in text and "Deadline rule" in text
