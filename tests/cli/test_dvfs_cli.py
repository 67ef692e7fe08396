"""`wattsched dvfs generate|solve|run|fit` end to end through ``wattsched.cli.main``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from wattsched.cli import main

RUN_KEYS = {
    "energy_total_j",
    "energy_run_j",
    "energy_idle_j",
    "energy_overhead_j",
    "tasks",
    "deadline_misses",
    "pairs_used",
    "turn_ons",
}


def test_generate_then_solve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks.csv"
    assert (
        main(["dvfs", "generate", "--mode", "offline", "--util", "0.1", "--pairs", "64", "-o", str(tasks)])
        == 0
    )
    out = tmp_path / "solved.parquet"
    assert main(["dvfs", "solve", "--tasks", str(tasks), "-o", str(out)]) == 0
    frame = pd.read_parquet(out)
    assert len(frame) == 6
    for column in ("v", "f_core", "f_mem", "time_s", "power_w", "energy_j", "feasible"):
        assert column in frame.columns
    assert frame["feasible"].all()
    assert (frame["time_s"] <= frame["deadline_s"] - frame["arrival_s"] + 1e-6).all()
    assert (frame["energy_j"] - frame["time_s"] * frame["power_w"]).abs().max() < 1e-6


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_run_json(capsys: pytest.CaptureFixture[str], mode: str) -> None:
    code = main(
        [
            "dvfs",
            "run",
            "--mode",
            mode,
            "--util",
            "0.3",
            "--pairs",
            "64",
            "--pairs-per-server",
            "4",
            "--algo",
            "edl",
            "--theta",
            "0.7",
            "--dvfs",
            "on",
            "--seed",
            "3",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= RUN_KEYS
    parts = data["energy_run_j"] + data["energy_idle_j"] + data["energy_overhead_j"]
    assert data["energy_total_j"] == pytest.approx(parts)
    assert data["deadline_misses"] == 0


def test_run_from_task_file_matches_generated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "day.csv"
    main(
        [
            "dvfs",
            "generate",
            "--mode",
            "online",
            "--util",
            "0.2",
            "--pairs",
            "32",
            "--seed",
            "5",
            "-o",
            str(tasks),
        ]
    )
    capsys.readouterr()
    common = ["dvfs", "run", "--mode", "online", "--pairs", "32", "--algo", "bin", "--dvfs", "off", "--json"]
    main([*common, "--tasks", str(tasks)])
    from_file = json.loads(capsys.readouterr().out)
    main([*common, "--util", "0.2", "--seed", "5"])
    generated = json.loads(capsys.readouterr().out)
    assert from_file["energy_total_j"] == pytest.approx(generated["energy_total_j"], rel=1e-9)


def test_user_errors_print_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "day.csv"
    main(["dvfs", "generate", "--mode", "online", "--util", "0.2", "--pairs", "32", "-o", str(tasks)])
    capsys.readouterr()
    cases = [
        ["dvfs", "run", "--mode", "offline", "--tasks", str(tasks)],  # online arrivals in offline mode
        ["dvfs", "run", "--util", "1", "--theta", "0"],
        ["dvfs", "run", "--util", "-1"],
        ["dvfs", "run", "--util", "1", "--pairs-per-server", "0"],
        ["dvfs", "solve", "--tasks", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "o.csv")],
        ["dvfs", "solve", "--tasks", str(tasks), "-o", str(tmp_path / "o.json")],
        ["dvfs", "run", "--util", "1", "--gpu", "a100"],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("wattsched: error:") and "\n" not in err, err
    main(["dvfs", "run", "--mode", "offline", "--tasks", str(tasks)])
    assert "day.csv, row" in capsys.readouterr().err


def test_fit(unshipped: Callable[[str], Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = unshipped("dvfs-measurements/gtx1080ti.csv")
    assert main(["dvfs", "fit", "--data", str(data), "--json", "-o", str(tmp_path / "fit.csv")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["applications"]) == 30
    assert 0 < result["mean_saving_narrow"] < result["mean_saving_wide"]
    assert len(pd.read_csv(tmp_path / "fit.csv")) == 30


def _json_run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(["dvfs", "run", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_reproduce_hkbu_equals_the_authors_code(capsys: pytest.CaptureFixture[str]) -> None:
    """The exported task set and their code's output (tests/dvfs/data): online EDL, DVFS on, l = 16."""
    data = Path(__file__).resolve().parents[1] / "dvfs" / "data"
    reference = pd.read_csv(data / "hkbu_reference.csv")
    row = reference[
        (reference["mode"] == "online")
        & (reference["algo"] == "edl")
        & (reference["dvfs"] == "on")
        & (reference["theta"] == 1.0)
        & (reference["l"] == 16)
    ].iloc[0]
    tasks = str(data / "hkbu_online.csv")
    common = ["--mode", "online", "--tasks", tasks, "--pairs-per-server", "16", "--reproduce-hkbu"]
    out = _json_run(capsys, [*common, "--gpu", "rtx2070s"])  # their HEAD: 13 grid voltages, to 1.1 V
    assert out["energy_total_j"] / 60 == pytest.approx(row["total_w_slot"], rel=1e-12)
    assert out["energy_idle_j"] / 60 == pytest.approx(row["idle_w_slot"], rel=1e-12)
    assert out["turn_ons"] == row["turn_ons"]
    assert (out["idle_power_w"], out["turn_on_j_per_pair"]) == (85.0, 200 * 60 / 16)
    assert (out["grouping"], out["idle_accounting"], out["initial_placement"]) == (
        "on_demand",
        "whole-slot",
        "one-per-pair",
    )
    # explicit options win over --reproduce-hkbu: the paper's idle power, continuous accounting, packing
    mixed = _json_run(
        capsys,
        [
            *common,
            "--gpu",
            "rtx2070s",
            "--idle-power-w",
            "37",
            "--idle-accounting",
            "continuous",
            "--initial-placement",
            "pack",
        ],
    )
    assert (mixed["idle_power_w"], mixed["idle_accounting"], mixed["initial_placement"]) == (
        37.0,
        "continuous",
        "pack",
    )
    assert mixed["energy_total_j"] < out["energy_total_j"]


def test_rules_default_to_p2_text(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--mode", "online", "--util", "0.2", "--pairs", "64", "--pairs-per-server", "4", "--seed", "2"]
    plain = _json_run(capsys, base)
    assert (plain["grouping"], plain["idle_accounting"], plain["initial_placement"], plain["next_start"]) == (
        "sorted",
        "continuous",
        "pack",
        "previous-finish",
    )
    assert not plain["reproduce_hkbu"] and plain["idle_power_w"] == 37.0
    # online, servers go on and off at slot boundaries, so rounding busy time up leaves less idle time
    whole = _json_run(capsys, [*base, "--idle-accounting", "whole-slot"])
    assert whole["energy_run_j"] == plain["energy_run_j"] and whole["turn_ons"] == plain["turn_ons"]
    assert whole["energy_idle_j"] < plain["energy_idle_j"]
    later = _json_run(capsys, [*base, "--next-start", "next-slot"])
    assert later["next_start"] == "next-slot"
    assert later["energy_run_j"] == pytest.approx(plain["energy_run_j"])  # same settings, later starts
    offline = _json_run(capsys, ["--util", "0.2", "--pairs", "64"])
    assert "initial_placement" not in offline


def _write_measurements(
    path: Path,
    core_mhz: list[float],
    memory_mhz: list[float],
    base: tuple[float, float],
    apps: dict[str, tuple[float, float, float, float, float, float]],
) -> None:
    """A measurement CSV in the layout of the published GTX 1080 Ti / RTX 2070 SUPER files (``appName, coreF,
    memF, argNo, kernel, time/ms, power/W``; those files are not shipped): every application at every
    (coreF, memF) pair, its time and power exactly the DVFS model's at parameters
    ``(P0, gamma, c, t0, D, delta)``, with ``V = 2 (f_c - 0.5)² + 0.5``, the 1080 Ti's lowest voltage."""
    lines = ["appName,coreF,memF,argNo,kernel,time/ms,power/W"]
    for app, (p0, gamma, c, t0, d, delta) in apps.items():
        for core in core_mhz:
            for memory in memory_mhz:
                fc, fm = core / base[0], memory / base[1]
                v = 2 * (fc - 0.5) ** 2 + 0.5
                time_ms = 1000 * (t0 + d * (delta / fc + (1 - delta) / fm))
                power_w = p0 + gamma * fm + c * v * v * fc
                lines.append(f"{app},{core:g},{memory:g},input00,{app}Kernel,{time_ms!r},{power_w!r}")
    path.write_text("\n".join(lines) + "\n")


def test_fit_on_rows_in_the_published_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "gtx1080ti-like.csv"
    apps = {"alpha": (60.0, 25.0, 110.0, 0.002, 0.010, 0.4), "beta": (40.0, 10.0, 150.0, 0.001, 0.020, 0.9)}
    _write_measurements(data, [1600, 1700, 1800, 1900, 2000], [4000, 4500, 5000, 5500], (1800, 5000), apps)
    out = tmp_path / "fit.csv"
    assert main(["dvfs", "fit", "--data", str(data), "--gpu", "gtx1080ti", "--json", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # the data hold the GPU's default clocks (1800, 5000): no warning
    result = json.loads(captured.out)
    assert len(result["applications"]) == 2
    fits = pd.read_csv(out).set_index("app")
    # The rows are the model's own values, so the fit gives the parameters back.
    for app, (p0, gamma, c, t0, d, delta) in apps.items():
        row = fits.loc[app]
        assert (row["p0_w"], row["gamma_w"], row["c_w"]) == pytest.approx((p0, gamma, c), rel=1e-6)
        assert (row["t0_s"], row["d_s"], row["delta"]) == pytest.approx((t0, d, delta), rel=1e-6)
        assert row["samples"] == 20
    assert 0 < result["mean_saving_narrow"] < result["mean_saving_wide"]


def test_fit_warns_once_on_clocks_of_another_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "rtx2070s-like.csv"  # the 2070 SUPER clocks, 1080 Ti defaults
    _write_measurements(
        data,
        [1680, 1780, 1880, 1980, 2080],
        [5800, 6300, 6800, 7300],
        (1880, 6300),
        {"alpha": (60.0, 25.0, 110.0, 0.002, 0.010, 0.4)},
    )
    assert main(["dvfs", "fit", "--data", str(data), "--json"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("wattsched: warning: --data ")
    assert "--gpu gtx1080ti's default clocks (core 1800 MHz, memory 5000 MHz" in err
    assert "core 1680-2080 MHz, memory 5800-7300 MHz" in err
    assert main(["dvfs", "fit", "--data", str(data), "--gpu", "rtx2070s", "--json"]) == 0
    assert capsys.readouterr().err == ""
