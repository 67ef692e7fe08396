"""Hostile sweep files and options: one stderr line naming the key and the file, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, lines, run_in, write

GOOD = lines(
    'gpus = ["a100-40gb"]',
    "configurations = [3]",
    'policies = ["edf-fs"]',
    "seeds = [1]",
    "[workload]",
    'profile = "alibaba-day"',
    "hours = 1",
)


def _replace(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


@pytest.mark.parametrize(
    ("content", "pieces"),
    [
        (
            _replace('policies = ["edf-fs"]', 'polices = ["edf-fs"]'),
            ["unknown key 'polices'", "did you mean 'policies'"],
        ),
        (GOOD + "rate_multiplyer = 2\n", ["unknown key 'workload.rate_multiplyer'", "'rate_multiplier'"]),
        (GOOD + "[dvfs]\nutil = [1.0]\nalgo = ['edl']\n", ["unknown key 'dvfs.algo'", "'algos'"]),
        (_replace("seeds = [1]", "seeds = []"), ["key 'seeds'", "at least 1 item"]),
        (_replace("configurations = [3]", "configurations = []"), ["key 'configurations'", "at least 1"]),
        (_replace("seeds = [1]", ""), ["key 'seeds' is required"]),
        (_replace("seeds = [1]", "seeds = [1, 1]"), ["key 'seeds'", "duplicate"]),
        (_replace("seeds = [1]", "seeds = [-1]"), ["key 'seeds'", "[0, 2**32)", "[-1]"]),
        (
            _replace("configurations = [3]", "configurations = [13]"),
            ["key 'configurations'", "GPU 'a100-40gb' has no configuration 13", "valid: 1, 2"],
        ),
        (
            _replace('gpus = ["a100-40gb"]', 'gpus = ["a100-40gb", "h200-141gb"]').replace("[3]", "[5, 13]"),
            ["key 'configurations'", "no configuration 13"],
        ),
        (_replace('gpus = ["a100-40gb"]', 'gpus = ["b200"]'), ["key 'gpus'", "b200"]),
        (
            _replace('gpus = ["a100-40gb"]', 'gpus = ["mine.toml"]'),
            ["key 'gpus'", "no such file 'mine.toml'"],
        ),
        (_replace('policies = ["edf-fs"]', 'policies = ["edf-fz"]'), ["key 'policies'", "edf-fz"]),
        (
            GOOD.replace("[workload]", 'partitioners = ["dynamic"]\n[workload]'),
            ["key 'partitioners'", "unknown partitioner 'dynamic'", "valid: no-mig, static"],
        ),
        (
            _replace('profile = "alibaba-day"', 'profile = "alibaba-dya"'),
            ["key 'workload.profile'", "did you mean 'alibaba-day'"],
        ),
        (_replace('profile = "alibaba-day"', 'trace = "jobs.csv"'), ["key 'workload.hours'", "generated"]),
        (_replace("hours = 1", "rate_per_min = 0.5"), ["key 'workload'", "exactly one of"]),
        (_replace("hours = 1", "hours = -1"), ["key 'workload.hours'", "greater than 0"]),
        (_replace("hours = 1", "rate_multiplier = []"), ["key 'workload.rate_multiplier'", "at least 1"]),
        # Types are strict: a quoted number, a list for a scalar, a number for a name are errors, not coerced.
        (_replace("hours = 1", 'hours = "24"'), ["key 'workload.hours'", "valid number"]),
        (_replace("hours = 1", "hours = [24]"), ["key 'workload.hours'", "valid number"]),
        (_replace("hours = 1", 'rate_multiplier = "2"'), ["key 'workload.rate_multiplier'"]),
        (
            _replace("hours = 1", 'inference_share = "0.5"'),
            ["key 'workload.inference_share'", "valid number"],
        ),
        (_replace("seeds = [1]", 'seeds = ["1"]'), ["key 'seeds[0]'", "valid integer"]),
        (_replace("seeds = [1]", "seeds = [true]"), ["key 'seeds[0]'", "valid integer"]),
        (_replace("seeds = [1]", "seeds = [1.0]"), ["key 'seeds[0]'", "valid integer"]),
        (_replace('policies = ["edf-fs"]', "policies = [3]"), ["key 'policies[0]'", "valid string"]),
        ("seeds = [1]\n[dvfs]\nutil = ['1.0']\n", ["key 'dvfs.util[0]'", "valid number"]),
        ("seeds = [1]\n[dvfs]\nutil = [1.0]\ndvfs = ['yes']\n", ["key 'dvfs.dvfs[0]'", "valid boolean"]),
        ("seeds = [1]\n[dvfs]\nutil = [1.0]\npairs = ['8']\n", ["key 'dvfs.pairs[0]'", "valid integer"]),
        ("seeds = [1]\n[dvfs]\nutil = [1.0]\npairs = [-4]\n", ["key 'dvfs.pairs'", "[1, ", "got -4"]),
        (
            "seeds = [1]\n[dvfs]\nutil = [1.0]\npairs_per_server = [0]\n",
            ["key 'dvfs.pairs_per_server'", ">= 1"],
        ),
        (_replace('policies = ["edf-fs"]', ""), ["key 'policies' is required (or give 'partitioners')"]),
        (
            _replace('policies = ["edf-fs"]', 'partitioners = ["static"]'),
            ["key 'configurations' needs key 'policies'"],
        ),
        (_replace('gpus = ["a100-40gb"]', ""), ["key 'gpus' is required"]),
        ("seeds = [1]\n", ["nothing to run"]),
        (
            "seeds = [1]\n[dvfs]\nutil = [1.0]\npairs = [10]\npairs_per_server = [4]\n",
            ["key 'dvfs.pairs_per_server'", "4 does not divide pairs = 10"],
        ),
        ("seeds = [1]\n[dvfs]\nutil = [0]\n", ["key 'dvfs.util'", "> 0, got 0"]),
        ("seeds = [1]\n[dvfs]\nutil = [1.0]\ntheta = [1.5]\n", ["key 'dvfs.theta'", "(0, 1]"]),
        ("seeds = [1]\n[dvfs]\nutil = [1.0]\nalgos = ['fifo']\n", ["key 'dvfs.algos[0]'", "'edl'"]),
        ("seeds = [1\n", ["invalid TOML"]),
        (GOOD + "[[workloads]]\nprofile = 'alibaba-day'\n", ["key 'workload'", "[[workloads]] tables"]),
        (
            GOOD.replace("[workload]", "[[workloads]]") + "[[workloads]]\nrate_per_min = 0.5\nhour = 2\n",
            ["unknown key 'workloads[1].hour'", "did you mean 'hours'"],
        ),
        (
            GOOD.replace("[workload]", "[[workloads]]")
            + "[[workloads]]\nprofile = 'alibaba-day'\nhours = 1\n",
            ["two entries name the same run"],
        ),
        (
            _replace("seeds = [1]", "seeds = [" + ", ".join(map(str, range(10_001))) + "]"),
            ["10,001 cells, more than the limit of 10,000", "--yes"],
        ),
    ],
)
def test_bad_sweep_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, pieces: list[str]
) -> None:
    path = write(tmp_path / "sweep.toml", content)
    code = run_in(tmp_path, ["sweep", str(path), "--out", str(tmp_path / "out")])
    assert_one_line_error(capsys, code, f"{path}: ", *pieces)


def test_bad_paths_and_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = write(tmp_path / "sweep.toml", GOOD)
    code = run_in(tmp_path, ["sweep", str(tmp_path), "--out", str(tmp_path / "out")])
    assert_one_line_error(capsys, code, "is a directory, not a sweep file")
    code = run_in(tmp_path, ["sweep", str(tmp_path / "none.toml"), "--out", str(tmp_path / "out")])
    assert_one_line_error(capsys, code, "no such sweep file")
    code = run_in(tmp_path, ["sweep", str(sweep), "--out", str(sweep)])
    assert_one_line_error(capsys, code, "exists and is not a directory")
    code = run_in(tmp_path, ["sweep", str(sweep), "--out", str(tmp_path / "out"), "--hours", "0"])
    assert_one_line_error(capsys, code, "--hours", "expected a finite number > 0")
    code = run_in(tmp_path, ["sweep", str(sweep), "--out", str(tmp_path / "out"), "--workers", "0"])
    assert_one_line_error(capsys, code, "--workers", "expected a positive integer")
    code = run_in(
        tmp_path, ["sweep", str(sweep), "--out", str(tmp_path / "out"), "--ray-address", "127.0.0.1:1"]
    )
    assert_one_line_error(capsys, code, "--ray-address needs --executor ray")
    traced = write(
        tmp_path / "traced.toml", _replace('profile = "alibaba-day"\nhours = 1', 'trace = "t.csv"')
    )
    write(tmp_path / "t.csv", "job_id\n")
    code = run_in(tmp_path, ["sweep", str(traced), "--out", str(tmp_path / "out"), "--hours", "1"])
    assert_one_line_error(capsys, code, "--hours applies to generated workloads")
