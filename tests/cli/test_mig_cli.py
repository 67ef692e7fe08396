"""`wattsched mig generate / run / configs` (CONTRACT §5), driven through ``wattsched.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from wattsched.cli import main
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling
from wattsched.workload.traces import read_trace, write_trace

RESULT_KEYS = {
    "energy_j",
    "avg_tardiness_s",
    "max_tardiness_s",
    "jobs",
    "late_jobs",
    "preemptions",
    "repartitions",
    "end_s",
}
P_IDLE_W, P_FULL_W = 40.0, 248.5  # CONTRACT §4: P(0) and P(7)
FIXED = ["--config", "3", "--policy", "edf-fs"]


def needs_simulator() -> None:
    pytest.importorskip("wattsched.mig.simulator")


def assert_one_line_error(capsys: pytest.CaptureFixture[str], code: int, *pieces: str) -> None:
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("wattsched: error:"), err
    for piece in pieces:
        assert piece in lines[0]


# ---------------------------------------------------------------------------------------------- generate


@pytest.mark.parametrize("name", ["day.csv", "day.parquet"])
def test_generate_profile_writes_the_generator_trace(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    assert main(["mig", "generate", "--profile", "alibaba-day", "--seed", "1", "-o", str(out)]) == 0
    assert read_trace(out) == generate_jobs(WorkloadSpec(profile="alibaba-day"), 1)
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_generate_rate_with_every_option(tmp_path: Path) -> None:
    out = tmp_path / "q.pq"
    argv = [
        "mig",
        "generate",
        "--rate",
        "0.75",
        "--hours",
        "2.5",
        "--inference-share",
        "0.2",
        "--rate-multiplier",
        "2",
        "--seed",
        "7",
        "--output",
        str(out),
    ]
    assert main(argv) == 0
    spec = WorkloadSpec(rate_per_min=0.75, hours=2.5, inference_share=0.2, rate_multiplier=2.0)
    assert read_trace(out) == generate_jobs(spec, 7)


def test_generate_default_seed_is_zero(tmp_path: Path) -> None:
    assert main(["mig", "generate", "--rate", "0.5", "--hours", "1", "-o", str(tmp_path / "a.csv")]) == 0
    assert read_trace(tmp_path / "a.csv") == generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 0)


@pytest.mark.parametrize(
    ("options", "pieces"),
    [
        (["--rate", "0"], ["--rate must be > 0"]),
        (["--rate", "-1"], ["--rate must be > 0"]),
        (["--rate", "nan"], ["--rate"]),
        (["--rate", "abc"], ["--rate", "invalid float value"]),
        (["--rate", "1", "--hours", "0"], ["--hours must be > 0"]),
        (["--rate", "1", "--inference-share", "1.5"], ["--inference-share must be in [0, 1]"]),
        (["--rate", "1", "--rate-multiplier", "0"], ["--rate-multiplier must be > 0"]),
        (["--rate", "1", "--seed", "-3"], ["--seed must be >= 0"]),
        (["--profile", "weekend"], ["unknown --profile 'weekend'", "alibaba-day"]),
        (["--rate", "1", "--profile", "alibaba-day"], ["not allowed with"]),
        ([], ["one of the arguments --rate --profile is required"]),
    ],
)
def test_generate_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], pieces: list[str]
) -> None:
    out = tmp_path / "t.csv"
    try:
        code = main(["mig", "generate", *options, "-o", str(out)])
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    assert_one_line_error(capsys, code, *pieces)
    assert list(tmp_path.iterdir()) == []


def test_generate_bad_suffix_and_missing_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json"
    assert_one_line_error(
        capsys, main(["mig", "generate", "--rate", "1", "-o", str(out)]), str(out), "unsupported file suffix"
    )
    with pytest.raises(SystemExit) as caught:
        main(["mig", "generate", "--rate", "1"])
    assert_one_line_error(capsys, int(caught.value.code or 0), "-o/--output")
    assert list(tmp_path.iterdir()) == []


def test_configs_lists_all_twelve(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "configs"]) == 0
    out = capsys.readouterr().out
    assert "4g.20gb@0 + 2g.10gb@4 + 1g.10gb@6" in out  # configuration 3 (NVML memory-slot starts)
    assert "3g.20gb@0 + 3g.20gb@4" in out and "compute=6" in out  # configuration 5 has a hole
    assert "78 maximal placement-valid partitions" in out
    assert len(out.strip().splitlines()) == 2 + 12 + 1  # title, profiles, 12 configurations, no-mig


def test_configs_json_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "configs", "--gpu", "h200-141gb", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu"] == "h200-141gb"
    one = next(p for p in data["profiles"] if p["name"] == "1g.18gb")
    assert one == {
        "name": "1g.18gb",
        "nvml_id": 19,
        "compute": 1,
        "memory_slots": 1,
        "sms": 16,
        "memory_mb": 16384,
        "placements": [[s, 1] for s in range(7)],
        "media": False,
    }
    three = next(c for c in data["configurations"] if c["id"] == 3)
    assert three["slices"] == [
        {"profile": "4g.71gb", "compute": 4, "start": 0, "size": 4},
        {"profile": "2g.35gb", "compute": 2, "start": 4, "size": 2},
        {"profile": "1g.35gb", "compute": 1, "start": 6, "size": 2},
    ]
    assert data["power_w"]["cap_w"] == 700.0
    assert data["power_w"]["kinds"]["training"] == "transformer-training"
    assert main(["mig", "configs", "--list-gpus", "--json"]) == 0
    gpus = json.loads(capsys.readouterr().out)["gpus"]
    assert gpus == ["a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb"]


# --------------------------------------------------------------------------------------------------- run


def one_job_trace(tmp_path: Path, deadline_s: float, scaling: Scaling = Scaling.LINEAR) -> Path:
    # 490 s on 1g, linear: 70 s on 7g, 70/1.06 s without MIG.
    durations = (490.0, 245.0, 490 / 3, 122.5, 70.0, 70 / 1.06)
    job = Job("only", 0.0, deadline_s, JobKind.TRAINING, scaling, durations[:5], durations[5])
    path = tmp_path / "one.csv"
    write_trace([job], path)
    return path


def test_acceptance_command(capsys: pytest.CaptureFixture[str]) -> None:
    needs_simulator()
    argv = [
        "mig",
        "run",
        "--config",
        "3",
        "--policy",
        "edf-ss-restricted",
        "--profile",
        "alibaba-day",
        "--seed",
        "1",
        "--json",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    result = json.loads(out)
    assert set(result) >= RESULT_KEYS
    assert list(result) == sorted(result)
    jobs = generate_jobs(WorkloadSpec(profile="alibaba-day"), 1)
    assert result["jobs"] == len(jobs)
    assert result["end_s"] >= 86_400.0
    # Energy lies between the idle floor and full power over [0, end_s].
    assert P_IDLE_W * result["end_s"] < result["energy_j"] < P_FULL_W * result["end_s"]
    assert 0 <= result["avg_tardiness_s"] <= result["max_tardiness_s"]
    assert 0 <= result["late_jobs"] <= result["jobs"] and result["repartitions"] == 0


def test_run_json_matches_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    needs_simulator()
    from wattsched.mig.simulator import simulate

    assert (
        main(
            [
                "mig",
                "run",
                "--config",
                "6",
                "--policy",
                "edf-ss",
                "--rate",
                "0.5",
                "--hours",
                "4",
                "--seed",
                "3",
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    spec = WorkloadSpec(rate_per_min=0.5, hours=4)
    expected = simulate(generate_jobs(spec, 3), 6, "edf-ss", horizon_s=spec.horizon_s).to_dict()
    assert {k: result[k] for k in expected} == json.loads(json.dumps(expected))


def test_run_one_job_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    needs_simulator()
    trace = one_job_trace(tmp_path, deadline_s=50.0)
    # Config 1 (one 7g slice): runs 70 s at P(7) = 248.5 W; the horizon defaults to the last arrival (0 s).
    assert main(["mig", "run", "--config", "1", "--policy", "edf-fs", "--trace", str(trace), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["end_s"] == pytest.approx(70.0)
    assert result["energy_j"] == pytest.approx(70.0 * 248.5)
    assert result["avg_tardiness_s"] == pytest.approx(20.0) and result["late_jobs"] == 1
    # A longer horizon adds idle power: 1000 s in all, 930 s of them at P(0) = 40 W.
    assert (
        main(
            [
                "mig",
                "run",
                "--config",
                "1",
                "--policy",
                "edf-fs",
                "--trace",
                str(trace),
                "--horizon-s",
                "1000",
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["end_s"] == pytest.approx(1000.0)
    assert result["energy_j"] == pytest.approx(70.0 * 248.5 + 930.0 * 40.0)
    # MIG disabled: a linear job is 6 % faster, 70/1.06 s at 248.5 W.
    no_mig = ["mig", "run", "--config", "no-mig", "--policy", "edf-fs", "--trace", str(trace), "--json"]
    assert main(no_mig) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["energy_j"] == pytest.approx(70.0 / 1.06 * 248.5)


@pytest.mark.parametrize("name", ["jobs.csv", "jobs.parquet"])
def test_run_jobs_out(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    needs_simulator()
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=3), 2)
    trace = tmp_path / "in.csv"
    write_trace(jobs, trace)
    out = tmp_path / name
    assert (
        main(
            ["mig", "run", "--config", "4", "--policy", "llf", "--trace", str(trace), "--jobs-out", str(out)]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert "energy" in table and "avg tardiness" in table and "configuration     4" in table
    frame = pd.read_csv(out) if name.endswith(".csv") else pd.read_parquet(out)
    assert list(frame.columns) == [
        "job_id",
        "start_s",
        "completion_s",
        "tardiness_s",
        "preemptions",
        "kind",
        "arrival_s",
        "deadline_s",
        "slice",
        "compute",
        "energy_j",
    ]
    assert sorted(frame["job_id"]) == sorted(j.job_id for j in jobs)
    by_id = {j.job_id: j for j in jobs}
    for row in frame.to_dict("records"):
        job = by_id[row["job_id"]]
        assert job.arrival_s <= row["start_s"] < row["completion_s"]
        assert row["tardiness_s"] == pytest.approx(max(0.0, row["completion_s"] - job.deadline_s), abs=1e-6)
        assert row["preemptions"] >= 0


@pytest.mark.parametrize(
    ("options", "pieces"),
    [
        (["--config", "13", "--policy", "edf-fs", "--rate", "1"], ["unknown configuration '13'", "no-mig"]),
        (["--config", "3", "--policy", "fifo", "--rate", "1"], ["unknown", "'fifo'", "edf-ss-restricted"]),
        (FIXED, ["one of the arguments --trace --rate --profile is required"]),
        ([*FIXED, "--rate", "1", "--trace", "x.csv"], ["not allowed with"]),
        ([*FIXED, "--rate", "1", "--horizon-s", "-5"], ["--horizon-s must be >= 0"]),
        ([*FIXED, "--rate", "1", "--hours", "-1"], ["--hours must be > 0"]),
        ([*FIXED, "--rate", "1", "--jobs-out", "J.txt"], ["unsupported file suffix"]),
        (["--policy", "edf-fs", "--rate", "1"], ["--config"]),
    ],
)
def test_run_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], pieces: list[str]
) -> None:
    needs_simulator()
    try:
        code = main(["mig", "run", *options])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert_one_line_error(capsys, code, *pieces)


def test_run_trace_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    needs_simulator()
    trace = one_job_trace(tmp_path, deadline_s=100.0)
    base = ["mig", "run", "--config", "3", "--policy", "edf-fs", "--trace", str(trace)]
    assert_one_line_error(capsys, main([*base, "--seed", "4"]), "--seed only apply to generated workloads")
    bad = tmp_path / "bad.csv"
    bad.write_text(trace.read_text().replace("training", "batch"))
    jobs_out = tmp_path / "jobs.csv"
    code = main(
        [
            "mig",
            "run",
            "--config",
            "3",
            "--policy",
            "edf-fs",
            "--trace",
            str(bad),
            "--jobs-out",
            str(jobs_out),
        ]
    )
    assert_one_line_error(capsys, code, str(bad), "row 1", "column 'kind'", "unknown kind 'batch'")
    assert not jobs_out.exists()
    missing = tmp_path / "missing.csv"
    assert_one_line_error(capsys, main([*base[:-1], str(missing)]), str(missing), "file not found")


# ---------------------------------------------------------------------------------------------- presets


def _generate_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> dict[str, object]:
    out = tmp_path / "t.csv"
    assert main(["mig", "generate", *options, "--seed", "4", "-o", str(out), "--json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    assert data["jobs"] == len(read_trace(out)) and data["output"] == str(out)
    return data


def test_generate_presets_set_the_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # CONTRACT §4: a Fig. 5 day at x2.5 (paper) or x1 (literal, the default of generate); a Poisson queue of
    # 8 h (paper) or 24 h (literal); explicit --rate-multiplier / --hours win.
    paper = _generate_json(tmp_path, capsys, "--profile", "alibaba-day", "--preset", "paper")
    assert (paper["preset"], paper["rate_multiplier"], paper["hours"]) == ("paper", 2.5, 24.0)
    literal = _generate_json(tmp_path, capsys, "--profile", "alibaba-day")
    assert (literal["preset"], literal["rate_multiplier"]) == ("literal", 1.0)
    assert 2.0 < int(paper["jobs"]) / int(literal["jobs"]) < 3.2  # type: ignore[call-overload]
    library = generate_jobs(WorkloadSpec(profile="alibaba-day", rate_multiplier=2.5), 4)
    assert paper["jobs"] == len(library)
    queue = _generate_json(tmp_path, capsys, "--rate", "0.5", "--preset", "paper")
    assert (queue["hours"], queue["rate_multiplier"], queue["deadline_rule"]) == (8.0, 1.0, "p1")
    assert _generate_json(tmp_path, capsys, "--rate", "0.5")["hours"] == 24.0
    given = _generate_json(tmp_path, capsys, "--rate", "0.5", "--preset", "paper", "--hours", "2")
    assert given["hours"] == 2.0
    given = _generate_json(
        tmp_path, capsys, "--profile", "alibaba-day", "--preset", "paper", "--rate-multiplier", "3"
    )
    assert given["rate_multiplier"] == 3.0


def test_generate_deadline_rule_keeps_the_jobs(tmp_path: Path) -> None:
    files = {}
    for rule in ("p1", "slice-aware"):
        files[rule] = tmp_path / f"{rule}.csv"
        assert (
            main(
                [
                    "mig",
                    "generate",
                    "--rate",
                    "0.5",
                    "--hours",
                    "4",
                    "--deadline-rule",
                    rule,
                    "--seed",
                    "2",
                    "-o",
                    str(files[rule]),
                ]
            )
            == 0
        )
    p1, aware = pd.read_csv(files["p1"]), pd.read_csv(files["slice-aware"])
    assert p1.drop(columns="deadline_s").equals(aware.drop(columns="deadline_s"))
    assert (aware["deadline_s"] != p1["deadline_s"]).mean() > 0.6  # 4 of 5 reference sizes are not 7g
    on_1g = (aware["arrival_s"] + aware["dur_1g_s"] <= aware["deadline_s"]).mean()
    assert 0.05 < on_1g < 0.4 and (p1["arrival_s"] + p1["dur_1g_s"] > p1["deadline_s"]).all()


def test_run_json_shows_the_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    needs_simulator()
    argv = ["mig", "run", *FIXED, "--profile", "alibaba-day", "--hours", "2", "--seed", "1", "--json"]
    assert main([*argv, "--preset", "paper", "--deadline-rule", "slice-aware"]) == 0
    paper = json.loads(capsys.readouterr().out)
    assert paper["preset"] == "paper" and paper["workload"]["rate_multiplier"] == 2.5
    assert paper["workload"]["deadline_rule"] == "slice-aware"
    assert main(argv) == 0
    literal = json.loads(capsys.readouterr().out)
    assert literal["preset"] == "literal" and literal["jobs"] < paper["jobs"]
    # the same jobs through the library
    spec = WorkloadSpec(profile="alibaba-day", hours=2, rate_multiplier=2.5, deadline_rule="slice-aware")
    assert paper["jobs"] == len(generate_jobs(spec, 1))
    trace = tmp_path / "t.csv"
    write_trace(generate_jobs(spec, 1), trace)
    assert main(["mig", "run", *FIXED, "--trace", str(trace), "--horizon-s", "7200", "--json"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["preset"] is None and replay["workload"] == {"preset": None}
    assert replay["energy_j"] == pytest.approx(paper["energy_j"]) and replay["jobs"] == paper["jobs"]


def test_power_cap_takes_watts(capsys: pytest.CaptureFixture[str]) -> None:
    needs_simulator()
    base = ["mig", "run", "--gpu", "h200-141gb", "--config", "1", "--policy", "edf-ss", "--profile",
            "alibaba-day", "--rate-multiplier", "2.5", "--hours", "2", "--seed", "1", "--power-curve",
            "compute-fma", "--json"]  # fmt: skip

    def run(*extra: str) -> dict[str, object]:
        capsys.readouterr()
        assert main([*base, *extra]) == 0
        return dict(json.loads(capsys.readouterr().out))

    own, same = run("--power-cap"), run("--power-cap", "700W")
    low, uncapped = run("--power-cap", "300"), run()
    # Alone it is the GPU's own limit (700 W on the H200); 700W says the same in watts.
    assert own["power_cap_w"] == same["power_cap_w"] == 700.0 and "power_cap_w" not in uncapped
    assert own == same
    # A 300 W cap draws less power on average and slows the busy slices: the day ends no sooner.
    assert low["power_cap_w"] == 300.0
    mean_w = {name: float(r["energy_j"]) / float(r["end_s"]) for name, r in (("own", own), ("low", low))}
    assert mean_w["low"] < mean_w["own"] <= 700.0 and mean_w["low"] <= 300.0
    assert float(low["end_s"]) >= float(own["end_s"])
    assert float(low["avg_tardiness_s"]) >= float(own["avg_tardiness_s"])


@pytest.mark.parametrize(
    ("gpu", "value", "pieces"),
    [
        ("h200-141gb", "150", ["--power-cap 150 W", "h200-141gb", "200-700 W"]),
        ("h200-141gb", "800W", ["--power-cap 800 W", "200-700 W"]),
        ("h200-141gb", "0.8", ["--power-cap 0.8 W", "200-700 W"]),
        ("a100-40gb", "300", ["--power-cap 300 W", "a100-40gb", "above its idle power 40 W", "250 W"]),
        ("a100-40gb", "lots", ["--power-cap", "expected watts", "'lots'"]),
        ("a100-40gb", "-5", ["--power-cap", "expected watts", "'-5'"]),
    ],
)
def test_power_cap_out_of_range_names_the_limits(
    capsys: pytest.CaptureFixture[str], gpu: str, value: str, pieces: list[str]
) -> None:
    needs_simulator()
    try:
        code = main(["mig", "run", "--gpu", gpu, *FIXED, "--rate", "1", "--hours", "1", "--power-cap", value])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert_one_line_error(capsys, code, *pieces)
