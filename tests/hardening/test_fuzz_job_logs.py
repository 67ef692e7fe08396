"""Fuzzing the job-log reader (``wattsched import --format csv``) and traces with a ``gpus`` column: whatever
bytes arrive, the reader either returns valid jobs or raises :class:`InputError` naming the file."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_readers import FUZZ, MUTATION, mutate

from wattsched.errors import InputError
from wattsched.workload.adapters import ImportOptions, import_trace
from wattsched.workload.traces import read_trace

LOG = (
    b"job_id,submit,start,end,gpus,deadline,kind,scaling\n"
    b"a,2024-03-01T08:00:00Z,2024-03-01T08:01:00Z,2024-03-01T08:31:00Z,1,2024-03-01T10:00:00Z,training,linear\n"
    b"b,2024-03-01 08:10:00,2024-03-01 08:12:00,2024-03-01 09:12:00,4,,,capped\n"
    b"c,2024-03-01T09:20:00+01:00,2024-03-01T09:20:00+01:00,2024-03-01T09:25:00+01:00,2,,inference,\n"
)
EPOCH_LOG = b"submit,duration,gpus\n1709280000,900,1\n1709281200,60,2\n1709281300,3600,1\n"
TRACE = (
    b"job_id,arrival_s,deadline_s,kind,scaling,dur_1g_s,dur_2g_s,dur_3g_s,dur_4g_s,dur_7g_s,gpus\n"
    b"j0,0,700,training,linear,700,350,233.3,175,100,1\n"
    b"j1,10,900,inference,linear,70,35,23.3,17.5,10,4\n"
)


def import_or_input_error(path: Path, multi_gpu: str) -> None:
    try:
        jobs, report = import_trace("csv", path, ImportOptions(multi_gpu=multi_gpu))  # type: ignore[arg-type]
    except InputError as error:
        assert error.path == str(path)
        assert "\n" not in str(error)
        return
    assert jobs and report.rows_kept == len(jobs)
    assert len({j.job_id for j in jobs}) == len(jobs)
    for job in jobs:
        assert math.isfinite(job.arrival_s) and job.arrival_s >= 0
        assert math.isfinite(job.deadline_s) and job.deadline_s >= job.arrival_s
        assert all(math.isfinite(d) and d > 0 for d in job.durations_s) and job.gpus >= 1
        assert multi_gpu == "keep" or job.gpus == 1


@FUZZ
@given(data=st.binary(max_size=400), multi_gpu=st.sampled_from(["keep", "fold", "skip"]))
@example(data=b"", multi_gpu="keep")
@example(data=b"submit\n\n", multi_gpu="keep")
@example(data=b"submit,duration\n1e308,1e308\n", multi_gpu="keep")
@example(data=b"submit,duration\n-1e308,5\n1e308,5\n", multi_gpu="keep")
def test_job_log_reader_on_random_bytes(tmp_path: Path, data: bytes, multi_gpu: str) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    import_or_input_error(path, multi_gpu)


@FUZZ
@given(
    edits=st.lists(MUTATION, min_size=1, max_size=6),
    epoch=st.booleans(),
    multi_gpu=st.sampled_from(["keep", "fold", "skip"]),
)
def test_job_log_reader_on_mutated_logs(
    tmp_path: Path, edits: list[tuple[str, int, int, bytes]], epoch: bool, multi_gpu: str
) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(mutate(EPOCH_LOG if epoch else LOG, edits))
    import_or_input_error(path, multi_gpu)


@FUZZ
@given(edits=st.lists(MUTATION, min_size=1, max_size=6))
def test_trace_reader_on_mutated_gpus_column(
    tmp_path: Path, edits: list[tuple[str, int, int, bytes]]
) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(mutate(TRACE, edits))
    try:
        jobs = read_trace(path)
    except InputError as error:
        assert error.path == str(path) and "\n" not in str(error)
        return
    for job in jobs:  # a mutation may drop a size column: the trace then gives the others
        assert len(job.durations_s) == len(job.sizes) and isinstance(job.gpus, int) and job.gpus >= 1
