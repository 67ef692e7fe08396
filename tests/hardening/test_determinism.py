"""Determinism (issue #7, part 3): every command that takes ``--seed`` gives byte-identical results when run
again with the same seed, in this process and in fresh processes with different hash seeds.

Commands: ``mig generate`` (CSV, Parquet), ``mig run --json`` (+ ``--jobs-out``), ``mig import --seed``,
``dvfs generate``, ``dvfs run --json --seed`` (offline and online) and ``dvfs solve``. A different seed must
change the result (otherwise the test would pass for a command that ignores its seed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wattsched.cli import main

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Stdout of one successful command."""
    capsys.readouterr()
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    return out


# ---------------------------------------------------------------------------------------------- mig generate


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize(
    "source",
    [
        ["--rate", "0.8"],
        ["--profile", "alibaba-day"],
        ["--profile", "alibaba-day", "--preset", "paper", "--deadline-rule", "slice-aware"],
    ],
)
def test_mig_generate_is_byte_identical(tmp_path: Path, suffix: str, source: list[str]) -> None:
    def generate(name: str, seed: str) -> bytes:
        out = tmp_path / f"{name}{suffix}"
        assert main(["mig", "generate", *source, "--hours", "3", "--seed", seed, "-o", str(out)]) == 0
        return out.read_bytes()

    first = generate("a", "11")
    assert generate("b", "11") == first
    assert generate("c", "12") != first


# ---------------------------------------------------------------------------------------------- mig run


@pytest.mark.parametrize("policy", ["edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf"])
def test_mig_run_json_and_jobs_out_are_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str
) -> None:
    def simulate(name: str, seed: str) -> tuple[str, bytes]:
        jobs = tmp_path / f"{name}.parquet"
        out = run(
            capsys,
            [
                "mig",
                "run",
                "--config",
                "4",
                "--policy",
                policy,
                "--rate",
                "1.5",
                "--hours",
                "2",
                "--seed",
                seed,
                "--json",
                "--jobs-out",
                str(jobs),
            ],
        )
        return out, jobs.read_bytes()

    first = simulate("a", "5")
    assert json.loads(first[0])["jobs"] > 100  # 1.5 jobs/min for 2 h: a real queue, not a trivial one
    assert simulate("b", "5") == first
    assert simulate("c", "6")[0] != first[0]


def test_mig_run_from_a_written_trace_equals_the_generated_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The trace file stores floats in round-trip form, so simulating the file must equal simulating the
    # generator's jobs directly, given the same horizon (2 h = 7200 s).
    trace = tmp_path / "t.csv"
    assert main(["mig", "generate", "--rate", "1", "--hours", "2", "--seed", "3", "-o", str(trace)]) == 0
    direct = run(
        capsys,
        [
            "mig",
            "run",
            "--config",
            "2",
            "--policy",
            "llf",
            "--rate",
            "1",
            "--hours",
            "2",
            "--seed",
            "3",
            "--json",
        ],
    )
    from_file = run(
        capsys,
        [
            "mig",
            "run",
            "--config",
            "2",
            "--policy",
            "llf",
            "--trace",
            str(trace),
            "--horizon-s",
            "7200",
            "--json",
        ],
    )
    # the results are equal; only the description of the workload differs (a trace has no preset)
    unlabelled = [
        {k: v for k, v in json.loads(out).items() if k not in ("preset", "workload")}
        for out in (from_file, direct)
    ]
    assert unlabelled[0] == unlabelled[1] and json.loads(from_file)["preset"] is None


def test_fresh_processes_with_different_hash_seeds_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "mig",
        "run",
        "--config",
        "5",
        "--policy",
        "edf-ss-restricted",
        "--profile",
        "alibaba-day",
        "--hours",
        "6",
        "--seed",
        "9",
        "--json",
    ]
    here = run(capsys, argv)
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-m", "wattsched.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs == [here, here]


# ---------------------------------------------------------------------------------------------- mig import


@pytest.fixture
def philly(tmp_path: Path) -> Path:
    """40 Philly-style rows over one day: 30 s to 2 h, some on 2 or 4 GPUs."""
    rows = [
        f"2017-10-09 {h:02d}:{(7 * i) % 60:02d}:{(13 * i) % 60:02d},{30 + 97 * i % 7200}.0,"
        f"{(1, 1, 2, 1, 4)[i % 5]},0,c{i % 3}"
        for i, h in zip(range(40), [i * 23 // 40 for i in range(40)], strict=True)
    ]
    path = tmp_path / "philly.csv"
    path.write_text("\n".join([PHILLY_HEADER, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_mig_import_seed_is_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], philly: Path, suffix: str
) -> None:
    # Every random step is on: thinning (40 -> 24 jobs), class share and deadline slack.
    def import_(name: str, seed: str) -> tuple[str, bytes]:
        out = tmp_path / f"{name}{suffix}"
        report = run(
            capsys,
            [
                "mig",
                "import",
                "--format",
                "philly",
                "--input",
                str(philly),
                "-o",
                str(out),
                "--day",
                "0",
                "--target-rate",
                str(24 / 1440),
                "--inference-share",
                "0.5",
                "--seed",
                seed,
                "--json",
            ],
        )
        return json.loads(report)["rows_kept"], out.read_bytes()

    first = import_("a", "4")
    assert first[0] == 24
    assert import_("b", "4") == first
    assert import_("c", "5")[1] != first[1]


def test_mig_import_with_measured_curves_is_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], philly: Path
) -> None:
    speeds = tmp_path / "speeds.csv"
    speeds.write_text(
        "source,model,kind,batch_size,slice_g,throughput_or_time,unit\n"
        "x,a,training,8,1,10,samples/s\nx,a,training,8,7,40,samples/s\n"
        "x,b,training,8,2,3,s/iter\nx,b,training,8,4,2,s/iter\n"
        "x,c,inference,1,1,5,samples/s\nx,c,inference,1,3,12,samples/s\n",
        encoding="utf-8",
    )

    def import_(name: str) -> bytes:
        out = tmp_path / f"{name}.csv"
        run(
            capsys,
            [
                "mig",
                "import",
                "--format",
                "philly",
                "--input",
                str(philly),
                "-o",
                str(out),
                "--scaling",
                "measured",
                "--speeds",
                str(speeds),
                "--seed",
                "2",
                "--json",
            ],
        )
        return out.read_bytes()

    assert import_("a") == import_("b")


# ---------------------------------------------------------------------------------------------- dvfs


def test_dvfs_generate_is_byte_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def generate(name: str, mode: str, seed: str) -> bytes:
        out = tmp_path / name
        assert (
            main(
                [
                    "dvfs",
                    "generate",
                    "--mode",
                    mode,
                    "--util",
                    "0.5",
                    "--pairs",
                    "16",
                    "--seed",
                    seed,
                    "-o",
                    str(out),
                ]
            )
            == 0
        )
        return out.read_bytes()

    for mode in ("offline", "online"):
        for suffix in (".csv", ".parquet"):
            first = generate(f"{mode}1{suffix}", mode, "3")
            assert generate(f"{mode}2{suffix}", mode, "3") == first
            assert generate(f"{mode}3{suffix}", mode, "4") != first


@pytest.mark.parametrize(
    ("mode", "algo", "theta"),
    [
        ("offline", "edl", "0.9"),
        ("offline", "lpt-ff", "1"),
        ("online", "edf-bf", "1"),
        ("online", "edl", "0.9"),
    ],
)
def test_dvfs_run_json_is_identical(
    capsys: pytest.CaptureFixture[str], mode: str, algo: str, theta: str
) -> None:
    def once(seed: str) -> str:
        return run(
            capsys,
            [
                "dvfs",
                "run",
                "--mode",
                mode,
                "--util",
                "0.5",
                "--pairs",
                "32",
                "--pairs-per-server",
                "4",
                "--algo",
                algo,
                "--theta",
                theta,
                "--dvfs",
                "on",
                "--seed",
                seed,
                "--json",
            ],
        )

    first = once("7")
    assert json.loads(first)["tasks"] > 0
    assert once("7") == first
    assert once("8") != first


def test_dvfs_run_from_a_task_file_and_solve_are_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.parquet"
    assert (
        main(
            [
                "dvfs",
                "generate",
                "--mode",
                "online",
                "--util",
                "0.4",
                "--pairs",
                "16",
                "--seed",
                "1",
                "-o",
                str(tasks),
            ]
        )
        == 0
    )
    runs = [
        run(
            capsys,
            [
                "dvfs",
                "run",
                "--mode",
                "online",
                "--tasks",
                str(tasks),
                "--pairs",
                "16",
                "--pairs-per-server",
                "2",
                "--algo",
                "edf-wf",
                "--dvfs",
                "on",
                "--json",
            ],
        )
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    solved = []
    for name in ("a.csv", "b.csv", "a.parquet", "b.parquet"):
        out = tmp_path / name
        assert main(["dvfs", "solve", "--tasks", str(tasks), "-o", str(out)]) == 0
        solved.append(out.read_bytes())
    assert solved[0] == solved[1] and solved[2] == solved[3]
