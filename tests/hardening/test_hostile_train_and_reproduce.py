"""Hostile options for `wattsched mig train|evaluate` and `wattsched reproduce`.

Each gives one stderr line and exit status 2, and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run_in


@pytest.mark.parametrize(
    ("argv", "pieces"),
    [
        (["mig", "train", "--seed", "-1", "--timesteps", "10"], ("--seed", "non-negative", "-1")),
        (["mig", "train", "--et-coefficient", "nan", "--timesteps", "10"], ("--et-coefficient", "nan")),
        (["mig", "train", "--et-coefficient", "-2", "--timesteps", "10"], ("--et-coefficient", "> 0")),
        (["mig", "train", "--timesteps", "0"], ("--timesteps", "positive")),
        (["mig", "train", "--days", "x"], ("--days", "'x'")),
        (["mig", "train", "--days", "3", "--timesteps", "3"], ("not allowed with",)),
        (["mig", "train", "--ensemble", "2", "--keep", "3", "--timesteps", "10"], ("--keep 3", "--ensemble")),
        (["mig", "train", "--ensemble", "0", "--timesteps", "10"], ("--ensemble", "0")),
        (["mig", "evaluate", "--model", "nothing.zip", "--seed", "-3"], ("--seed", "-3")),
        (["mig", "evaluate", "--model", "nothing.zip"], ("nothing.zip", "no such model")),
        (["mig", "evaluate", "--model", "nothing.zip", "--days", "0"], ("--days", "positive")),
        (["reproduce", "--workers", "0"], ("--workers", "0")),
        (["reproduce", "--scale", "huge"], ("--scale", "huge")),
        (["reproduce", "--only", "nope"], ("unknown study 'nope'", "table2")),
        (["reproduce", "--executor", "slurm"], ("--executor", "slurm")),
        (["reproduce", "--preset", "bogus"], ("--preset", "bogus", "paper")),
        (["mig", "train", "--preset", "bogus", "--timesteps", "10"], ("unknown preset 'bogus'", "literal")),
        (
            ["mig", "train", "--deadline-rule", "slice-aware", "--timesteps", "10"],
            ("--deadline-rule p1 only",),
        ),
        (["mig", "evaluate", "--model", "nothing.zip", "--preset", "bogus"], ("unknown preset 'bogus'",)),
        (
            ["mig", "evaluate", "--model", "nothing.zip", "--et-coefficient", "-1"],
            ("--et-coefficient", "> 0"),
        ),
        (
            ["mig", "evaluate", "--model", "nothing.zip", "--et-coefficient", "big"],
            ("--et-coefficient", "'big'"),
        ),
        (
            ["mig", "evaluate", "--model", "nothing.zip", "--deadline-rule", "x"],
            ("--deadline-rule 'x'", "p1"),
        ),
        (
            ["mig", "evaluate", "--model", "nothing.zip", "--methods", "static", "--static-config", "99"],
            ("unknown configuration '99'",),
        ),
        (["mig", "evaluate", "--model", "nothing.zip", "--selection-days", "0"], ("--selection-days", "0")),
    ],
)
def test_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], pieces: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    extra = ["--out", str(out / "results")] if argv[0] == "reproduce" or argv[1] == "train" else []
    code = run_in(tmp_path, [*argv, *extra])
    assert_one_line_error(capsys, code, *pieces)
    assert list(out.iterdir()) == []


def test_evaluate_refuses_a_file_that_is_not_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "model.zip"
    fake.write_bytes(b"\x00\x01 not a zip")
    code = run_in(tmp_path, ["mig", "evaluate", "--model", str(fake)])
    assert_one_line_error(capsys, code, "model.zip", "not a stable-baselines3 DQN model")


def test_reproduce_onto_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "taken"
    target.write_text("keep me")
    code = run_in(tmp_path, ["reproduce", "--only", "dvfs", "--out", str(target)])
    assert_one_line_error(capsys, code, "taken")
    assert target.read_text() == "keep me"
