"""Bad input to the real-GPU commands: one line on stderr, exit 2, nothing written (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_checks import assert_one_line_error, run_in, write

from wattsched.hardware.gpu import BACKEND_ENV


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def variant(source: Path, folder: Path, **changes: object) -> Path:
    facts = json.loads(source.read_text())
    facts.update(changes)
    return write(folder / "variant.json", json.dumps(facts))


@pytest.mark.parametrize(
    ("words", "rest"),
    [
        (["gpu", "info"], []),
        (["gpu", "record"], ["-o", "x.json"]),
        (["gpu", "snapshot"], ["-o", "x.toml"]),
        (["gpu", "calibrate"], ["-o", "x.csv"]),
        (["dvfs", "reset"], []),
        (["measure"], ["--", "true"]),
    ],
)
def test_missing_and_corrupt_snapshots(
    words: list[str], rest: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    rest = [str(folder / part) if part.startswith("x.") else part for part in rest]
    missing = str(tmp_path / "missing.json")
    assert_one_line_error(
        capsys, run_in(folder, [*words, "--backend", f"fake:{missing}", *rest]), missing, "snapshot not found"
    )
    corrupt = write(tmp_path / "corrupt.json", '{"name": "NVIDIA H200", "memory_total_bytes": ')
    assert_one_line_error(
        capsys,
        run_in(folder, [*words, "--backend", f"fake:{corrupt}", *rest]),
        str(corrupt),
        "not valid JSON",
    )


def test_no_nvml_library_and_a_bad_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert_one_line_error(capsys, run_in(tmp_path, ["gpu", "info"]), "NVML library not found")
    assert_one_line_error(
        capsys,
        run_in(tmp_path, ["gpu", "info", "--backend", "cuda"]),
        "--backend must be 'nvml' or 'fake:FILE', got 'cuda'",
    )
    monkeypatch.setenv(BACKEND_ENV, "rocm")
    assert_one_line_error(capsys, run_in(tmp_path, ["measure", "--", "true"]), BACKEND_ENV, "'rocm'")


def test_unknown_gpu_index(h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = f"fake:{h200}"
    cases = [
        (["gpu", "info"], ["--index", "3"]),
        (["gpu", "snapshot"], ["--index", "1", "-o", "x.toml"]),
        (["dvfs", "apply"], ["--gpu-clock-mhz", "1000", "--index", "2"]),
        (["measure"], ["--gpus", "0,4", "--", "true"]),
    ]
    for words, rest in cases:
        assert_one_line_error(
            capsys, run_in(tmp_path, [*words, "--backend", backend, *rest]), "no GPU with index"
        )
    assert_one_line_error(
        capsys, run_in(tmp_path, ["gpu", "info", "--backend", backend, "--index", "-1"]), "--index"
    )
    assert_one_line_error(
        capsys, run_in(tmp_path, ["measure", "--backend", backend, "--gpus", "a", "--", "true"]), "--gpus"
    )


def test_outputs_are_checked_before_any_work(
    h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = f"fake:{h200}"
    assert_one_line_error(
        capsys,
        run_in(tmp_path, ["gpu", "record", "--backend", backend, "-o", "x.txt"]),
        "expected a file ending in .json",
    )
    assert_one_line_error(
        capsys, run_in(tmp_path, ["gpu", "snapshot", "--backend", backend, "-o", "x.json"]), ".toml"
    )
    assert_one_line_error(
        capsys,
        run_in(tmp_path, ["gpu", "calibrate", "--backend", backend, "-o", str(tmp_path / "no" / "x.csv")]),
        "folder does not exist",
    )
    assert_one_line_error(
        capsys, run_in(tmp_path, ["measure", "--backend", backend, "-o", "x.csv", "--", "true"]), ".json"
    )
    assert_one_line_error(
        capsys, run_in(tmp_path, ["measure", "--backend", backend]), "no command to measure"
    )


def test_bad_power_curve(h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    curve = write(tmp_path / "curve.csv", "curve,busy_units,power_w\ncompute,0,100\ncompute,1,150\n")
    code = run_in(
        folder,
        [
            "gpu",
            "snapshot",
            "--backend",
            f"fake:{h200}",
            "--power-curve",
            str(curve),
            "-o",
            str(folder / "x.toml"),
        ],
    )
    assert_one_line_error(capsys, code, str(curve), "needs busy_units 0..7")


def test_apply_refusals_for_clocks(h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_in(
        tmp_path, ["dvfs", "apply", "--backend", f"fake:{h200}", "--gpu-clock-mhz", "1500", "--apply"]
    )
    assert_one_line_error(capsys, code, "needs root", "nothing changed")
    code = run_in(tmp_path, ["dvfs", "reset", "--backend", f"fake:{h200}", "--apply"])
    assert_one_line_error(capsys, code, "needs root")
    no_clocks = variant(h200, tmp_path, supported_graphics_clocks_mhz={})
    code = run_in(tmp_path, ["dvfs", "apply", "--backend", f"fake:{no_clocks}", "--gpu-clock-mhz", "1500"])
    assert_one_line_error(capsys, code, "no supported clocks")
    code = run_in(tmp_path, ["dvfs", "apply", "--backend", f"fake:{h200}", "--gpu-clock-mhz", "nan"])
    assert_one_line_error(capsys, code, "--gpu-clock-mhz")


def test_calibrate_refuses_mig_mode(h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    mig = variant(h200, tmp_path, mig_mode_current_pending=[1, 1])
    code = run_in(folder, ["gpu", "calibrate", "--backend", f"fake:{mig}", "-o", str(folder / "c.csv")])
    assert_one_line_error(capsys, code, "MIG mode", "whole card")


@pytest.mark.parametrize(
    ("argv", "pieces"),
    [
        (["mig", "plan", "--gpu", "b200", "--from", "1", "--to", "2"], ["unknown GPU 'b200'"]),
        (["mig", "plan", "--from", "13", "--to", "2"], ["--from: unknown configuration '13'", "valid: 1, 2"]),
        (["mig", "plan", "--from", "1", "--to", "4g.20gb@1"], ["4g.20gb cannot start at 1"]),
        (["mig", "plan", "--from", "no-mig", "--to", "2"], ["MIG mode, which wattsched never changes"]),
        (["mig", "plan", "--from", "2", "--to", "2g.10gb@2,1g.5gb@3"], ["overlap"]),
        (["mig", "export", "--configs", "99", "-o", "x.yaml"], ["unknown configuration '99'"]),
        (["mig", "export", "-o", "x.json"], [".yaml or .yml"]),
        (["mig", "import-config", "missing.yaml"], ["missing.yaml", "file not found"]),
    ],
)
def test_bad_mig_plan_and_export_options(
    argv: list[str], pieces: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_line_error(capsys, run_in(tmp_path, argv), *pieces)


def test_import_config_that_the_gpu_cannot_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path / "bad.yaml",
        "version: v1\nmig-configs:\n  huge:\n    - devices: all\n"
        "      mig-enabled: true\n      mig-devices: {4g.20gb: 1, 3g.20gb: 2}\n",
    )
    assert_one_line_error(
        capsys,
        run_in(tmp_path, ["mig", "import-config", str(bad)]),
        "config 'huge'",
        "cannot be placed on a100-40gb",
    )
    corrupt = write(tmp_path / "corrupt.yaml", "version: v1\nmig-configs: [unclosed\n")
    assert_one_line_error(
        capsys, run_in(tmp_path, ["mig", "import-config", str(corrupt)]), str(corrupt), "not valid YAML"
    )
    other_gpu = write(
        tmp_path / "h200.yaml",
        "version: v1\nmig-configs:\n  a:\n    - devices: all\n"
        "      mig-enabled: true\n      mig-devices: {1g.18gb: 7}\n",
    )
    assert_one_line_error(
        capsys,
        run_in(tmp_path, ["mig", "import-config", str(other_gpu)]),
        "a100-40gb has no MIG profile '1g.18gb'",
    )


@pytest.mark.parametrize(
    ("changes", "pieces"),
    [
        ({"mig_mode_current_pending": [1, 1]}, ["needs root", "nothing changed"]),
        ({"fake_root": True}, ["MIG mode is off", "nothing changed"]),
        (
            {"fake_root": True, "mig_mode_current_pending": [1, 1]},
            ["has empty, not the plan's source 4g.71gb@0,3g.71gb@4"],
        ),
        (
            {
                "fake_root": True,
                "mig_mode_current_pending": [1, 1],
                "mig_instances": [
                    {"id": 1, "profile_id": 5, "start": 0, "size": 4},
                    {"id": 2, "profile_id": 9, "start": 4, "size": 4},
                ],
                "processes": [{"pid": 4242, "gpu_instance_id": 1, "compute_instance_id": 0}],
            },
            ["process 4242 runs on 4g.71gb@0"],
        ),
    ],
)
def test_mig_apply_refusals(
    changes: dict[str, object],
    pieces: list[str],
    h200: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gpu = variant(h200, tmp_path, **changes)
    folder = tmp_path / "out"
    folder.mkdir()
    argv = [
        "mig",
        "plan",
        "--gpu",
        "h200-141gb",
        "--from",
        "2",
        "--to",
        "6",
        "--apply",
        "--backend",
        f"fake:{gpu}",
    ]
    assert_one_line_error(capsys, run_in(folder, argv), *pieces)


@pytest.mark.parametrize(
    ("extra", "pieces"),
    [
        (["--apply"], ["--apply and --speed-x only apply with --live"]),
        (["--config", "3"], ["--config do(es) not apply to --partitioner day-night"]),
        (["--live", "--speed-x", "0"], ["--speed-x"]),
        (["--live", "--apply", "--backend", "nvml"], ["NVML library not found"]),
    ],
)
def test_bad_mig_day_options(
    extra: list[str], pieces: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["mig", "day", "--partitioner", "day-night", "--profile", "alibaba-day", "--hours", "1", *extra]
    assert_one_line_error(capsys, run_in(tmp_path, argv), *pieces)


def test_mig_day_live_apply_needs_root(
    h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpu = variant(h200, tmp_path, mig_mode_current_pending=[1, 1])
    folder = tmp_path / "out"
    folder.mkdir()
    argv = [
        "mig",
        "day",
        "--partitioner",
        "day-night",
        "--gpu",
        "h200-141gb",
        "--profile",
        "alibaba-day",
        "--hours",
        "1",
        "--live",
        "--apply",
        "--backend",
        f"fake:{gpu}",
    ]
    assert_one_line_error(capsys, run_in(folder, argv), "needs root", "nothing changed")
