"""`wattsched mig train` / `wattsched mig evaluate` end to end (tiny sizes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.cli import main


def test_train_then_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model"
    status = main(
        [
            "mig",
            "train",
            "--timesteps",
            "200",
            "--seed",
            "1",
            "--out",
            str(out),
            "--et-coefficient",
            "3e-8",
            "--json",
        ]
    )
    assert status == 0
    trained = json.loads(capsys.readouterr().out)
    assert trained["timesteps"] == 200 and Path(trained["model"]).is_file()
    status = main(
        [
            "mig",
            "evaluate",
            "--model",
            trained["model"],
            "--days",
            "1",
            "--methods",
            "static,day-night,dynamic",
            "--json",
        ]
    )
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["methods"]) == {"static", "day-night", "dynamic"}
    assert result["methods"]["day-night"]["repartitions"] == 2.0
    assert all(v["energy_j"] > 0 for v in result["methods"].values())


def test_user_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            ["mig", "evaluate", "--model", str(tmp_path / "none.zip"), "--days", "1", "--methods", "dynamic"]
        )
        == 2
    )
    assert "no such model file" in capsys.readouterr().err
    assert main(["mig", "evaluate", "--model", "x.zip", "--methods", "weekly"]) == 2
    assert "unknown method" in capsys.readouterr().err
