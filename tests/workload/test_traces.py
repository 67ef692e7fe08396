"""Trace files (CONTRACT §3): exact round trips, file order, defaults and one error per bad file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.errors import ConfigError, InputError
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job, JobKind, Scaling
from wattsched.workload.traces import (
    TRACE_COLUMNS,
    frame_to_jobs,
    jobs_to_frame,
    read_trace,
    write_trace,
)

# The active hypothesis profile (tests/conftest.py): 100 examples, 1000 with HYPOTHESIS_PROFILE=slow.
EXAMPLES = settings().max_examples

HEADER = "job_id,arrival_s,deadline_s,kind,scaling,dur_1g_s,dur_2g_s,dur_3g_s,dur_4g_s,dur_7g_s"
GOOD_ROWS = [
    "a,0,100,inference,linear,70,35,23.5,17.5,10",
    "b,5,50,training,capped,40,20,20,20,20",
    "c,5,80,inference,sublinear,30,20,15,12,10",
]


def write_csv(tmp_path: Path, rows: list[str], header: str = HEADER, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def odd_jobs() -> list[Job]:
    """Jobs whose floats need all 17 digits, out of arrival order, with string ids that look numeric."""
    return [
        Job(
            "007",
            10.0 / 3.0,
            1e6 / 7.0,
            JobKind.TRAINING,
            Scaling.MEASURED,
            (0.1, 0.2 + 0.1, 5e-324, 1e300, 2.0**-30),
            123456789.12345679,
        ),
        Job("x,y", 0.0, 0.0, JobKind.INFERENCE, Scaling.LINEAR, (7.0, 3.5, 7 / 3, 1.75, 1.0), 1.0 / 1.06),
        Job("z", 1.0 / 3.0, 2.0, JobKind.INFERENCE, Scaling.CAPPED, (1.0,) * 5, 1.0),
    ]


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".pq"])
def test_round_trip_is_bit_exact_and_keeps_order(tmp_path: Path, suffix: str) -> None:
    jobs = odd_jobs() + generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=6), 3)
    path = tmp_path / f"trace{suffix}"
    write_trace(jobs, path)
    back = read_trace(path)
    assert back == jobs
    assert [j.durations_s[2].hex() for j in back] == [j.durations_s[2].hex() for j in jobs]
    assert [j.job_id for j in back[:3]] == ["007", "x,y", "z"]
    assert all(isinstance(j.kind, JobKind) and isinstance(j.scaling, Scaling) for j in back)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left behind


@settings(max_examples=EXAMPLES)
@given(values=st.lists(st.floats(min_value=5e-324, max_value=1e300), min_size=7, max_size=7))
def test_csv_round_trip_of_arbitrary_floats(
    tmp_path_factory: pytest.TempPathFactory, values: list[float]
) -> None:
    arrival, *durations = values
    *dur, full = durations
    job = Job("j", arrival, arrival * 2, JobKind.INFERENCE, Scaling.MEASURED, tuple(dur), full)
    path = tmp_path_factory.mktemp("rt") / "one.csv"
    write_trace([job], path)
    assert read_trace(path) == [job]


def test_hand_written_csv_defaults_and_extra_columns(tmp_path: Path) -> None:
    rows = [r + ",note" for r in GOOD_ROWS]
    path = write_csv(tmp_path, rows, header=HEADER + ",comment")
    jobs = read_trace(path)
    assert [j.job_id for j in jobs] == ["a", "b", "c"]
    assert (*jobs[0].durations_s, jobs[0].dur_full_s) == (
        70.0,
        35.0,
        23.5,
        17.5,
        10.0,
        10.0 / 1.06,
    )  # linear: no-MIG 6 % faster
    assert jobs[1].dur_full_s == 20.0 and jobs[2].dur_full_s == 10.0  # others: dur_7g
    assert jobs[1].kind == JobKind.TRAINING and jobs[2].scaling == Scaling.SUBLINEAR


def test_explicit_full_duration_column_is_used(tmp_path: Path) -> None:
    row = "a,0,100,inference,linear,70,35,23,17.5,10,9"
    path = write_csv(tmp_path, [row], header=HEADER + ",dur_full_s")
    assert read_trace(path)[0].dur_full_s == 9.0


def test_frame_columns() -> None:
    frame = jobs_to_frame(odd_jobs())
    assert list(frame.columns) == [*TRACE_COLUMNS, "dur_full_s"]
    assert frame["job_id"].tolist() == ["007", "x,y", "z"]


BAD_CASES = [
    # (rows, header, row, column, message piece)
    (
        ["a,0,100,inference,linear"],
        "job_id,arrival_s,deadline_s,kind,scaling",
        None,
        "dur_1g_s",
        "missing column(s) dur_1g_s",
    ),
    ([GOOD_ROWS[0], "b,abc,50,training,capped,40,20,20,20,20"], HEADER, 2, "arrival_s", "'abc'"),
    (["a,0,100,inference,linear,70,nan,23,17.5,10"], HEADER, 1, "dur_2g_s", "finite number"),
    (["a,0,inf,inference,linear,70,35,23,17.5,10"], HEADER, 1, "deadline_s", "finite number"),
    (["a,0,100,inference,linear,,35,23,17.5,10"], HEADER, 1, "dur_1g_s", "finite number"),
    (["a,0,100,inference,linear,70,35,23,17.5,0"], HEADER, 1, "dur_7g_s", "must be > 0"),
    (["a,0,100,inference,linear,70,35,-2,17.5,10"], HEADER, 1, "dur_3g_s", "must be > 0"),
    (["a,-1,100,inference,linear,70,35,23,17.5,10"], HEADER, 1, "arrival_s", "must be >= 0"),
    ([GOOD_ROWS[1], "c,50,49.5,inference,linear,70,35,23,17.5,10"], HEADER, 2, "deadline_s", ">= arrival_s"),
    (
        [GOOD_ROWS[1], GOOD_ROWS[2], GOOD_ROWS[1]],
        HEADER,
        3,
        "job_id",
        "duplicate job_id 'b' (first at row 1)",
    ),
    (["a,0,100,batch,linear,70,35,23,17.5,10"], HEADER, 1, "kind", "unknown kind 'batch'"),
    (["a,0,100,inference,superlinear,70,35,23,17.5,10"], HEADER, 1, "scaling", "unknown scaling"),
    ([",0,100,inference,linear,70,35,23,17.5,10"], HEADER, 1, "job_id", "missing job_id"),
    (["a,0,100,inference,linear,70,35,23,17.5,10,x"], HEADER + ",dur_full_s", 1, "dur_full_s", "'x'"),
    # The first bad cell in file order wins: row 2 before row 3, then the leftmost column of a row.
    (
        [GOOD_ROWS[1], "c,50,1,inference,linear,70,35,23,17.5,10", "d,-5,1,x,linear,1,1,1,1,1"],
        HEADER,
        2,
        "deadline_s",
        ">= arrival_s",
    ),
    ([GOOD_ROWS[1], "c,-1,-2,alien,linear,0,35,23,17.5,10"], HEADER, 2, "arrival_s", "must be >= 0"),
]


@pytest.mark.parametrize(("rows", "header", "row", "column", "piece"), BAD_CASES)
def test_bad_csv_raises_one_error_naming_file_row_column(
    tmp_path: Path, rows: list[str], header: str, row: int | None, column: str, piece: str
) -> None:
    path = write_csv(tmp_path, rows, header)
    with pytest.raises(InputError) as caught:
        read_trace(path)
    error = caught.value
    assert (error.path, error.row, error.column) == (str(path), row, column)
    message = str(error)
    assert str(path) in message and f"column '{column}'" in message and piece in message
    assert (f"row {row}" in message) == (row is not None)
    assert "\n" not in message


@pytest.mark.parametrize(
    ("content", "piece"),
    [
        (HEADER.encode() + b"\n", "empty file"),
        (b"", "empty file"),
        (HEADER.encode() + b"\nb\xff\xfe,0,1,inference,linear,1,1,1,1,1\n", "UTF-8"),
        (HEADER.encode() + b"\na,0,1,inference,linear,1,1,1,1,1,1,1,1\n", "cannot parse"),
        (
            HEADER.encode() + b"\na,0,1,inference,linear,1,1,1,1,1\nb,0,1,inference,linear,1,1,1,1,1,1\n",
            "row 2: cannot parse csv file: .*Expected 10 fields in line 3, saw 11",
        ),
    ],
)
def test_unreadable_csv_files(tmp_path: Path, content: bytes, piece: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(InputError, match=piece) as caught:
        read_trace(path)
    assert caught.value.path == str(path) and str(path) in str(caught.value)


def test_missing_file_and_bad_suffix(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_trace(tmp_path / "nope.csv")
    (tmp_path / "t.json").write_text("{}")
    with pytest.raises(InputError, match=r"t\.json.*unsupported file suffix '\.json'"):
        read_trace(tmp_path / "t.json")
    with pytest.raises(InputError, match="unsupported file suffix"):
        write_trace(odd_jobs(), tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def test_parquet_validation(tmp_path: Path) -> None:
    frame = jobs_to_frame(odd_jobs())
    frame.loc[1, "dur_3g_s"] = float("nan")
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(InputError) as caught:
        read_trace(path)
    assert (caught.value.row, caught.value.column) == (2, "dur_3g_s")
    frame.drop(columns=["kind"]).to_parquet(path, index=False)
    with pytest.raises(InputError, match="missing column"):
        read_trace(path)
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match="cannot parse parquet"):
        read_trace(path)


def test_parquet_with_integer_columns_is_accepted(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "job_id": ["a"],
            "arrival_s": [0],
            "deadline_s": [20],
            "kind": ["training"],
            "scaling": ["capped"],
            "dur_1g_s": [40],
            "dur_2g_s": [20],
            "dur_3g_s": [20],
            "dur_4g_s": [20],
            "dur_7g_s": [20],
        }
    )
    path = tmp_path / "ints.pq"
    frame.to_parquet(path, index=False)
    assert (*read_trace(path)[0].durations_s, read_trace(path)[0].dur_full_s) == (
        40.0,
        20.0,
        20.0,
        20.0,
        20.0,
        20.0,
    )


def test_failed_write_leaves_the_old_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "keep.csv"
    write_trace(odd_jobs(), path)
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="no jobs"):
        write_trace([], path)
    bad = Job("b", 5.0, 1.0, JobKind.INFERENCE, Scaling.LINEAR, (1.0,) * 5, 1.0)  # deadline before arrival
    with pytest.raises(ConfigError, match="deadline_s"):
        write_trace([bad], path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["keep.csv"]


def test_write_into_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="folder does not exist"):
        write_trace(odd_jobs(), tmp_path / "no" / "t.csv")


def test_frame_to_jobs_names_the_source() -> None:
    frame = jobs_to_frame(odd_jobs())
    frame.loc[2, "kind"] = "Inference"
    with pytest.raises(InputError, match=r"^memory, row 3, column 'kind': unknown kind 'Inference'"):
        frame_to_jobs(frame, "memory")


def test_a_trace_may_give_some_sizes_and_the_rest_follow_the_scaling_family(tmp_path: Path) -> None:
    # CONTRACT §7: only dur_3g_s and dur_7g_s given. A linear job's speed is interpolated between them at 4g
    # and proportional to g below 3g; dur_full_s defaults from dur_7g_s.
    path = write_csv(
        tmp_path,
        ["a,0,100,inference,linear,24,10", "m,0,100,training,measured,30,12"],
        header="job_id,arrival_s,deadline_s,kind,scaling,dur_3g_s,dur_7g_s",
    )
    linear, measured = read_trace(path)
    assert linear.sizes == (3, 7) and linear.durations_s == (24.0, 10.0) and linear.dur_full_s == 10.0 / 1.06
    speed_4g = 1 / 24 + (4 - 3) * (1 / 10 - 1 / 24) / (7 - 3)
    assert linear.duration_for_size(4) == pytest.approx(1 / speed_4g)
    assert linear.duration_for_size(1) == pytest.approx(72.0) and linear.duration_for_size(
        2
    ) == pytest.approx(36.0)
    assert measured.duration_for_size(4) == pytest.approx(1 / (1 / 30 + (1 / 12 - 1 / 30) / 4))
    # Round trip keeps the given sizes only.
    out = tmp_path / "back.csv"
    write_trace([linear, measured], out)
    assert read_trace(out) == [linear, measured]
    assert "dur_4g_s" not in out.read_text().splitlines()[0]


def test_a_size_no_rule_can_derive_names_the_file_row_and_column(tmp_path: Path) -> None:
    from wattsched.workload.traces import require_sizes

    path = write_csv(
        tmp_path,
        ["a,0,100,inference,linear,24,12", "m,0,100,training,measured,30,15"],
        header="job_id,arrival_s,deadline_s,kind,scaling,dur_1g_s,dur_2g_s",
    )
    # No dur_7g_s and no dur_full_s: the full-GPU time derives from size 7, which the measured job cannot.
    with pytest.raises(InputError, match=r"t\.csv, row 2, column 'dur_7g_s': .*measured.*no rule"):
        read_trace(path)
    ok = write_csv(
        tmp_path,
        ["m,0,100,training,measured,30,15,40"],
        name="ok.csv",
        header="job_id,arrival_s,deadline_s,kind,scaling,dur_1g_s,dur_2g_s,dur_full_s",
    )
    (job,) = read_trace(ok)
    with pytest.raises(InputError, match=r"ok\.csv, row 1, column 'dur_3g_s'"):
        require_sizes([job], (1, 2, 3, 4, 7), str(ok))


def test_gpus_column_reads_writes_and_is_checked(tmp_path: Path) -> None:
    from dataclasses import replace

    from wattsched.workload.traces import multi_gpu_jobs, require_single_gpu

    jobs = generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=0.5), 3)[:6]
    gangs = [replace(job, gpus=g) for job, g in zip(jobs, (1, 2, 8, 1, 2, 2), strict=True)]
    path = tmp_path / "gangs.csv"
    write_trace(gangs, path)
    assert read_trace(path) == gangs
    assert multi_gpu_jobs(gangs) == {2: 3, 8: 1} and multi_gpu_jobs(jobs) == {}
    require_single_gpu(jobs, "t.csv", "mig run")  # one GPU each: nothing to refuse
    with pytest.raises(
        InputError,
        match=r"4 of 6 jobs need more than one GPU \(3 need 2 GPUs, 1 need 8 "
        r"GPUs\); mig day simulates one GPU",
    ):
        require_single_gpu(gangs, "t.csv", "mig day")
    frame = pd.read_csv(path)
    for bad in ("0", "1.5", "two", ""):
        frame["gpus"] = frame["gpus"].astype(str)
        frame.loc[4, "gpus"] = bad
        frame.to_csv(path, index=False)
        with pytest.raises(InputError, match=r"row 5.*column 'gpus'"):
            read_trace(path)
    with pytest.raises(ConfigError, match="refusing to write"):
        write_trace([replace(jobs[0], gpus=0)], tmp_path / "bad.csv")
