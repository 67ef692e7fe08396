"""Fuzzing the file readers (issue #7, part 2): whatever bytes arrive, a reader either returns valid records
or raises :class:`InputError` naming the file. No other exception, no hang.

Readers: the MIG trace reader (``read_trace``, CSV and Parquet) and the DVFS task reader (``read_tasks``).
Inputs: random bytes, and valid files mutated by random edits (inserted separators, quotes, newlines, NaN,
1e400, negative numbers, non-UTF-8 bytes; deleted spans; truncation; duplicated lines; flipped bytes).
100 examples per test by default, 1000 with ``HYPOTHESIS_PROFILE=slow`` (``make test-slow``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wattsched.errors import InputError
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job
from wattsched.workload.traces import read_trace, write_trace

# Fixtures are created once per test, not per example: every example writes the same file name again.
FUZZ = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

TOKENS = [
    b",",
    b"\n",
    b"\r\n",
    b"\r",
    b'"',
    b"'",
    b";",
    b"\t",
    b" ",
    b"#",
    b"nan",
    b"NaN",
    b"inf",
    b"-inf",
    b"-1",
    b"-0",
    b"0",
    b"1e400",
    b"1e308",
    b"-1e308",
    b"5e-324",
    b"0x10",
    b"1_000",
    b"True",
    b"None",
    b"",
    b"\xff",
    b"\xfe\xff",
    b"\x00",
    b"\xef\xbb\xbf",
    b"\xc3",
    b"j000000",
    b"inference",
    b"training",
    b"linear",
    b"job_id",
    b"arrival_s",
    b"task_id",
    b"delta",
    b"9" * 400,
]
MUTATION = st.tuples(
    st.sampled_from(["insert", "delete", "replace", "truncate", "duplicate-line", "flip"]),
    st.integers(0, 1 << 20),
    st.integers(1, 40),
    st.sampled_from(TOKENS) | st.binary(max_size=8),
)


def mutate(data: bytes, edits: list[tuple[str, int, int, bytes]]) -> bytes:
    """Apply each edit at a position taken modulo the current length."""
    out = bytearray(data)
    for op, where, span, token in edits:
        at = where % (len(out) + 1)
        if op == "insert":
            out[at:at] = token
        elif op == "delete":
            del out[at : at + span]
        elif op == "replace":
            out[at : at + len(token)] = token
        elif op == "truncate":
            del out[at:]
        elif op == "duplicate-line":
            start = out.rfind(b"\n", 0, at) + 1
            end = out.find(b"\n", at)
            end = len(out) if end < 0 else end + 1
            out[end:end] = out[start:end]
        elif op == "flip" and out:
            out[at % len(out)] ^= 1 << (span % 8)
    return bytes(out)


def assert_valid_jobs(jobs: list[Job]) -> None:
    """What CONTRACT §3 promises about every job a trace yields."""
    assert jobs
    ids = [job.job_id for job in jobs]
    assert len(set(ids)) == len(ids) and all(ids)
    for job in jobs:
        assert math.isfinite(job.arrival_s) and job.arrival_s >= 0
        assert math.isfinite(job.deadline_s) and job.deadline_s >= job.arrival_s
        assert len(job.durations_s) == 5 and job.dur_full_s > 0
        assert all(math.isfinite(d) and d > 0 for d in job.durations_s)


def read_trace_or_input_error(path: Path) -> None:
    try:
        jobs = read_trace(path)
    except InputError as error:
        assert error.path == str(path)
        assert "\n" not in str(error)  # the CLI prints it on one line
        return
    assert_valid_jobs(jobs)


@pytest.fixture(scope="module")
def trace_bytes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A valid 6-job trace as CSV and as Parquet."""
    folder = tmp_path_factory.mktemp("valid")
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=0.2), 1)[:6]
    out = {}
    for suffix in (".csv", ".parquet"):
        write_trace(jobs, folder / f"t{suffix}")
        out[suffix] = (folder / f"t{suffix}").read_bytes()
    return out


@FUZZ
@given(data=st.binary(max_size=600))
@example(data=b"")
@example(data=b"\xff\xfe\x00")
@example(data=b"job_id\n\n")
def test_trace_reader_on_random_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    read_trace_or_input_error(path)


@FUZZ
@given(edits=st.lists(MUTATION, min_size=1, max_size=6))
def test_trace_reader_on_mutated_csv(
    tmp_path: Path, trace_bytes: dict[str, bytes], edits: list[tuple[str, int, int, bytes]]
) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(mutate(trace_bytes[".csv"], edits))
    read_trace_or_input_error(path)


@FUZZ
@given(edits=st.lists(MUTATION, min_size=1, max_size=4))
def test_trace_reader_on_mutated_parquet(
    tmp_path: Path, trace_bytes: dict[str, bytes], edits: list[tuple[str, int, int, bytes]]
) -> None:
    path = tmp_path / "fuzz.parquet"
    path.write_bytes(mutate(trace_bytes[".parquet"], edits))
    read_trace_or_input_error(path)


# -------------------------------------------------------------------------------------- DVFS task reader

tasks_module = pytest.importorskip("wattsched.dvfs.tasks")


def read_tasks_or_input_error(path: Path) -> None:
    try:
        tasks = tasks_module.read_tasks(path)
    except InputError as error:
        assert error.path == str(path)
        assert "\n" not in str(error)
        return
    n = len(tasks.task_id)
    assert n > 0 and len(set(tasks.task_id)) == n
    assert np.isfinite(tasks.arrival_s).all() and (tasks.deadline_s >= tasks.arrival_s).all()
    frame = tasks_module.tasks_to_frame(tasks)
    assert np.isfinite(frame.drop(columns="task_id").to_numpy(dtype=float)).all()


@pytest.fixture(scope="module")
def task_bytes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("tasks")
    tasks = tasks_module.generate_offline(0.5, 12, 3)
    out = {}
    for suffix in (".csv", ".parquet"):
        tasks_module.write_tasks(tasks, folder / f"t{suffix}")
        out[suffix] = (folder / f"t{suffix}").read_bytes()
    return out


@FUZZ
@given(data=st.binary(max_size=600))
@example(data=b"")
@example(data=b"task_id\n\n")
def test_task_reader_on_random_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    read_tasks_or_input_error(path)


@FUZZ
@given(edits=st.lists(MUTATION, min_size=1, max_size=6))
def test_task_reader_on_mutated_csv(
    tmp_path: Path, task_bytes: dict[str, bytes], edits: list[tuple[str, int, int, bytes]]
) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(mutate(task_bytes[".csv"], edits))
    read_tasks_or_input_error(path)


# A Parquet text cell that is not UTF-8 (pyarrow decodes strings lazily) used to escape as UnicodeDecodeError;
# ``read_tasks`` now validates the whole table first (``wattsched.io.read_table``).
@FUZZ
@given(edits=st.lists(MUTATION, min_size=1, max_size=4))
def test_task_reader_on_mutated_parquet(
    tmp_path: Path, task_bytes: dict[str, bytes], edits: list[tuple[str, int, int, bytes]]
) -> None:
    path = tmp_path / "fuzz.parquet"
    path.write_bytes(mutate(task_bytes[".parquet"], edits))
    read_tasks_or_input_error(path)
