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
            "--ensemble",
            "2",
            "--json",
        ]
    )
    assert status == 0
    trained = json.loads(capsys.readouterr().out)
    assert trained["timesteps"] == 400 and trained["networks"] == 2  # 200 steps for each of 2 networks
    assert Path(trained["model"]).is_file() and (out / "dqn_model-member1.zip").is_file()
    status = main(
        [
            "mig",
            "evaluate",
            "--model",
            trained["model"],
            "--days",
            "1",
            "--methods",
            "static,day-night,dynamic,dynamic-rollout",
            "--json",
        ]
    )
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["methods"]) == {"static", "day-night", "dynamic", "dynamic-rollout"}
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


def test_presets_and_the_et_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "model"
    argv = ["mig", "train", "--timesteps", "100", "--seed", "2", "--et-coefficient", "3e-8", "--json"]
    argv += ["--ensemble", "1"]
    assert main([*argv, "--out", str(out), "--preset", "literal"]) == 0
    trained = json.loads(capsys.readouterr().out)
    assert trained["preset"] == "literal" and trained["rate_multiplier"] == 1.0
    from wattsched.rl.dqn import load_config

    assert load_config(trained["model"]).env.rate_multiplier == 1.0  # the preset reached the environment
    evaluate = ["mig", "evaluate", "--model", trained["model"], "--days", "1", "--json"]
    # the model's own preset by default; the ET pool is stated; the model is read once
    import wattsched.rl.dqn as dqn

    loads: list[object] = []
    real_load = dqn.load_model
    monkeypatch.setattr(dqn, "load_model", lambda path: loads.append(path) or real_load(path))
    assert main([*evaluate, "--methods", "no-mig,static,dynamic"]) == 0
    assert len(loads) == 1
    own = json.loads(capsys.readouterr().out)
    assert own["preset"] == "literal" and own["et_coefficient_source"] == "pooled"
    assert own["et_pool"] == ["no-mig", "static", "dynamic"]
    # a fixed a: ET of a method no longer depends on which others are evaluated
    fixed = ["--et-coefficient", "2e-8", "--preset", "paper"]
    assert main([*evaluate, *fixed, "--methods", "static"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert main([*evaluate, *fixed, "--methods", "static,no-mig,day-night"]) == 0
    together = json.loads(capsys.readouterr().out)
    assert alone["preset"] == "paper" and alone["rate_multiplier"] == 2.5
    assert alone["et_coefficient"] == 2e-8 and alone["et_pool"] == []
    assert alone["et_coefficient_source"] == "given"
    assert alone["methods"]["static"] == together["methods"]["static"]
    # by hand: ET = (a·E + T/60) / (a + 1)
    static = alone["methods"]["static"]
    by_hand = (2e-8 * static["energy_j"] + static["avg_tardiness_s"] / 60) / (1 + 2e-8)
    assert static["et"] == pytest.approx(by_hand)
    assert main([*evaluate, "--et-coefficient", "pilot", "--methods", "day-night"]) == 0
    pilot = json.loads(capsys.readouterr().out)
    assert pilot["et_coefficient_source"] == "pilot" and pilot["et_coefficient"] > 0
