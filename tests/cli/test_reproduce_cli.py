from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.cli import main

TINY = [
    "--only",
    "table2",
    "--iterations",
    "1",
    "--study-option",
    "table2.hours=0.5",
    "--study-option",
    "table2.configurations=[1, 3]",
    "--study-option",
    'table2.variants=["paper", "literal"]',
]


def test_reproduce_table2_quick_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(["reproduce", "--scale", "quick", "--out", str(out), "--workers", "1", *TINY]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary["table2"]) == ["edf-fs", "edf-ss", "edf-ss-restricted", "lalf", "llf"]
    assert set(summary["table2_detail"]["edf-ss"]) == {"energy_j", "avg_tardiness_s", "preemptions"}
    assert (out / "raw" / "table2.parquet").is_file() and (out / "report.md").is_file()
    assert (out / "figures" / "table2_fig4_preemptions.png").is_file()
    err = capsys.readouterr().err
    assert err.startswith(f"reproducing 1 study (table2) at quick scale into {out}; the whole run took ")
    assert "table2: 8 cells (8 run, 0 reused)" in err
    first = (out / "summary.json").read_bytes()
    # both presets are always run; the default (paper) fills the top-level keys
    assert set(summary["presets"]) == {"paper", "literal"}
    assert summary["table2"] == summary["presets"]["paper"]["table2"]
    assert summary["table2_meta"]["preset"] == "paper"
    # a second run reuses every stored cell and writes the same summary
    assert main(["reproduce", "--out", str(out), "--workers", "2", *TINY]) == 0
    assert "(0 run, 8 reused)" in capsys.readouterr().err
    assert (out / "summary.json").read_bytes() == first
    # --preset literal reuses every cell and only moves which preset fills the top level
    assert main(["reproduce", "--out", str(out), "--workers", "1", "--preset", "literal", *TINY]) == 0
    assert "(0 run, 8 reused)" in capsys.readouterr().err
    literal = json.loads((out / "summary.json").read_text())
    assert literal["table2_meta"]["preset"] == "literal" and literal["presets"] == summary["presets"]
    assert literal["table2"] == summary["presets"]["literal"]["table2"]


def test_gpu_option_sets_the_compared_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    tiny = [*TINY[:-1], 'table2.variants=["paper", "paper+h100-80gb", "paper+a100-80gb"]']
    argv = ["reproduce", "--out", str(out), "--workers", "1", "--gpu", "h100-80gb", "--gpu", "a100-80gb"]
    assert main([*argv, "--gpu", "a100-40gb", *tiny]) == 0
    summary = json.loads((out / "summary.json").read_text())
    # P1's GPU plus the two given, each at the paper preset on the same queues
    assert set(summary["gpus"]) == {"a100-40gb", "h100-80gb", "a100-80gb"}
    assert summary["gpus"]["h100-80gb"]["table2_meta"]["gpu"] == "h100-80gb"
    assert "## P1 on other GPUs" in (out / "report.md").read_text()
    # four conditions for the paper preset, the default condition for each compared GPU
    assert "table2: 6 cells (6 run, 0 reused)" in capsys.readouterr().err
    # without --gpu the default comparison (the H200) is not among these variants: refused by name
    assert main(["reproduce", "--out", str(out), "--workers", "1", *tiny]) == 2
    assert "unknown table2 variants ['paper+h100-80gb', 'paper+a100-80gb']" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "table2", "--gpu", "rtx-9090"], "unknown GPU 'rtx-9090'; the catalogue has: a100-40gb"),
        (["--only", "nope"], "unknown study 'nope'"),
        (["--ray-address", "127.0.0.1:1"], "--ray-address needs --executor ray"),
        (["--only", "table2", "--study-option", "oops"], "expects STUDY.KEY=VALUE"),
        (["--only", "table2", "--study-option", "table2.hours=-2"], "hours"),
        (["--only", "table2", "--study-option", 'table2.variants=["x"]'], "unknown table2 variants"),
    ],
)
def test_user_errors_exit_2_with_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reproduce", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("wattsched: error:")


def test_bad_worker_count_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["reproduce", "--workers", "0"])
    assert info.value.code == 2 and "expected a positive integer, got 0" in capsys.readouterr().err
