"""`wattsched advise` on a small trace of 2 servers x 2 GPUs: the table, the recommendation against the
table, the budget nobody meets, bad input, and the files of ``-o DIR``."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from wattsched.cli import main
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig_parted import import_layouts, parse_document
from wattsched.hardware.mig_plan import GpuLayouts

BASE = ["--servers", "2", "--gpus-per-server", "2", "--workers", "1"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("advise") / "jobs.csv"
    assert (
        main(
            [
                "mig",
                "generate",
                "--rate",
                "0.25",
                "--hours",
                "4",
                "--seed",
                "3",
                "--gpu",
                "h100-80gb",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    return path


@pytest.fixture(scope="module")
def h100_advice(trace: Path) -> tuple[dict[str, Any], str]:
    # Module scope (one run for several tests): capsys is per test, so capture by hand.
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert (
            main(
                [
                    "advise",
                    "--trace",
                    str(trace),
                    *BASE,
                    "--gpu",
                    "h100-80gb",
                    "--max-late-share",
                    "0.2",
                    "--json",
                ]
            )
            == 0
        )
    return json.loads(out.getvalue()), err.getvalue()


def test_json_has_the_table_the_recommendation_and_the_baseline(
    h100_advice: tuple[dict[str, Any], str],
) -> None:
    advice, _ = h100_advice
    assert {"pareto", "recommended", "baseline", "budget", "power_model", "clocks"} <= set(advice)
    rows = advice["pareto"]
    gpu = load_gpu("h100-80gb")
    # 12 configurations held all day + no-mig + day-night, x 4 placements x 2 power states (no clock
    # table), then the lookahead with the lead placement x 2 power states.
    assert len(rows) == advice["settings"] == (len(gpu.configuration_ids) + 2) * 4 * 2 + 2
    assert len({r["label"] for r in rows}) == len(rows)
    assert all(r["clocks"] is False for r in rows)  # no clock table: clocks never compared
    baseline = advice["baseline"]
    assert (baseline["partitioner"], baseline["placement"], baseline["clocks"], baseline["power_states"]) == (
        "no-mig",
        "first-fit",
        False,
        False,
    )
    assert [r["energy_j"] for r in rows] == sorted(r["energy_j"] for r in rows)


def test_recommended_meets_the_budget_and_nothing_feasible_uses_less(
    h100_advice: tuple[dict[str, Any], str],
) -> None:
    advice, _ = h100_advice
    rows, best = advice["pareto"], advice["recommended"]
    assert best["late_share"] <= 0.2
    feasible = [r for r in rows if r["late_share"] <= 0.2]
    assert [r["meets_budget"] for r in rows] == [r["late_share"] <= 0.2 for r in rows]
    assert best["energy_j"] == min(r["energy_j"] for r in feasible)
    row = next(r for r in rows if r["label"] == best["label"])
    assert row["pareto"] is True
    base = advice["baseline"]
    assert best["savings_kwh"] == pytest.approx(base["energy_kwh"] - best["energy_kwh"])
    assert best["savings_share"] == pytest.approx(1 - best["energy_j"] / base["energy_j"])
    assert [g["index"] for g in best["gpus"]] == [0, 1, 2, 3]
    assert [g["server"] for g in best["gpus"]] == [0, 0, 1, 1]


def test_pareto_flags_match_the_dominance_rule(h100_advice: tuple[dict[str, Any], str]) -> None:
    rows = h100_advice[0]["pareto"]
    points = [(r["energy_j"], r["late_share"], r["avg_tardiness_s"]) for r in rows]
    for row, point in zip(rows, points, strict=True):
        dominated = any(
            all(o <= p for o, p in zip(other, point, strict=True)) and other != point for other in points
        )
        assert row["pareto"] is not dominated
        assert row["total_tardiness_s"] == pytest.approx(row["avg_tardiness_s"] * row["jobs"])


def test_estimated_power_model_and_missing_clock_table_are_said(
    h100_advice: tuple[dict[str, Any], str],
) -> None:
    advice, err = h100_advice
    assert advice["power_model"] == "estimated" and advice["clocks"] == "unsupported"
    lines = err.strip().splitlines()
    assert any("estimated power model" in line and "h100-80gb" in line for line in lines)
    assert any("no clock table" in line for line in lines)


def test_a_budget_nobody_meets_names_the_closest_and_exits_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = tmp_path / "busy.csv"  # 3 jobs a minute for an hour on 4 GPUs: some job is late everywhere
    assert main(["mig", "generate", "--rate", "3", "--hours", "1", "--seed", "3", "-o", str(trace)]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "advise",
                "--trace",
                str(trace),
                *BASE,
                "--gpu",
                "a100-40gb",
                "--max-late-share",
                "0",
                "--max-tardiness",
                "0s",
                "--json",
            ]
        )
        == 2
    )
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = [entry for entry in err.splitlines() if "error" in entry]
    assert "no setting meets the budget" in line and "the closest is" in line
    # The closest is the setting of the table with the least excess over the budget (here: late share
    # / 1 % + worst tardiness / 60 s); the library gives the same table the command evaluated.
    from wattsched.cli.cluster import trace_jobs
    from wattsched.cluster.advise import Budget, advise
    from wattsched.cluster.spec import ClusterSpec

    jobs, horizon_s = trace_jobs(str(trace), 2)
    advice = advise(jobs, ClusterSpec.homogeneous(2, 2, "a100-40gb"), Budget(0.0, 0.0), horizon_s=horizon_s)
    assert advice.recommended is None
    least = min(o.late_share / 0.01 + o.max_tardiness_s / 60.0 for o in advice.outcomes)
    assert advice.closest.late_share / 0.01 + advice.closest.max_tardiness_s / 60.0 == pytest.approx(least)
    assert f"closest is {advice.closest.setting.label}:" in line


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--gpu", "h100-80gbb"], "h100-80gb"),
        (["--gpu", "a100-40gb", "--max-tardiness", "10 minutes"], "--max-tardiness"),
        (["--gpu", "a100-40gb", "--max-late-share", "1.5"], "--max-late-share"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    trace: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    try:
        status = main(["advise", "--trace", str(trace), *BASE, *argv])
    except SystemExit as exc:  # option values are checked by the parser, which exits
        status = int(exc.code or 0)
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def test_unknown_gpu_suggests_the_near_name(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--trace", str(trace), *BASE, "--gpu", "h100-80gbb"]) == 2
    assert "did you mean" in capsys.readouterr().err.lower()


def test_output_dir_files_exist_and_parse(
    trace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "plan"
    assert (
        main(
            [
                "advise",
                "--trace",
                str(trace),
                *BASE,
                "--gpu",
                "h200-141gb",
                "--max-late-share",
                "0.2",
                "--json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    advice = json.loads(capsys.readouterr().out)
    best = advice["recommended"]
    assert advice["clocks"] is True and advice["power_model"] == "measured"
    assert any(r["clocks"] for r in advice["pareto"])  # clock levels compared on a GPU with a clock table
    files = advice["files"]
    assert json.loads((out / "advice.json").read_text())["recommended"] == best
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    document = yaml.safe_load((out / "mig-parted.yaml").read_text())
    assert document["version"] == "v1" and document["mig-configs"]
    gpu = GpuLayouts.from_catalogue(load_gpu("h200-141gb"))
    imported = import_layouts(parse_document((out / "mig-parted.yaml").read_text(), "x"), gpu.geometry)
    assert imported
    if best["partitioner"] in ("static", "no-mig"):
        (config,) = imported  # every GPU the same layout: one entry for all devices
        assert config.devices == "all"
        expected = (
            None
            if best["partitioner"] == "no-mig"
            else gpu.configurations[[str(i) for i, _ in gpu.configurations].index(best["configuration"])][1]
        )
        assert config.layout == expected
    if best["clocks"]:
        clocks = json.loads((out / "clocks.json").read_text())
        assert clocks["lock_sm_mhz"] == best["lock_sm_mhz"] in clocks["clock_levels_mhz"]
        assert clocks["clock_levels_mhz"] == best["clock_levels_mhz"] and best["clock_levels_used"] >= 1
    else:
        assert "clocks" not in files
    if best["power_states"]:
        # H200: idle 84.4 W per GPU, 2 per server; turn-on 5,400 J per GPU; 60 s slots:
        # floor(10,800 / (168.8 * 60)) = floor(1.066) = 1 slot = 60 s.
        assert "SuspendTime=60" in (out / "slurm-power.conf").read_text()
    for name in files.values():
        assert Path(name).is_file()


def test_day_night_schedule_covers_the_day() -> None:
    from wattsched.cli.advise import _schedule
    from wattsched.cluster.advise import Setting

    gpu = load_gpu("h100-80gb")
    text = _schedule(gpu, Setting("day-night", None, "first-fit", False, False))
    assert text is not None
    rows = list(csv.DictReader(text.splitlines()))
    # The day (05:00-17:00) runs the GPU's "day" configuration, the rest of the day its "night" one.
    assert [(r["start"], r["end"], r["configuration"]) for r in rows] == [
        ("00:00", "05:00", str(gpu.role("night"))),
        ("05:00", "17:00", str(gpu.role("day"))),
        ("17:00", "24:00", str(gpu.role("night"))),
    ]
    assert rows[1]["mig_parted_config"] == f"wattsched-h100-80gb-{gpu.role('day')}"
    assert _schedule(gpu, Setting("static", "3", "first-fit", False, False)) is None
