"""Hostile inputs to every ``wattsched mig`` command and every MIG-side file reader (issue #7, part 2).

Each case must end with exit status 2, nothing on stdout, exactly one stderr line ``wattsched: error: ...``
that names what was wrong and where (file, row, column or option), no traceback, and no file left behind in
the output folder (writes are atomic). The library readers (trace, MIG profile TOML, slice-speed CSV, import
adapters) must raise :class:`InputError`/:class:`ConfigError` naming the file, never another exception.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest
from cli_checks import assert_one_line_error, cli, lines, run_in, write

from wattsched.cli import main
from wattsched.errors import InputError, WattschedError
from wattsched.hardware.catalogue import load_gpu
from wattsched.workload.adapters import ImportOptions, import_trace
from wattsched.workload.measured import load_slice_speeds
from wattsched.workload.traces import read_trace

TRACE_HEADER = "job_id,arrival_s,deadline_s,kind,scaling,dur_1g_s,dur_2g_s,dur_3g_s,dur_4g_s,dur_7g_s"
GOOD_ROW = "j1,0,100,inference,linear,70,35,24,18,10"
PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
PHILLY_ROWS = ["2017-10-09 07:01:55,66.0,1,66.0,c1", "2017-10-09 08:13:03,2951.0,1,2951.0,c1"]
ALIBABA_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time"
)
ALIBABA_ROWS = [
    "p0,1000,1024,1,1000,,LS,Succeeded,0,100,0",
    "p1,1000,1024,1,500,,BE,Succeeded,50,900,60",
    "p2,1000,1024,1,500,,BE,Running,70,1000,80",
]
SPEED_HEADER = "source,model,kind,batch_size,slice_g,throughput_or_time,unit"
SPEED_ROWS = ["x,m,inference,1,1,10,samples/s", "x,m,inference,1,7,50,samples/s"]
RUN = ["mig", "run", "--config", "3", "--policy", "edf-fs", "--json"]


# ------------------------------------------------------------------------------- trace reader via mig run

TRACE_CASES: list[tuple[str, str, bytes | str, tuple[str, ...]]] = [
    # (case id, file name, content, pieces the one error line must contain)
    (
        "malformed-quote",
        "t.csv",
        lines(TRACE_HEADER, '"j1,0,100,inference,linear,70,35,24,18,10'),
        ("t.csv", "cannot parse csv"),
    ),
    (
        "truncated-row",
        "t.csv",
        lines(TRACE_HEADER, "j1,0,100,inference,linear,70,35"),
        ("t.csv", "row 1", "dur_3g_s"),
    ),
    ("truncated-mid-cell", "t.csv", TRACE_HEADER + "\nj1,0,100,infer", ("t.csv", "row 1", "kind")),
    ("row-longer-than-header", "t.csv", lines(TRACE_HEADER, GOOD_ROW + ",7,8"), ("t.csv", "cannot parse")),
    (
        "huge-1e308-overflows",
        "t.csv",
        lines(TRACE_HEADER, "j1,1e308,1e308,inference,linear,1e308,1e308,1e308,1e308,1e308"),
        ("t.csv", "overflowed", "too large"),
    ),
    (
        "1e400-is-inf",
        "t.csv",
        lines(TRACE_HEADER, "j1,0,100,inference,linear,70,35,24,18,1e400"),
        ("t.csv", "row 1", "dur_7g_s", "finite"),
    ),
    (
        "wrong-type-text",
        "t.csv",
        lines(TRACE_HEADER, "j1,soon,100,inference,linear,70,35,24,18,10"),
        ("t.csv", "row 1", "arrival_s", "'soon'"),
    ),
    (
        "wrong-type-bool",
        "t.csv",
        lines(TRACE_HEADER, "j1,0,100,inference,linear,True,35,24,18,10"),
        ("row 1", "dur_1g_s"),
    ),
    (
        "nan",
        "t.csv",
        lines(TRACE_HEADER, GOOD_ROW, "j2,nan,100,inference,linear,70,35,24,18,10"),
        ("t.csv", "row 2", "arrival_s", "finite"),
    ),
    (
        "inf",
        "t.csv",
        lines(TRACE_HEADER, "j1,0,inf,inference,linear,70,35,24,18,10"),
        ("row 1", "deadline_s", "finite"),
    ),
    (
        "negative-arrival",
        "t.csv",
        lines(TRACE_HEADER, "j1,-1,100,inference,linear,70,35,24,18,10"),
        ("row 1", "arrival_s", ">= 0"),
    ),
    (
        "negative-duration",
        "t.csv",
        lines(TRACE_HEADER, "j1,0,100,inference,linear,70,35,-24,18,10"),
        ("row 1", "dur_3g_s", "> 0"),
    ),
    (
        "zero-duration",
        "t.csv",
        lines(TRACE_HEADER, "j1,0,100,inference,linear,70,35,24,0,10"),
        ("row 1", "dur_4g_s"),
    ),
    (
        "deadline-before-arrival",
        "t.csv",
        lines(TRACE_HEADER, "j1,50,10,inference,linear,70,35,24,18,10"),
        ("row 1", "deadline_s"),
    ),
    (
        "unknown-kind",
        "t.csv",
        lines(TRACE_HEADER, "j1,0,100,batch,linear,70,35,24,18,10"),
        ("row 1", "kind", "'batch'"),
    ),
    ("empty-file", "t.csv", b"", ("t.csv", "empty")),
    ("header-only", "t.csv", lines(TRACE_HEADER), ("t.csv", "no job rows")),
    ("blank-lines-only", "t.csv", b"\n\n\n", ("t.csv", "empty")),
    (
        "missing-column",
        "t.csv",
        lines("job_id,arrival_s,deadline_s,kind,dur_1g_s", "j1,0,100,inference,7"),
        ("t.csv", "scaling", "missing"),
    ),
    (
        "no-duration-column",
        "t.csv",
        lines("job_id,arrival_s,deadline_s,kind,scaling", "j1,0,100,inference,linear"),
        ("t.csv", "dur_1g_s", "missing"),
    ),
    (
        "duplicate-id",
        "t.csv",
        lines(TRACE_HEADER, GOOD_ROW, GOOD_ROW),
        ("t.csv", "row 2", "job_id", "duplicate"),
    ),
    (
        "duplicate-header-column",
        "t.csv",
        lines(TRACE_HEADER + ",kind", GOOD_ROW + ",training"),
        ("t.csv", "kind", "twice"),
    ),
    ("wrong-suffix", "t.txt", lines(TRACE_HEADER, GOOD_ROW), ("t.txt", "suffix")),
    ("no-suffix", "trace", lines(TRACE_HEADER, GOOD_ROW), ("trace", "suffix")),
    (
        "non-utf8",
        "t.csv",
        lines(TRACE_HEADER).encode() + b"j\xff1,0,100,inference,linear,70,35,24,18,10\n",
        ("t.csv", "UTF-8"),
    ),
    ("utf16-bom", "t.csv", lines(TRACE_HEADER, GOOD_ROW).encode("utf-16"), ("t.csv", "UTF-8")),
    ("nul-bytes", "t.csv", b"\x00" * 64, ("t.csv",)),
    (
        "csv-text-in-parquet",
        "t.parquet",
        lines(TRACE_HEADER, GOOD_ROW),
        ("t.parquet", "cannot parse parquet"),
    ),
    ("garbage-parquet", "t.pq", b"PAR1" + bytes(range(256)) + b"PAR1", ("t.pq", "parquet")),
    ("truncated-parquet", "t.parquet", None, ("t.parquet", "parquet")),  # content made in the test
]


@pytest.mark.parametrize(
    ("name", "content", "pieces"), [c[1:] for c in TRACE_CASES], ids=[c[0] for c in TRACE_CASES]
)
def test_mig_run_refuses_a_hostile_trace(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes | str | None,
    pieces: tuple[str, ...],
) -> None:
    inputs, outputs = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    outputs.mkdir()
    if content is None:  # the first half of a valid Parquet trace
        good = inputs / "good.parquet"
        pd.read_csv(write(inputs / "good.csv", lines(TRACE_HEADER, GOOD_ROW))).to_parquet(good)
        content = good.read_bytes()[: good.stat().st_size // 2]
    trace = write(inputs / name, content)
    code = run_in(outputs, [*RUN, "--trace", str(trace), "--jobs-out", str(outputs / "jobs.csv")])
    assert_one_line_error(capsys, code, *pieces)
    if "overflowed" in pieces:  # a valid file whose numbers overflow the simulation: the command refuses it
        assert len(read_trace(trace)) == 1
    else:  # the library reader refuses it too, naming the file
        with pytest.raises(InputError) as caught:
            read_trace(trace)
        assert caught.value.path == str(trace)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_mig_run_trace_that_is_not_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    trace = tmp_path / "t.csv"
    if kind == "directory":
        trace.mkdir()
    code = run_in(tmp_path, [*RUN, "--trace", str(trace)])
    assert_one_line_error(capsys, code, "t.csv", "not found" if kind == "missing" else "directory")


def test_huge_durations_give_no_infinity_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 1e308 s of 1g work: P(u) * 1e308 s overflows float64, so energy_j would be inf ("Infinity" is not JSON).
    trace = write(
        tmp_path / "t.csv", lines(TRACE_HEADER, "j1,0,1e308,inference,linear,1e308,1e308,1e308,1e308,1e308")
    )
    code = main([*RUN, "--trace", str(trace)])
    assert_one_line_error(capsys, code, "t.csv", "energy_j")
    code = main([*RUN, "--rate", "1", "--hours", "0.5", "--horizon-s", "1e308"])
    assert_one_line_error(capsys, code, "overflowed", "energy_j")


# ----------------------------------------------------------------------------------- mig run / generate

RUN_OPTION_CASES = [
    (["--config", "13", "--policy", "edf-fs", "--rate", "1"], ("configuration '13'", "valid")),
    (["--config", "three", "--policy", "edf-fs", "--rate", "1"], ("configuration 'three'",)),
    (["--config", "3", "--policy", "fifo", "--rate", "1"], ("fifo", "edf-fs")),
    (["--config", "3", "--policy", "edf-fs", "--rate", "1", "--horizon-s", "nan"], ("--horizon-s",)),
    (["--config", "3", "--policy", "edf-fs", "--rate", "1", "--horizon-s", "-5"], ("--horizon-s",)),
    (["--config", "3", "--policy", "edf-fs", "--rate", "-1"], ("--rate",)),
    (["--config", "3", "--policy", "edf-fs", "--rate", "x"], ("--rate", "'x'")),
    (["--config", "3", "--policy", "edf-fs"], ("one of the arguments",)),
    (["--config", "3", "--policy", "edf-fs", "--rate", "1", "--profile", "alibaba-day"], ("not allowed",)),
    (
        ["--config", "3", "--policy", "edf-fs", "--rate", "1", "--jobs-out", "jobs.json"],
        ("jobs.json", "suffix"),
    ),
    (
        ["--config", "3", "--policy", "edf-fs", "--rate", "1", "--hours", "0.1", "--jobs-out", "nodir/j.csv"],
        ("nodir/j.csv", "folder does not exist"),
    ),
    (["--config", "3", "--policy", "edf-fs", "--rate", "1e308"], ("arrivals", "at most")),
    (["--config", "3", "--policy", "edf-fs", "--rate", "1", "--hours", "1e12"], ("arrivals", "at most")),
    (["--config", "3", "--policy", "edf-fs", "--rate", "1", "--preset", "bogus"], ("unknown preset",)),
    (["--config", "3", "--policy", "edf-fs", "--rate", "1", "--deadline-rule", "late"], ("--deadline-rule",)),
]


@pytest.mark.parametrize(("argv", "pieces"), RUN_OPTION_CASES)
def test_mig_run_bad_options(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    pieces: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(capsys, run_in(tmp_path, ["mig", "run", *argv]), *pieces)


def test_mig_run_trace_with_generator_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write(tmp_path / "t.csv", lines(TRACE_HEADER, GOOD_ROW))
    code = main([*RUN, "--trace", str(trace), "--seed", "3"])
    assert_one_line_error(capsys, code, "--seed", "--trace")
    code = main([*RUN, "--trace", str(trace), "--preset", "paper"])
    assert_one_line_error(capsys, code, "--preset", "--trace")


def test_jobs_out_onto_a_directory_leaves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "jobs.csv").mkdir()
    code = run_in(tmp_path, [*RUN, "--rate", "1", "--hours", "0.2", "--jobs-out", str(tmp_path / "jobs.csv")])
    assert_one_line_error(capsys, code, "jobs.csv", "directory")
    assert list((tmp_path / "jobs.csv").iterdir()) == []


GENERATE_CASES = [
    (["--rate", "0"], ("--rate", "> 0")),
    (["--rate", "nan"], ("--rate",)),
    (["--rate", "inf"], ("--rate",)),
    (["--rate", "-2"], ("--rate",)),
    (["--rate", "1e400"], ("--rate",)),  # argparse reads 1e400 as inf
    (["--rate", "1e308"], ("arrivals", "at most")),  # a finite rate whose job count cannot be drawn
    (["--rate", "1", "--hours", "1e9"], ("arrivals", "at most")),  # 6e10 jobs would need 450 GiB
    (["--profile", "alibaba-day", "--hours", "1e9"], ("arrivals", "at most")),
    (["--rate", "1", "--rate-multiplier", "1e300"], ("arrivals", "at most")),
    (["--rate", "1", "--hours", "0"], ("--hours",)),
    (["--rate", "1", "--hours", "-1"], ("--hours",)),
    (["--rate", "1", "--hours", "1e-300"], ("no jobs",)),
    (["--rate", "1", "--inference-share", "1.5"], ("--inference-share", "[0, 1]")),
    (["--rate", "1", "--inference-share", "nan"], ("--inference-share",)),
    (["--rate", "1", "--seed", "-1"], ("--seed", ">= 0")),
    (["--rate", "1", "--seed", "1.5"], ("--seed", "'1.5'")),
    (["--profile", "weekend"], ("--profile", "weekend", "alibaba-day")),
    (["--rate", "1", "--hours", "one"], ("--hours",)),
    (["--rate", "1", "--preset", "bogus"], ("unknown preset 'bogus'", "literal, paper")),
    (["--profile", "alibaba-day", "--preset", ""], ("unknown preset ''",)),
    (["--rate", "1", "--deadline-rule", "slice"], ("--deadline-rule 'slice'", "slice-aware")),
]


@pytest.mark.parametrize(("argv", "pieces"), GENERATE_CASES)
def test_mig_generate_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], pieces: tuple[str, ...]
) -> None:
    code = run_in(tmp_path, ["mig", "generate", *argv, "-o", str(tmp_path / "t.csv")])
    assert_one_line_error(capsys, code, *pieces)


@pytest.mark.parametrize(
    ("output", "pieces"),
    [
        ("t.txt", ("t.txt", "suffix")),
        ("t", ("suffix",)),
        ("nodir/t.csv", ("nodir/t.csv", "folder does not exist")),
        ("nodir/t.parquet", ("nodir/t.parquet", "folder does not exist")),
        ("isdir.csv", ("isdir.csv", "directory")),
        ("afile/t.csv", ("afile/t.csv", "folder does not exist")),  # a file where a folder should be
    ],
)
def test_mig_generate_bad_output_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str, pieces: tuple[str, ...]
) -> None:
    (tmp_path / "isdir.csv").mkdir()
    (tmp_path / "afile").write_bytes(b"")
    argv = ["mig", "generate", "--rate", "1", "--hours", "0.2", "-o", str(tmp_path / output)]
    code = run_in(tmp_path, argv)
    assert_one_line_error(capsys, code, *pieces)
    assert list((tmp_path / "isdir.csv").iterdir()) == []  # no temp file left inside either


@pytest.mark.parametrize(
    ("argv", "piece"),
    [
        (["mig"], "required: COMMAND"),  # was: help on stdout and exit 2
        (["mig", "configs", "extra"], "unrecognized arguments: extra"),
        (["mig", "explode"], "invalid choice: 'explode'"),
        (["mig", "run"], "required"),
        (["mig", "generate", "--rate", "1"], "-o/--output"),
    ],
)
def test_mig_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], piece: str) -> None:
    assert_one_line_error(capsys, cli(argv), piece)


def test_failed_write_keeps_the_previous_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.csv"
    assert main(["mig", "generate", "--rate", "1", "--hours", "0.5", "-o", str(out)]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    code = run_in(tmp_path, ["mig", "generate", "--rate", "1", "--hours", "1e12", "-o", str(out)])
    assert_one_line_error(capsys, code, "arrivals")
    assert out.read_bytes() == before


# -------------------------------------------------------------------------------------------- mig import


def import_argv(fmt: str, source: Path, out: Path, *extra: str) -> list[str]:
    return ["mig", "import", "--format", fmt, "--input", str(source), "-o", str(out), *extra]


IMPORT_FILE_CASES: list[tuple[str, str, str | bytes, tuple[str, ...]]] = [
    ("philly-empty", "philly", b"", ("in.csv", "empty")),
    ("philly-header-only", "philly", lines(PHILLY_HEADER), ("in.csv", "no data rows")),
    (
        "philly-missing-column",
        "philly",
        lines("timestamp,num_gpus", "2017-10-09 07:01:55,1"),
        ("in.csv", "duration", "missing"),
    ),
    (
        "philly-all-rows-bad",
        "philly",
        lines(PHILLY_HEADER, "yesterday,abc,1,1,c", "2017-10-09 07:01:55,-5,1,1,c"),
        ("in.csv", "no usable rows"),
    ),
    (
        "philly-1e308-overflows",
        "philly",
        lines(PHILLY_HEADER, *PHILLY_ROWS, "2017-10-09 09:00:00,1e308,1,1,c"),
        ("in.csv", "row 3", "float64"),
    ),
    (
        "philly-gpus-overflow",
        "philly",
        lines(PHILLY_HEADER, "2017-10-09 09:00:00,1e300,1e300,1,c"),
        ("in.csv", "row 1", "float64"),
    ),
    (
        "philly-non-utf8",
        "philly",
        lines(PHILLY_HEADER).encode() + b"2017-10-09 07:01:55,6\xff6,1,1,c\n",
        ("in.csv", "text"),
    ),
    (
        "philly-malformed-quote",
        "philly",
        lines(PHILLY_HEADER, '"2017-10-09 07:01:55,66,1,66,c'),
        ("in.csv", "CSV"),
    ),
    ("philly-parquet-bytes", "philly", b"PAR1\x15\x04\x15\x10\x00\xff\xfePAR1", ("in.csv",)),
    ("alibaba-empty", "alibaba-2023", b"", ("in.csv", "empty")),
    ("alibaba-header-only", "alibaba-2023", lines(ALIBABA_HEADER), ("in.csv", "no data rows")),
    (
        "alibaba-inf-times",
        "alibaba-2023",
        lines(
            ALIBABA_HEADER,
            "p0,1,1,1,1000,,LS,Succeeded,1e400,1e400,0",
            "p1,1,1,1e308,1000,,LS,Succeeded,0,5,0",
        ),
        ("in.csv", "row 2", "float64"),
    ),
    (
        "alibaba-1e308-run",
        "alibaba-2023",
        lines(ALIBABA_HEADER, "p0,1,1,1,1000,,LS,Succeeded,0,1e308,0", "p1,1,1,1,1000,,LS,Running,0,10,0"),
        ("in.csv", "row 1", "float64"),
    ),
    (
        "alibaba-only-duplicates-and-junk",
        "alibaba-2023",
        lines(ALIBABA_HEADER, "p0,1,1,1,nan,,LS,Succeeded,0,100,0", "p1,1,1,1,1000,,XX,Succeeded,0,100,0"),
        ("in.csv", "no usable rows"),
    ),
    (
        "alibaba-negative-times",
        "alibaba-2023",
        lines(ALIBABA_HEADER, "p0,1,1,1,1000,,LS,Succeeded,-1,-1,-1"),
        ("in.csv", "no usable rows"),
    ),
]


@pytest.mark.parametrize(
    ("fmt", "content", "pieces"), [c[1:] for c in IMPORT_FILE_CASES], ids=[c[0] for c in IMPORT_FILE_CASES]
)
def test_mig_import_refuses_a_hostile_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
    content: str | bytes,
    pieces: tuple[str, ...],
) -> None:
    source = write(tmp_path / "in.csv", content)
    out = tmp_path / "out"
    out.mkdir()
    code = run_in(out, import_argv(fmt, source, out / "t.csv", "--json"))
    assert_one_line_error(capsys, code, *pieces)
    with pytest.raises(WattschedError):
        import_trace(fmt, source, ImportOptions())


@pytest.fixture
def philly(tmp_path: Path) -> Path:
    return write(tmp_path / "philly.csv", lines(PHILLY_HEADER, *PHILLY_ROWS))


IMPORT_OPTION_CASES = [
    (["--seed", "-1"], ("seed", ">= 0")),
    (["--day", "-1"], ("day",)),
    (["--day", "3"], ("no job arrives",)),
    (["--start-s", "nan"], ("start_s", "finite")),
    (["--start-s", "10", "--end-s", "5"], ("end_s",)),
    (["--end-s", "5"], ("--end-s needs --start-s",)),
    (["--target-rate", "0"], ("target rate",)),
    (["--target-rate", "1e308"], ("thinning can only lower",)),  # was an OverflowError traceback
    (["--target-rate", "1e308", "--rate-method", "stretch"], ("not finite",)),
    (["--duration-scale", "0"], ("duration scale",)),
    (["--duration-scale", "inf"], ("duration_scale", "finite")),
    (["--duration-scale", "1e308"], ("philly.csv", "float64")),
    (["--target-load", "-1"], ("target load",)),
    (["--deadline-slack", "2", "1"], ("deadline slack",)),
    (["--deadline-slack", "nan", "nan"], ("deadline slack",)),
    (["--inference-share", "2"], ("inference share",)),
    (["--inference-max-s", "nan"], ("inference_max_s",)),
    (["--min-duration-s", "1e9"], ("no usable rows",)),
    (["--scaling", "measured"], ("--speeds",)),
    (["--speeds", "x.csv"], ("--speeds", "measured")),
    (["--class-rule", "source"], ("no job class",)),
    (["--format-typo"], ("unrecognized arguments",)),
]


@pytest.mark.parametrize(("extra", "pieces"), IMPORT_OPTION_CASES)
def test_mig_import_bad_options(
    tmp_path: Path,
    philly: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    pieces: tuple[str, ...],
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code = run_in(out, import_argv("philly", philly, out / "t.csv", *extra))
    assert_one_line_error(capsys, code, *pieces)


@pytest.mark.parametrize(
    ("output", "pieces"),
    [
        ("t.json", ("t.json", "suffix")),
        ("nodir/t.csv", ("folder does not exist",)),
        ("isdir.pq", ("directory",)),
    ],
)
def test_mig_import_bad_output(
    tmp_path: Path, philly: Path, capsys: pytest.CaptureFixture[str], output: str, pieces: tuple[str, ...]
) -> None:
    (tmp_path / "isdir.pq").mkdir()
    code = run_in(tmp_path, import_argv("philly", philly, tmp_path / output))
    assert_one_line_error(capsys, code, *pieces)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_mig_import_input_that_is_not_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    source = tmp_path / "in.csv"
    if kind == "directory":
        source.mkdir()
    code = run_in(tmp_path, import_argv("philly", source, tmp_path / "t.csv"))
    assert_one_line_error(capsys, code, "in.csv")


# --------------------------------------------------------------------------------- slice-speed CSV (--speeds)

SPEED_CASES: list[tuple[str, str | bytes, tuple[str, ...]]] = [
    ("empty", b"", ("empty",)),
    ("header-only", lines(SPEED_HEADER), ("no data rows",)),
    ("missing-column", lines("source,model,kind", "x,m,inference"), ("batch_size", "missing")),
    (
        "1e400-value",
        lines(SPEED_HEADER, "x,m,inference,1,1,1e400,samples/s", SPEED_ROWS[1]),
        ("row 1", "throughput_or_time"),
    ),
    ("nan-value", lines(SPEED_HEADER, "x,m,inference,1,1,nan,samples/s", SPEED_ROWS[1]), ("row 1",)),
    ("negative-value", lines(SPEED_HEADER, "x,m,inference,1,1,-3,samples/s", SPEED_ROWS[1]), ("row 1",)),
    (
        "huge-ratio-overflows",
        lines(SPEED_HEADER, "x,m,inference,1,1,1e-308,samples/s", "x,m,inference,1,7,1e308,samples/s"),
        ("throughput_or_time", "float64"),
    ),
    (
        "tiny-time-overflows",
        lines(SPEED_HEADER, "x,m,inference,1,1,5e-324,s/batch", "x,m,inference,1,7,1e308,s/batch"),
        ("throughput_or_time", "float64"),
    ),
    (
        "wrong-type-slice",
        lines(SPEED_HEADER, "x,m,inference,1,5g,10,samples/s", SPEED_ROWS[1]),
        ("row 1", "slice_g"),
    ),
    (
        "wrong-type-batch",
        lines(SPEED_HEADER, "x,m,inference,one,1,10,samples/s", SPEED_ROWS[1]),
        ("row 1", "batch_size"),
    ),
    ("unknown-unit", lines(SPEED_HEADER, "x,m,inference,1,1,10,furlongs", SPEED_ROWS[1]), ("row 1", "unit")),
    ("duplicate-measurement", lines(SPEED_HEADER, *SPEED_ROWS, SPEED_ROWS[0]), ("row 3", "duplicate")),
    ("truncated-row", lines(SPEED_HEADER, SPEED_ROWS[0], "x,m,inference,1,7"), ("row 2",)),
    (
        "row-longer-than-header",
        lines(SPEED_HEADER, SPEED_ROWS[0] + ",extra", SPEED_ROWS[1]),
        ("not a readable",),
    ),
    ("non-utf8", lines(SPEED_HEADER).encode() + b"x,m\xff,inference,1,1,1,samples/s\n", ("not a readable",)),
    ("single-size-only", lines(SPEED_HEADER, SPEED_ROWS[0]), ("two or more",)),
]


@pytest.mark.parametrize(("content", "pieces"), [c[1:] for c in SPEED_CASES], ids=[c[0] for c in SPEED_CASES])
def test_slice_speed_csv_hostile(
    tmp_path: Path,
    philly: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | bytes,
    pieces: tuple[str, ...],
) -> None:
    speeds = write(tmp_path / "speeds.csv", content)
    out = tmp_path / "out"
    out.mkdir()
    argv = import_argv("philly", philly, out / "t.csv", "--scaling", "measured", "--speeds", str(speeds))
    code = run_in(out, argv)
    assert_one_line_error(capsys, code, "speeds.csv", *pieces)
    with pytest.raises(InputError) as caught:
        load_slice_speeds(speeds)
    assert caught.value.path == str(speeds)


# ------------------------------------------------------------------------------------------ MIG profile TOML


def a100_toml() -> str:
    return resources.files("wattsched.hardware").joinpath("data/gpus/a100-40gb.toml").read_text()


PROFILE_CASES: list[tuple[str, str | bytes | None, str]] = [
    ("empty", "", "gpu"),
    ("not-toml", "[[[", "invalid TOML"),
    ("non-utf8", b"\xff\xfe[gpu]", "not UTF-8"),
    ("slices-text", 'compute_slices = 7|compute_slices = "seven"', "seven"),
    ("slices-1e400", "compute_slices = 7|compute_slices = 1e400", "compute_slices"),
    ("slices-negative", "compute_slices = 7|compute_slices = -1", "compute_slices"),
    ("power-nan", "busy_w = [119.0|busy_w = [nan", "busy_w"),
    ("power-inf", "busy_w = [119.0|busy_w = [inf", "busy_w"),
    ("power-negative", "busy_w = [119.0|busy_w = [-119.0", "busy_w"),
    ("power-falls", "busy_w = [119.0, 160.0|busy_w = [160.0, 119.0", "must not fall"),
    ("power-short", ", 248.5, 248.5]|, 248.5]", "7 values"),
    ("power-text", 'busy_w = [119.0|busy_w = ["idle"', "idle"),
    ("idle-negative", "idle_w = 40.0|idle_w = -40.0", "idle_w"),
    ("unknown-key", "[power]|[power]\nidle_watts = 3", "idle_watts"),
    ("repartition-negative", "repartition_s = 4.0|repartition_s = -4.0", "repartition_s"),
    ("repartition-nan", "repartition_s = 4.0|repartition_s = nan", "repartition_s"),
    ("repartition-text", 'repartition_s = 4.0|repartition_s = "soon"', "soon"),
    ("config-no-id", '\n[[configuration]]\nslices = ["7g.40gb"]\n', "id"),
    ("config-id-text", '\n[[configuration]]\nid = "x"\nslices = ["7g.40gb"]\n', "'x'"),
    ("config-duplicate-id", '\n[[configuration]]\nid = 1\nslices = ["7g.40gb"]\n', "duplicate"),
    ("slice-not-text", "\n[[configuration]]\nid = 99\nslices = [1]\n", "list of strings"),
    ("slice-unknown-profile", '\n[[configuration]]\nid = 99\nslices = ["8g.80gb"]\n', "unknown profile"),
    ("slice-bad-start", '\n[[configuration]]\nid = 99\nslices = ["1g.5gb@x"]\n', "bad start"),
    ("slice-overlap", '\n[[configuration]]\nid = 99\nslices = ["4g.20gb@0", "3g.20gb@0"]\n', "overlaps"),
    (
        "slice-unplaceable",
        '\n[[configuration]]\nid = 99\nslices = ["3g.20gb", "3g.20gb", "1g.5gb"]\n',
        "cannot be placed",
    ),
    (
        "placements-overlap",
        "placements = [[0, 2], [2, 2], [4, 2], [6, 2]]|placements = [[0, 2], [1, 2]]",
        "must not overlap",
    ),
    ("gpu-not-a-table", "[gpu]|[gpu_]", "gpu"),
]


@pytest.mark.parametrize(("edit", "piece"), [c[1:] for c in PROFILE_CASES], ids=[c[0] for c in PROFILE_CASES])
def test_gpu_catalogue_toml_hostile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str | bytes, piece: str
) -> None:
    base = a100_toml()
    if isinstance(edit, bytes):
        content: str | bytes = edit
    elif edit.startswith("\n"):
        head, sep, tail = base.partition("\n# P1's choices")
        content = head + edit + sep + tail  # an extra configuration, before the [roles] table
    elif "|" in edit:
        old, new = edit.split("|")
        assert old in base
        content = base.replace(old, new, 1)
    else:
        content = edit
    path = write(tmp_path / "gpu.toml", content)
    with pytest.raises(InputError) as caught:
        load_gpu(path)
    assert caught.value.path == str(path)
    assert piece in str(caught.value)
    assert "\n" not in str(caught.value)
    capsys.readouterr()
    for argv in (
        ["mig", "configs", "--gpu", str(path)],
        ["mig", "run", "--gpu", str(path), "--config", "1", "--policy", "edf-fs", "--rate", "1"],
    ):
        assert_one_line_error(capsys, run_in(tmp_path, argv), "gpu.toml", piece)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_gpu_catalogue_toml_not_a_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "gpu.toml"
    if kind == "directory":
        path.mkdir()
    with pytest.raises(InputError, match=r"gpu\.toml"):
        load_gpu(path)


def test_gpu_catalogue_round_trip_of_the_shipped_file(tmp_path: Path) -> None:
    # The checks added for hostile files must accept the shipped A100 entry unchanged.
    shipped = load_gpu(write(tmp_path / "a100.toml", a100_toml()))
    assert shipped.configurations == load_gpu("a100-40gb").configurations
    assert shipped.power == load_gpu("a100-40gb").power


# ---------------------------------------------------------------------------------------- a real process


def test_real_process_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.csv", lines(TRACE_HEADER, "j1,0,100,inference,linear,70,35,24,18,1e400"))
    done = subprocess.run(
        [sys.executable, "-m", "wattsched.cli", *RUN, "--trace", str(trace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "t.csv, row 1, column 'dur_7g_s'" in done.stderr


GPU_OPTION_CASES = [
    (["mig", "configs", "--gpu", "b200"], ("unknown GPU 'b200'", "a100-40gb", "h200-141gb")),
    (
        ["mig", "run", "--gpu", "h200-141gb", "--config", "13", "--policy", "edf-fs", "--rate", "1"],
        ("unknown configuration '13'", "h200-141gb"),
    ),
    (
        [
            "mig",
            "run",
            "--gpu",
            "h200-141gb",
            "--config",
            "3",
            "--policy",
            "edf-fs",
            "--rate",
            "1",
            "--power-curve",
            "warp",
        ],
        ("unknown power curve 'warp'", "transformer-inference"),
    ),
    (
        ["mig", "generate", "--gpu", "nope.toml", "--rate", "1", "-o", "t.csv"],
        ("nope.toml", "file not found"),
    ),
]


@pytest.mark.parametrize(("argv", "pieces"), GPU_OPTION_CASES)
def test_gpu_option_errors_are_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    pieces: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(capsys, run_in(tmp_path, argv), *pieces)


def test_a_trace_missing_a_size_the_gpu_needs_names_the_file_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(
        tmp_path / "t.csv",
        lines(
            "job_id,arrival_s,deadline_s,kind,scaling,dur_1g_s,dur_2g_s,dur_full_s",
            "m,0,100,training,measured,30,15,40",
        ),
    )
    code = run_in(tmp_path, ["mig", "run", "--trace", str(trace), "--config", "3", "--policy", "edf-fs"])
    assert_one_line_error(capsys, code, "t.csv", "row 1", "dur_3g_s", "no rule")
