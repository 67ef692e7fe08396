"""Hostile inputs to every ``wattsched dvfs`` command (generate, solve, run, fit) and the DVFS readers.

Each case must end with exit status 2, nothing on stdout, exactly one stderr line ``wattsched: error: ...``
naming what was wrong and where (file, row, column or option), no traceback, no RuntimeWarning, and no file
left behind in the output folder. The library readers (``read_tasks``, ``read_measurements``,
``load_dvfs_gpu``) raise :class:`InputError` naming the file, never another exception.
"""

from __future__ import annotations

import io
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_checks import assert_one_line_error, cli, lines, run_in, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wattsched.dvfs.fitting import read_measurements
from wattsched.dvfs.model import MAX_POWER_W, MAX_TIME_S
from wattsched.dvfs.offline import run_offline
from wattsched.dvfs.online import run_online
from wattsched.dvfs.solver import solve
from wattsched.dvfs.tasks import TASK_COLUMNS, read_tasks
from wattsched.errors import InputError
from wattsched.hardware.dvfs import default_dvfs_gpu, load_dvfs_gpu

# The active hypothesis profile (tests/conftest.py): 100 examples, 1000 with HYPOTHESIS_PROFILE=slow.
EXAMPLES = settings().max_examples

HEADER = ",".join(TASK_COLUMNS)
GOOD = "a,0,1000,40,20,40,60,240,0.5"
FIT_HEADER = "appName,coreF,memF,argNo,kernel,time/ms,power/W"
FIT_ROWS = [
    "app,1600,4000,x,k,2.0,200.0",
    "app,1400,4500,x,k,2.2,190.0",
    "app,1200,5000,x,k,2.5,180.0",
    "app,1000,5500,x,k,2.9,170.0",
]


def parquet_bytes(tmp_path: Path, frame: pd.DataFrame) -> bytes:
    path = tmp_path / "made.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, compression="none")
    data = path.read_bytes()
    path.unlink()
    return data


def good_frame() -> pd.DataFrame:
    return pd.read_csv(io.StringIO(lines(HEADER, GOOD)), dtype={"task_id": str})


# ---------------------------------------------------------------------------- task files: solve and run

TASK_CASES: list[tuple[str, str, str | bytes | None, tuple[str, ...]]] = [
    # (case id, file name, content, pieces of the one error line); None: content made in the test
    ("malformed-quote", "t.csv", lines(HEADER, '"a,0,1000,40,20,40,60,240,0.5'), ("t.csv", "cannot parse")),
    ("truncated-row", "t.csv", lines(HEADER, "a,0,1000,40,20,40"), ("t.csv", "row 1", "t0_s")),
    ("truncated-mid-cell", "t.csv", HEADER + "\na,0,1000,40,2", ("t.csv", "row 1", "c_w")),
    ("row-longer-than-header", "t.csv", lines(HEADER, GOOD + ",7"), ("t.csv", "cannot parse")),
    (
        "huge-1e308-time-and-power",
        "t.csv",
        lines(HEADER, "a,0,1e12,1e308,10,10,1e308,1e308,0.5"),
        ("t.csv", "row 1", "p0_w", "<= 1e+12"),
    ),
    (
        "huge-time",
        "t.csv",
        lines(HEADER, "a,0,1e12,40,20,40,1e308,1e308,0.5"),
        ("row 1", "t0_s", "<= 1e+12 s"),
    ),
    ("huge-deadline", "t.csv", lines(HEADER, "a,0,1e308,40,20,40,60,240,0.5"), ("row 1", "deadline_s")),
    ("huge-arrival", "t.csv", lines(HEADER, "a,1e300,2e300,40,20,40,60,240,0.5"), ("row 1", "arrival_s")),
    ("1e400-is-inf", "t.csv", lines(HEADER, "a,0,1000,40,20,40,60,1e400,0.5"), ("row 1", "d_s", "finite")),
    (
        "wrong-type-text",
        "t.csv",
        lines(HEADER, "a,soon,1000,40,20,40,60,240,0.5"),
        ("row 1", "arrival_s", "'soon'"),
    ),
    ("wrong-type-bool", "t.csv", lines(HEADER, "a,0,1000,True,20,40,60,240,0.5"), ("row 1", "p0_w", "True")),
    ("wrong-type-hex", "t.csv", lines(HEADER, "a,0,1000,0x10,20,40,60,240,0.5"), ("row 1", "p0_w")),
    ("nan", "t.csv", lines(HEADER, GOOD, "b,0,nan,40,20,40,60,240,0.5"), ("row 2", "deadline_s", "finite")),
    ("inf", "t.csv", lines(HEADER, "a,0,1000,40,inf,40,60,240,0.5"), ("row 1", "gamma_w", "finite")),
    ("empty-cell", "t.csv", lines(HEADER, "a,0,1000,40,,40,60,240,0.5"), ("row 1", "gamma_w")),
    ("negative", "t.csv", lines(HEADER, "a,0,1000,40,20,-40,60,240,0.5"), ("row 1", "c_w", ">= 0")),
    ("negative-arrival", "t.csv", lines(HEADER, "a,-1,1000,40,20,40,60,240,0.5"), ("row 1", "arrival_s")),
    ("delta-above-1", "t.csv", lines(HEADER, "a,0,1000,40,20,40,60,240,1.5"), ("row 1", "delta", "<= 1")),
    (
        "deadline-before-arrival",
        "t.csv",
        lines(HEADER, "a,50,10,40,20,40,60,240,0.5"),
        ("row 1", "deadline_s", "before"),
    ),
    ("zero-time", "t.csv", lines(HEADER, "a,0,1000,40,20,40,0,0,0.5"), ("row 1", "d_s", "> 0")),
    (
        "earliest-row-wins",
        "t.csv",
        lines(HEADER, GOOD, "b,0,1000,40,20,40,60,240,2", "c,x,1,1,1,1,1,1,1"),
        ("row 2", "delta"),
    ),
    ("empty-file", "t.csv", b"", ("t.csv", "empty")),
    ("header-only", "t.csv", lines(HEADER), ("t.csv", "no tasks")),
    ("blank-lines-only", "t.csv", b"\n\n\n", ("t.csv", "empty")),
    (
        "missing-column",
        "t.csv",
        lines(HEADER.replace(",gamma_w", ""), "a,0,1000,40,40,60,240,0.5"),
        ("t.csv", "gamma_w", "missing"),
    ),
    ("duplicate-id", "t.csv", lines(HEADER, GOOD, GOOD), ("t.csv", "row 2", "task_id", "duplicate")),
    ("duplicate-id-after-strip", "t.csv", lines(HEADER, GOOD, " " + GOOD), ("row 2", "task_id")),
    ("empty-id", "t.csv", lines(HEADER, "," + GOOD[2:]), ("row 1", "task_id", "empty")),
    (
        "duplicate-header-column",
        "t.csv",
        lines(HEADER + ",delta", GOOD + ",0.2"),
        ("t.csv", "delta", "twice"),
    ),
    ("wrong-suffix", "t.txt", lines(HEADER, GOOD), ("t.txt", "suffix")),
    ("no-suffix", "tasks", lines(HEADER, GOOD), ("tasks", "suffix")),
    ("non-utf8", "t.csv", lines(HEADER).encode() + b"\xff,0,1000,40,20,40,60,240,0.5\n", ("t.csv", "UTF-8")),
    ("utf16-bom", "t.csv", lines(HEADER, GOOD).encode("utf-16"), ("t.csv", "UTF-8")),
    ("nul-bytes", "t.csv", b"\x00" * 64, ("t.csv",)),
    ("csv-text-in-parquet", "t.parquet", lines(HEADER, GOOD), ("t.parquet", "cannot parse parquet")),
    ("garbage-parquet", "t.pq", b"PAR1" + bytes(range(256)) + b"PAR1", ("t.pq", "parquet")),
    ("truncated-parquet", "t.parquet", None, ("t.parquet", "parquet")),
    ("parquet-non-utf8-text", "t.parquet", None, ("t.parquet", "parquet")),
    ("parquet-bool-column", "t.parquet", None, ("t.parquet", "row 1", "p0_w")),
    ("parquet-duplicate-column", "t.parquet", None, ("t.parquet", "delta", "twice")),
    ("parquet-text-numbers", "t.parquet", None, ("t.parquet", "row 1", "c_w", "'lots'")),
]


def made_content(tmp_path: Path, case: str) -> bytes:
    """Parquet contents that need pyarrow to build."""
    frame = good_frame()
    if case == "truncated-parquet":
        data = parquet_bytes(tmp_path, frame)
        return data[: len(data) // 2]
    if case == "parquet-non-utf8-text":  # a task id "zzzz" whose bytes become invalid UTF-8
        data = parquet_bytes(tmp_path, frame.assign(task_id="zzzz"))
        assert data.count(b"zzzz") >= 1
        return data.replace(b"zzzz", b"\xff\xfe\xfd\xfc")
    if case == "parquet-bool-column":
        return parquet_bytes(tmp_path, frame.assign(p0_w=True))
    if case == "parquet-duplicate-column":
        table = pa.Table.from_pandas(frame, preserve_index=False)
        table = table.append_column("delta", pa.array([0.2]))
        path = tmp_path / "dup.parquet"
        pq.write_table(table, path)
        data = path.read_bytes()
        path.unlink()
        return data
    assert case == "parquet-text-numbers"
    return parquet_bytes(tmp_path, frame.assign(c_w="lots"))


COMMANDS = {
    "solve": lambda tasks, out: ["dvfs", "solve", "--tasks", str(tasks), "-o", str(out / "s.csv")],
    "run-offline": lambda tasks, out: ["dvfs", "run", "--mode", "offline", "--tasks", str(tasks), "--json"],
    "run-online": lambda tasks, out: ["dvfs", "run", "--mode", "online", "--tasks", str(tasks), "--json"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(("case", "name", "content", "pieces"), TASK_CASES, ids=[c[0] for c in TASK_CASES])
def test_dvfs_commands_refuse_a_hostile_task_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    case: str,
    name: str,
    content: str | bytes | None,
    pieces: tuple[str, ...],
) -> None:
    inputs, outputs = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    outputs.mkdir()
    tasks = write(inputs / name, made_content(tmp_path, case) if content is None else content)
    code = run_in(outputs, COMMANDS[command](tasks, outputs))
    assert_one_line_error(capsys, code, *pieces)
    with pytest.raises(InputError) as caught:  # the library reader refuses it too, naming the file
        read_tasks(tasks)
    assert caught.value.path == str(tasks) and "\n" not in str(caught.value)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_task_file_that_is_not_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, kind: str
) -> None:
    tasks = tmp_path / "t.csv"
    if kind == "directory":
        tasks.mkdir()
    code = run_in(tmp_path, COMMANDS[command](tasks, tmp_path))
    assert_one_line_error(capsys, code, "t.csv", "not found" if kind == "missing" else "directory")


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    return write(tmp_path / "tasks.csv", lines(HEADER, GOOD, "b,60,900,50,10,60,30,100,0.9"))


@pytest.mark.parametrize(
    ("output", "pieces"),
    [
        ("s.txt", ("s.txt", "suffix")),
        ("s", ("suffix",)),
        ("nodir/s.csv", ("nodir/s.csv", "folder does not exist")),
        ("nodir/s.parquet", ("nodir/s.parquet", "folder does not exist")),
        ("isdir.csv", ("isdir.csv", "directory")),
        ("afile/s.csv", ("afile/s.csv", "folder does not exist")),  # a file where a folder should be
    ],
)
def test_solve_bad_output_path(
    tmp_path: Path, task_file: Path, capsys: pytest.CaptureFixture[str], output: str, pieces: tuple[str, ...]
) -> None:
    (tmp_path / "isdir.csv").mkdir()
    (tmp_path / "afile").write_bytes(b"")
    code = run_in(tmp_path, ["dvfs", "solve", "--tasks", str(task_file), "-o", str(tmp_path / output)])
    err = assert_one_line_error(capsys, code, *pieces)
    assert ".tmp" not in err  # the error names the output, never the temporary file
    assert list((tmp_path / "isdir.csv").iterdir()) == []


def test_solve_and_run_accept_the_good_file(
    tmp_path: Path, task_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The checks above must not refuse a valid file: 2 tasks, both feasible.
    assert cli(["dvfs", "solve", "--tasks", str(task_file), "-o", str(tmp_path / "s.csv")]) == 0
    assert pd.read_csv(tmp_path / "s.csv")["feasible"].tolist() == [True, True]
    for mode in ("offline", "online"):
        if mode == "offline":
            write(task_file, lines(HEADER, GOOD))
        assert cli(["dvfs", "run", "--mode", mode, "--tasks", str(task_file), "--json"]) == 0
    capsys.readouterr()


# ------------------------------------------------------------------------------ run / generate options

RUN_OPTION_CASES = [
    (["--util", "nan"], ("--util",)),
    (["--util", "inf"], ("--util",)),
    (["--util", "1e308", "--json"], ("--util", "at most 10,000,000")),
    (["--util", "0"], ("--util", "> 0")),
    (["--util", "-1"], ("--util",)),
    (["--util", "1e-9"], ("no tasks",)),
    (["--util", "x"], ("--util", "'x'")),
    ([], ("--util",)),
    (["--util", "1", "--seed", "-1"], ("--seed", ">= 0")),
    (["--util", "1", "--seed", "1.5"], ("--seed", "'1.5'")),
    (["--util", "1", "--pairs", "0"], ("--pairs",)),
    (["--util", "1", "--pairs", "-4"], ("--pairs",)),
    (["--util", "1", "--pairs", "10000000"], ("--pairs", "1,000,000")),
    (["--util", "1", "--pairs", "64", "--pairs-per-server", "0"], ("--pairs-per-server",)),
    (["--util", "1", "--pairs", "64", "--pairs-per-server", "3"], ("--pairs-per-server", "multiple")),
    (["--util", "1", "--pairs", "64", "--pairs-per-server", "128"], ("--pairs-per-server",)),
    (["--util", "1", "--pairs", "64", "--theta", "0"], ("--theta", "(0, 1]")),
    (["--util", "1", "--pairs", "64", "--theta", "nan"], ("--theta",)),
    (["--util", "1", "--pairs", "64", "--theta", "1.5"], ("--theta",)),
    (["--util", "1", "--pairs", "64", "--slot-s", "inf"], ("--slot-s",)),
    (["--util", "1", "--pairs", "64", "--slot-s", "0"], ("--slot-s",)),
    (["--util", "1", "--pairs", "64", "--slot-s", "1e-9"], ("--slot-s",)),
    (["--util", "1", "--pairs", "64", "--mode", "online", "--slot-s", "1e9"], ("slot_s", "1e+12")),
    (["--util", "1", "--pairs", "64", "--idle-power-w", "nan"], ("--idle-power-w",)),
    (["--util", "1", "--pairs", "64", "--idle-power-w", "-1"], ("--idle-power-w",)),
    (
        ["--util", "1", "--pairs", "64", "--pairs-per-server", "4", "--idle-power-w", "1e308", "--json"],
        ("overflowed", "energy_idle_j"),
    ),
    (["--util", "1", "--pairs", "64", "--turn-on-j-per-pair", "inf"], ("--turn-on-j-per-pair",)),
    (["--util", "1", "--pairs", "64", "--turn-on-j-per-pair", "1e308"], ("overflowed", "energy_overhead_j")),
    (["--util", "1", "--pairs", "64", "--v-max", "nan"], ("--v-max",)),
    (["--util", "1", "--pairs", "64", "--v-max", "0.3"], ("--v-max", "v_min")),
    (["--util", "1", "--pairs", "64", "--drs-slots", "-1"], ("--drs-slots",)),
    (["--util", "1", "--pairs", "64", "--drs-slots", "99999999999"], ("--drs-slots",)),
    (["--util", "1", "--pairs", "64", "--algo", "fifo"], ("--algo", "fifo")),
    (["--util", "1", "--pairs", "64", "--gpu", "a100"], ("a100", "gtx1080ti")),
    (["--util", "1", "--pairs", "64", "--gpu", "missing.toml"], ("missing.toml", "not found")),
    (["--util", "1", "--pairs", "64", "--mode", "sideways"], ("--mode",)),
    (["--util", "1", "--pairs", "64", "--bogus"], ("unrecognized arguments",)),
    # the rules of P2's text / the authors' code (and --reproduce-hkbu with them)
    (["--util", "1", "--pairs", "64", "--idle-accounting", "hourly"], ("--idle-accounting", "'hourly'")),
    (["--util", "1", "--pairs", "64", "--idle-accounting", ""], ("--idle-accounting",)),
    (["--util", "1", "--pairs", "64", "--idle-accounting"], ("--idle-accounting", "expected one argument")),
    (
        ["--util", "1", "--pairs", "64", "--mode", "online", "--initial-placement", "spread"],
        ("--initial-placement", "'spread'"),
    ),
    (
        ["--util", "1", "--pairs", "64", "--initial-placement", "one-per-pair"],
        ("--initial-placement", "online runs only"),
    ),
    (
        ["--util", "1", "--pairs", "64", "--reproduce-hkbu", "--initial-placement", "pack"],
        ("--initial-placement", "online runs only"),
    ),
    (["--util", "1", "--pairs", "64", "--next-start", "NEXT-SLOT"], ("--next-start", "'NEXT-SLOT'")),
    (["--util", "1", "--pairs", "64", "--next-start", "next_slot"], ("--next-start", "'next_slot'")),
    (["--util", "1", "--pairs", "64", "--grouping", "sorted-by-l"], ("--grouping", "'sorted-by-l'")),
    (["--util", "1", "--pairs", "64", "--reproduce-hkbu", "yes"], ("unrecognized arguments: yes",)),
    (["--util", "1", "--pairs", "64", "--reproduce-hkbu", "--idle-power-w", "-85"], ("--idle-power-w",)),
    (
        ["--util", "1", "--pairs", "64", "--reproduce-hkbu", "--pairs-per-server", "5"],
        ("--pairs-per-server", "multiple"),
    ),
    (["--util", "1", "--pairs", "64", "--reproduce-hkbu", "--gpu", "h100"], ("h100", "rtx2070s")),
]


@pytest.mark.parametrize(("argv", "pieces"), RUN_OPTION_CASES)
def test_dvfs_run_bad_options(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    pieces: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(capsys, run_in(tmp_path, ["dvfs", "run", *argv]), *pieces)


def test_dvfs_run_tasks_with_generator_options(task_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli(["dvfs", "run", "--mode", "online", "--tasks", str(task_file), "--util", "1", "--seed", "2"])
    assert_one_line_error(capsys, code, "--util, --seed", "--tasks")


GENERATE_CASES = [
    (["--util", "1e9", "--pairs", "2048"], ("--util", "at most 10,000,000")),  # was a 14.9 TiB allocation
    (["--mode", "online", "--util", "1e9"], ("--util", "at most")),
    (["--util", "1e308"], ("--util", "at most")),
    (["--util", "nan"], ("--util",)),
    (["--util", "inf"], ("--util",)),
    (["--util", "0"], ("--util", "> 0")),
    (["--util", "-1"], ("--util",)),
    (["--util", "1e-9"], ("no tasks",)),
    (["--seed", "-1"], ("--seed", ">= 0")),
    (["--seed", "x"], ("--seed", "'x'")),
    (["--pairs", "0"], ("--pairs",)),
    (["--pairs", "2000000"], ("--pairs",)),
    (["--slot-s", "0"], ("--slot-s",)),
    (["--slot-s", "nan"], ("--slot-s",)),
    (["--slot-s", "-60"], ("--slot-s",)),
    (["--slot-s", "1e300"], ("slot_s", "1e+12")),
]


@pytest.mark.parametrize(("argv", "pieces"), GENERATE_CASES)
def test_dvfs_generate_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], pieces: tuple[str, ...]
) -> None:
    code = run_in(tmp_path, ["dvfs", "generate", *argv, "-o", str(tmp_path / "t.csv")])
    assert_one_line_error(capsys, code, *pieces)


@pytest.mark.parametrize(
    ("output", "pieces"),
    [
        ("t.txt", ("t.txt", "suffix")),
        ("nodir/t.csv", ("nodir/t.csv", "folder does not exist")),
        ("isdir.parquet", ("isdir.parquet", "directory")),
    ],
)
def test_dvfs_generate_bad_output_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str, pieces: tuple[str, ...]
) -> None:
    (tmp_path / "isdir.parquet").mkdir()
    argv = ["dvfs", "generate", "--util", "0.1", "--pairs", "64", "-o", str(tmp_path / output)]
    err = assert_one_line_error(capsys, run_in(tmp_path, argv), *pieces)
    assert ".tmp" not in err
    assert list((tmp_path / "isdir.parquet").iterdir()) == []


def test_failed_generate_keeps_the_previous_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.csv"
    assert cli(["dvfs", "generate", "--util", "0.1", "--pairs", "64", "-o", str(out)]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    code = run_in(tmp_path, ["dvfs", "generate", "--util", "1e9", "-o", str(out)])
    assert_one_line_error(capsys, code, "--util")
    assert out.read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "piece"),
    [
        (["dvfs"], "required: COMMAND"),  # was: help on stdout and exit 2
        (["dvfs", "explode"], "invalid choice: 'explode'"),
        (["dvfs", "solve", "-o", "x.csv"], "--tasks"),
        (["dvfs", "generate"], "-o/--output"),
        (["dvfs", "fit"], "--data"),
        (["dvfs", "run", "--util", "1", "extra"], "unrecognized arguments: extra"),
    ],
)
def test_dvfs_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], piece: str) -> None:
    assert_one_line_error(capsys, cli(argv), piece)


# ------------------------------------------------------------------------------------- fit (measurements)

FIT_CASES: list[tuple[str, str, str | bytes, tuple[str, ...]]] = [
    ("empty", "m.csv", b"", ("m.csv", "empty")),
    ("header-only", "m.csv", lines(FIT_HEADER), ("m.csv", "no measurement rows")),
    (
        "missing-column",
        "m.csv",
        lines("appName,coreF,time/ms,power/W", "app,1600,2,200"),
        ("memF", "missing"),
    ),
    ("text-value", "m.csv", lines(FIT_HEADER, "app,fast,4000,x,k,2,200", *FIT_ROWS), ("row 1", "coreF")),
    ("bool-value", "m.csv", lines(FIT_HEADER, *FIT_ROWS, "app,1600,4000,x,k,True,200"), ("row 5", "time/ms")),
    ("nan", "m.csv", lines(FIT_HEADER, *FIT_ROWS, "app,1600,nan,x,k,2,200"), ("row 5", "memF")),
    ("inf", "m.csv", lines(FIT_HEADER, *FIT_ROWS, "app,1600,4000,x,k,2,inf"), ("row 5", "power/W")),
    ("1e400", "m.csv", lines(FIT_HEADER, "app,1e400,4000,x,k,2,200", *FIT_ROWS), ("row 1", "coreF")),
    ("1e308", "m.csv", lines(FIT_HEADER, "app,1600,4000,x,k,1e308,200", *FIT_ROWS), ("row 1", "time/ms")),
    ("negative", "m.csv", lines(FIT_HEADER, *FIT_ROWS, "app,1600,4000,x,k,-2,200"), ("row 5", "time/ms")),
    ("zero", "m.csv", lines(FIT_HEADER, *FIT_ROWS, "app,0,4000,x,k,2,200"), ("row 5", "coreF")),
    ("empty-app", "m.csv", lines(FIT_HEADER, ",1600,4000,x,k,2,200", *FIT_ROWS), ("row 1", "appName")),
    ("truncated-row", "m.csv", lines(FIT_HEADER, *FIT_ROWS, "app,1600,4000"), ("row 5", "time/ms")),
    (
        "row-longer-than-header",
        "m.csv",
        lines(FIT_HEADER, FIT_ROWS[0] + ",9", *FIT_ROWS[1:]),
        ("m.csv", "cannot parse"),
    ),
    ("malformed-quote", "m.csv", lines(FIT_HEADER, '"app,1600,4000,x,k,2,200'), ("m.csv", "cannot parse")),
    (
        "duplicate-header-column",
        "m.csv",
        lines(FIT_HEADER + ",coreF", FIT_ROWS[0] + ",1"),
        ("m.csv", "coreF", "twice"),
    ),
    ("non-utf8", "m.csv", lines(FIT_HEADER).encode() + b"a\xffp,1600,4000,x,k,2,200\n", ("m.csv", "UTF-8")),
    ("wrong-suffix", "m.txt", lines(FIT_HEADER, *FIT_ROWS), ("m.txt", "suffix")),
    ("parquet-suffix", "m.parquet", lines(FIT_HEADER, *FIT_ROWS), ("m.parquet", "suffix", ".csv")),
]


@pytest.mark.parametrize(("case", "name", "content", "pieces"), FIT_CASES, ids=[c[0] for c in FIT_CASES])
def test_dvfs_fit_refuses_a_hostile_measurement_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    name: str,
    content: str | bytes,
    pieces: tuple[str, ...],
) -> None:
    data = write(tmp_path / name, content)
    out = tmp_path / "out"
    out.mkdir()
    code = run_in(out, ["dvfs", "fit", "--data", str(data), "--json", "-o", str(out / "fit.csv")])
    assert_one_line_error(capsys, code, *pieces)
    with pytest.raises(InputError) as caught:
        read_measurements(data)
    assert caught.value.path == str(data)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_dvfs_fit_data_that_is_not_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    data = tmp_path / "m.csv"
    if kind == "directory":
        data.mkdir()
    code = run_in(tmp_path, ["dvfs", "fit", "--data", str(data)])
    assert_one_line_error(capsys, code, "m.csv", "not found" if kind == "missing" else "directory")


@pytest.mark.parametrize(
    ("output", "pieces"),
    [
        ("fit.json", ("fit.json", "suffix")),
        ("nodir/fit.csv", ("nodir/fit.csv", "folder does not exist")),
    ],
)
def test_dvfs_fit_bad_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str, pieces: tuple[str, ...]
) -> None:
    data = write(tmp_path / "m.csv", lines(FIT_HEADER, *FIT_ROWS))
    code = run_in(tmp_path, ["dvfs", "fit", "--data", str(data), "-o", str(tmp_path / output)])
    assert_one_line_error(capsys, code, *pieces)


def test_dvfs_fit_good_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "m.csv", lines(FIT_HEADER, *FIT_ROWS))
    assert cli(["dvfs", "fit", "--data", str(data), "-o", str(tmp_path / "fit.parquet")]) == 0
    assert pd.read_parquet(tmp_path / "fit.parquet")["app"].tolist() == ["app"]
    capsys.readouterr()


# ----------------------------------------------------------------------------------------- GPU TOML (--gpu)

GPU_CASES: list[tuple[str, str | bytes, str]] = [
    ("empty", "", "gpu"),
    ("not-toml", "[[[", "invalid TOML"),
    ("non-utf8", b"\xff\xfe[gpu]", "UTF-8"),
    ("coupling-not-a-table", "coupling = 5", "gpu"),
]


@pytest.mark.parametrize(("content", "piece"), [c[1:] for c in GPU_CASES], ids=[c[0] for c in GPU_CASES])
def test_dvfs_gpu_toml_hostile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes, piece: str
) -> None:
    gpu = write(tmp_path / "gpu.toml", content)
    with pytest.raises(InputError) as caught:
        load_dvfs_gpu(str(gpu))
    assert caught.value.path == str(gpu) and piece in str(caught.value)
    code = run_in(tmp_path, ["dvfs", "run", "--util", "1", "--pairs", "64", "--gpu", str(gpu)])
    assert_one_line_error(capsys, code, "gpu.toml")


# --------------------------------------------------------------- extreme but valid tasks: no warnings, finite

EXTREME = st.sampled_from([0.0, 5e-324, 2.2250738585072014e-308, 1e-300, 1e-9, 1.0, 1e6, 1e9])
EXTREME_TIME = EXTREME | st.just(MAX_TIME_S)
EXTREME_POWER = EXTREME | st.just(MAX_POWER_W)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            EXTREME_TIME,
            EXTREME_TIME,
            EXTREME_POWER,
            EXTREME_POWER,
            EXTREME_POWER,
            EXTREME_TIME,
            EXTREME_TIME,
            st.sampled_from([0.0, 5e-324, 0.5, 1.0]),
        ),
        min_size=1,
        max_size=4,
    ),
    online=st.booleans(),
    dvfs=st.booleans(),
    method=st.sampled_from(["exact", "hkbu"]),
)
def test_extreme_valid_tasks_run_without_warnings(
    tmp_path: Path, rows: list[tuple[float, ...]], online: bool, dvfs: bool, method: str
) -> None:
    # Any file the reader accepts must solve and schedule without an exception, a RuntimeWarning or a
    # non-finite energy: the bounds (times <= 1e12 s, powers <= 1e12 W) keep every product inside float64.
    body = []
    for i, (arrival, window, p0, gamma, c, t0, d, delta) in enumerate(rows):
        arrival = arrival if online else 0.0
        deadline = min(arrival + window, MAX_TIME_S)
        if t0 + d <= 0:
            d = 1.0
        body.append(f"t{i},{arrival!r},{deadline!r},{p0!r},{gamma!r},{c!r},{t0!r},{d!r},{delta!r}")
    path = write(tmp_path / "x.csv", lines(HEADER, *body))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        tasks = read_tasks(path)
        interval = default_dvfs_gpu().wide
        found = solve(tasks.model, tasks.window_s, interval, method=method)
        assert np.isfinite(found.energy_j).all() and np.isfinite(found.time_s).all()
        from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig

        config = DvfsConfig(enabled=dvfs, method=method)
        result = (run_online if online else run_offline)(tasks, "edl", ClusterConfig(pairs=4), config)
    values = [v for v in result.to_dict().values() if isinstance(v, float)]
    assert np.isfinite(values).all()
    assert result.energy_total_j == pytest.approx(
        result.energy_run_j + result.energy_idle_j + result.energy_overhead_j, rel=1e-12
    )


# ---------------------------------------------------------------------------------------- a real process


def test_real_process_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    tasks = write(tmp_path / "t.csv", lines(HEADER, "a,0,1e12,1e308,10,10,1e308,1e308,0.5"))
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "wattsched.cli",
            "dvfs",
            "run",
            "--mode",
            "online",
            "--tasks",
            str(tasks),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and "Warning" not in done.stderr
    assert "t.csv, row 1, column 'p0_w'" in done.stderr
