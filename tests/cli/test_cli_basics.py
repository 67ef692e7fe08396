"""The CLI basics of issue 13 item 4: --version, python -m wattsched, -v/-q anywhere, did-you-mean, help
texts with defaults, ET in mig run, dvfs run --dvfs both, one JSON style, warnings, directories."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wattsched.cli import build_parser, main, version
from wattsched.cli._output import json_text
from wattsched.cli.mig_run import REFERENCE_ET_COEFFICIENT, reference_et_pool
from wattsched.metrics import et_coefficient

RUN = ["mig", "run", "--config", "3", "--policy", "edf-fs", "--rate", "0.3", "--hours", "1", "--seed", "2"]
OVERLOADED = ["mig", "run", "--config", "4", "--policy", "llf", "--rate", "3", "--hours", "1", "--seed", "1"]


def cli(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["--version"]) == 0
    assert capsys.readouterr().out == f"wattsched {version()}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", version())


def test_python_dash_m_wattsched_is_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wattsched", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout == f"wattsched {version()}\n"
    bad = subprocess.run(
        [sys.executable, "-m", "wattsched", "mgi"], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2 and "did you mean 'mig'" in bad.stderr


@pytest.mark.parametrize("where", [0, 2, -1])
def test_quiet_anywhere_silences_the_warning(where: int, capsys: pytest.CaptureFixture[str]) -> None:
    argv = list(OVERLOADED)
    argv.insert(where if where >= 0 else len(argv), "-q")
    assert cli(argv) == 0
    assert capsys.readouterr().err == ""


def test_warning_is_one_stderr_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([*OVERLOADED, "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["late_jobs"] > 0.9 * result["jobs"]
    assert err.count("\n") == 1 and err.startswith("wattsched: warning: ")
    assert f"{result['late_jobs']} of {result['jobs']} jobs" in err and "overloads configuration 4" in err


def test_no_warning_when_most_jobs_are_on_time(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([*RUN, "--json"]) == 0
    out, err = capsys.readouterr()
    assert 0 < json.loads(out)["late_jobs"] <= 0.9 * json.loads(out)["jobs"] and err == ""


def test_verbose_anywhere_is_accepted_and_counted(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["mig", "configs", "-v", "--list-gpus"]) == 0
    assert cli(["-vv", "mig", "configs", "--list-gpus"]) == 0
    assert "a100-40gb" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["mgi", "run"], "did you mean 'mig'"),
        (["mig", "rnu"], "did you mean 'run'"),
        ([*RUN, "--polcy", "llf"], "did you mean '--policy'"),
        ([*RUN, "--jsno"], "did you mean '--json'"),
        (["reproduce", "--scale", "quik"], "did you mean 'quick'"),
        (["mig", "run", "--config", "3", "--policy", "edf_fs", "--rate", "1"], "did you mean 'edf-fs'"),
        (
            ["mig", "run", "--config", "3", "--policy", "edf-fs", "--profile", "alibaba-dya"],
            "did you mean 'alibaba-day'",
        ),
        (["mig", "configs", "--gpu", "a100-40g"], "did you mean 'a100-40gb'"),
        (["schema", "trcae"], "did you mean 'trace'"),
        # A mistyped required option: argparse reports it missing; the hint names the typo.
        (
            ["mig", "run", "--polcy", "llf", "--config", "3"],
            "'--polcy' is not an option (did you mean '--policy'",
        ),
        (
            ["mig", "run", "--config=3", "--policyy=llf"],
            "'--policyy' is not an option (did you mean '--policy'",
        ),
    ],
)
def test_did_you_mean(argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and suggestion in err, err


def _actions() -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    def walk(
        parser: argparse.ArgumentParser, path: str
    ) -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction):
                yield path, parser, action

    yield from walk(build_parser(None), "wattsched")


def test_the_whole_tree_is_built() -> None:
    commands = {path for path, _, _ in _actions()}
    assert {
        "wattsched mig run",
        "wattsched dvfs run",
        "wattsched mig day",
        "wattsched schema",
        "wattsched gpu calibrate",
        "wattsched cluster run",
    } <= commands
    assert len(commands) > 25


def test_every_option_has_help_and_shows_its_default() -> None:
    missing, no_default = [], []
    for path, parser, action in _actions():
        name = f"{path} {'/'.join(action.option_strings) or action.dest}"
        if not action.help:
            missing.append(name)
        text = parser.formatter_class(prog=parser.prog)._get_help_string(action) or ""  # type: ignore[attr-defined]
        shown = action.default not in (None, False, argparse.SUPPRESS, []) and not isinstance(
            action, argparse._CountAction
        )
        if action.option_strings and shown and "default" not in text:
            no_default.append(name)
    assert missing == [] and no_default == []


def test_defaults_appear_in_the_rendered_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["dvfs", "run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: edl)" in text and "(default 2048," in text and "(default: wide)" in text


def test_help_texts_cite_no_file_outside_the_package() -> None:
    outside = re.compile(r"CONTRACT|README|papers\.md|shared/|docs/|benchmarks/")
    texts = [action.help or "" for _, _, action in _actions()]
    for _, parser, _ in _actions():
        texts.append(parser.description or "")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                texts += [choice.help or "" for choice in action._choices_actions]
    cited = [t for t in texts if outside.search(t)]
    assert cited == []


def test_mig_run_reports_et_at_the_reference_coefficient(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([*RUN, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    a = REFERENCE_ET_COEFFICIENT
    assert result["et_coefficient"] == a and "reference pool" in result["et_reference"]
    expected = (a * result["energy_j"] + result["avg_tardiness_s"] / 60.0) / (a + 1.0)
    assert result["et"] == pytest.approx(expected, rel=1e-12)
    assert cli(RUN) == 0
    text = capsys.readouterr().out
    assert re.search(r"^ET\s+\S+ at a = 7\.36509e-08 /J \(reference pool", text, re.M), text


def test_mig_run_et_with_a_given_coefficient(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([*RUN, "--json", "--et-coefficient", "1e-6"]) == 0
    result = json.loads(capsys.readouterr().out)
    expected = (1e-6 * result["energy_j"] + result["avg_tardiness_s"] / 60.0) / (1e-6 + 1.0)
    assert result["et"] == pytest.approx(expected, rel=1e-12)
    assert result["et_coefficient"] == 1e-6 and result["et_reference"] == "--et-coefficient"
    assert cli([*RUN, "--et-coefficient", "-1"]) == 2


def test_reference_coefficient_is_what_its_pool_gives() -> None:
    energy_j, tardiness_s = reference_et_pool()
    assert len(energy_j) == 120
    assert et_coefficient(energy_j, tardiness_s) == pytest.approx(REFERENCE_ET_COEFFICIENT, rel=1e-12)


DVFS = ["dvfs", "run", "--mode", "offline", "--util", "1.0", "--pairs", "64", "--seed", "3", "--json"]


def test_dvfs_both_reports_the_saving(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([*DVFS, "--dvfs", "both"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert cli([*DVFS, "--dvfs", "on"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert cli([*DVFS, "--dvfs", "off"]) == 0
    off = json.loads(capsys.readouterr().out)
    for key in ("energy_total_j", "energy_run_j", "pairs_used", "deadline_misses"):
        assert both["on"][key] == on[key] and both["off"][key] == off[key]
    saved = off["energy_total_j"] - on["energy_total_j"]
    assert both["energy_saved_j"] == pytest.approx(saved)
    assert both["energy_saving"] == pytest.approx(saved / off["energy_total_j"])
    assert 0 < both["energy_saving"] < 1  # DVFS saves energy on this set
    assert cli([*DVFS[:-1], "--dvfs", "both"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"^energy_saving\s+\d+\.\d\d% of the energy without DVFS$", text, re.M)


def test_capacity_exceeded_warns(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["dvfs", "run", "--mode", "offline", "--util", "4.0", "--pairs", "64", "--seed", "1", "--json"]
    assert cli(argv) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["capacity_exceeded"] is True and result["pairs_used"] > 64
    used = result["pairs_used"]
    assert err == (
        f"wattsched: warning: the schedule used {used} pairs, more than --pairs 64: "
        "tasks that found no free pair opened new ones (--strict-capacity keeps to --pairs and "
        "makes them late instead)\n"
    )
    assert cli([*argv, "--strict-capacity"]) == 0
    assert capsys.readouterr().err == ""


def test_speeds_of_another_gpu_warn(
    repo_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [
        "mig",
        "import",
        "--format",
        "philly",
        "--input",
        str(repo_data / "traces" / "philly.csv"),
        "--day",
        "40",
        "--target-rate",
        "0.1",
        "--scaling",
        "measured",
        "--speeds",
        str(repo_data / "mig-profiles" / "slice_speed.csv"),
        "--json",
    ]
    assert cli([*base, "--gpu", "h200-141gb", "-o", str(tmp_path / "h.csv")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("wattsched: warning: --speeds ")
    assert "another GPU (miso (A100), parvagpu (A100)) than --gpu h200-141gb" in err
    assert cli([*base, "--gpu", "a100-80gb", "-o", str(tmp_path / "a.csv")]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["mig", "run", "--config", "3", "--policy", "edf-fs", "--trace", "{d}"],
        ["mig", "generate", "--rate", "1", "-o", "{d}"],
        [*RUN, "--jobs-out", "{d}"],
        ["dvfs", "solve", "--tasks", "{d}", "-o", "x.csv"],
        ["mig", "import-config", "{d}"],
        ["mig", "configs", "--gpu", "{d}"],
    ],
)
def test_a_directory_given_as_a_file_is_named_as_such(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    assert cli([a.replace("{d}", str(folder)) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "is a directory" in err and str(folder) in err


def test_one_json_style() -> None:
    assert json_text({"b": 1, "a": [float("nan"), (1, 2)], 3: {"z": float("inf")}}) == (
        '{"3": {"z": null}, "a": [null, [1, 2]], "b": 1}\n'
    )


@pytest.mark.parametrize(
    "argv",
    [
        [*RUN, "--json"],
        ["mig", "configs", "--json"],
        ["mig", "configs", "--list-gpus", "--json"],
        ["mig", "plan", "--from", "3", "--to", "4", "--json"],
        DVFS,
    ],
)
def test_every_json_output_has_the_one_style(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(argv) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out == json_text(json.loads(out))


def test_schema_lists_and_describes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["schema"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["trace", "tasks", "settings", "jobs", "timeline", "sweep"]
    for name, column in [
        ("trace", "dur_7g_s"),
        ("tasks", "gamma_w"),
        ("jobs", "energy_j"),
        ("timeline", "slice_start"),
        ("sweep", "configurations"),
        ("settings", "feasible"),
    ]:
        assert cli(["schema", name]) == 0
        assert column in capsys.readouterr().out


def test_dvfs_fit_warns_on_data_of_another_gpu(
    unshipped: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data = unshipped("dvfs-measurements/gtx2070s.csv").parent
    assert cli(["dvfs", "fit", "--data", str(data / "gtx2070s.csv"), "--json"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("wattsched: warning: --data ")
    assert "--gpu gtx1080ti's default clocks (core 1800 MHz, memory 5000 MHz" in err
    assert "core 1680-2080 MHz, memory 5800-7300 MHz" in err
    for name, gpu in (("gtx2070s.csv", "rtx2070s"), ("gtx1080ti.csv", "gtx1080ti")):
        assert cli(["dvfs", "fit", "--data", str(data / name), "--gpu", gpu, "--json"]) == 0
        assert capsys.readouterr().err == ""
