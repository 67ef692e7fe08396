"""The job-log adapter (``csv`` format): times, column maps, unit warnings and errors, on hand-made logs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.workload.adapters import ImportOptions, import_trace
from wattsched.workload.job import JobKind, Scaling
from wattsched.workload.traces import read_trace, write_trace

MAP = (("submit", "submit_time"), ("start", "start_time"), ("end", "end_time"))


def _log(tmp_path: Path, *lines: str, name: str = "log.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_iso_times_with_zones_map_and_explicit_deadlines(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "submit_time,start_time,end_time,gpus,deadline",
        # 08:00 UTC; runs 30 min; deadline 2 h after submission.
        "2024-03-01T08:00:00Z,2024-03-01T08:01:00Z,2024-03-01T08:31:00Z,1,2024-03-01T10:00:00Z",
        # 09:30+01:00 = 08:30 UTC; runs 5 min; deadline 30 min after submission.
        "2024-03-01T09:30:00+01:00,2024-03-01T09:30:00+01:00,2024-03-01T09:35:00+01:00,2,"
        "2024-03-01T10:00:00+01:00",
    )
    jobs, report = import_trace("csv", log, ImportOptions(columns=MAP, multi_gpu="keep"))
    assert [j.job_id for j in jobs] == ["csv-000001", "csv-000002"]
    first, second = jobs
    # Day 0 starts at midnight UTC of 2024-03-01: 08:00 is 28,800 s, 08:30 is 30,600 s.
    assert (first.arrival_s, second.arrival_s) == (28_800.0, 30_600.0)
    assert first.deadline_s == 28_800.0 + 7_200.0 and second.deadline_s == 30_600.0 + 1_800.0
    # The run time is on a whole GPU (7g); linear: dur_1g = 7 * dur_7g.
    assert first.duration_for_size(7) == 1_800.0 and first.duration_for_size(1) == 12_600.0
    assert second.duration_for_size(7) == 300.0 and second.gpus == 2 and first.gpus == 1
    # Class by the duration rule: 300 s <= 600 s is inference, 1,800 s is training.
    assert (first.kind, second.kind) == (JobKind.TRAINING, JobKind.INFERENCE)
    assert report.rows_read == report.rows_kept == 2 and report.format == "csv"
    # Offered load counts a 2-GPU job twice: (1800 + 2 * 300) / 86400.
    assert report.offered_load == pytest.approx(2_400 / 86_400)


def test_naive_iso_is_utc_and_epoch_seconds_give_the_same_jobs(tmp_path: Path) -> None:
    zoned = _log(
        tmp_path,
        "submit,duration",
        "2024-03-01T08:00:00Z,900",
        "2024-03-01T08:20:00+00:00,60",
        name="zoned.csv",
    )
    naive = _log(
        tmp_path, "submit,duration", "2024-03-01 08:00:00,900", "2024-03-01T08:20:00,60", name="naive.csv"
    )
    # 2024-03-01T08:00:00Z is 1,709,280,000 s since the epoch.
    epoch = _log(tmp_path, "submit,duration", "1709280000,900", "1709281200,60", name="epoch.csv")
    results = [import_trace("csv", path, ImportOptions())[0] for path in (zoned, naive, epoch)]
    assert results[0] == results[1] == results[2]
    assert [j.arrival_s for j in results[0]] == [28_800.0, 30_000.0]


def test_start_and_end_may_be_epoch_while_submit_is_iso(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "submit,start,end,kind,scaling,job_id",
        "2024-03-01T00:00:10Z,1709251300,1709251900,inference,capped,a",
        "2024-03-01T00:00:20Z,1709251300,1709252500,,sublinear,b",
    )
    jobs, _ = import_trace("csv", log, ImportOptions())
    assert [(j.job_id, j.arrival_s) for j in jobs] == [("a", 10.0), ("b", 20.0)]
    assert jobs[0].duration_for_size(7) == 600.0 and jobs[1].duration_for_size(7) == 1_200.0
    # The kind column wins; an empty kind takes the duration rule (1,200 s > 600 s: training).
    assert (jobs[0].kind, jobs[1].kind) == (JobKind.INFERENCE, JobKind.TRAINING)
    assert (jobs[0].scaling, jobs[1].scaling) == (Scaling.CAPPED, Scaling.SUBLINEAR)
    # capped at 3: dur_1g = 3 * dur_7g.
    assert jobs[0].duration_for_size(1) == pytest.approx(1_800.0)


def test_multi_gpu_keep_fold_skip(tmp_path: Path) -> None:
    log = _log(tmp_path, "submit,duration,gpus", "0,100,1", "10,100,4", "20,50,2")
    kept, _ = import_trace("csv", log, ImportOptions(multi_gpu="keep"))
    assert [(j.gpus, j.duration_for_size(7)) for j in kept] == [(1, 100.0), (4, 100.0), (2, 50.0)]
    folded, _ = import_trace("csv", log, ImportOptions(multi_gpu="fold"))
    assert [(j.gpus, j.duration_for_size(7)) for j in folded] == [(1, 100.0), (1, 400.0), (1, 100.0)]
    skipped, report = import_trace("csv", log, ImportOptions(multi_gpu="skip"))
    assert [j.job_id for j in skipped] == ["csv-000001"] and report.filtered == {"multi_gpu": 2}


def test_gpus_survive_the_trace_file_round_trip(tmp_path: Path) -> None:
    log = _log(tmp_path, "submit,duration,gpus", "0,100,1", "10,100,4")
    jobs, _ = import_trace("csv", log, ImportOptions(multi_gpu="keep"))
    for suffix in (".csv", ".parquet"):
        out = tmp_path / f"trace{suffix}"
        write_trace(jobs, out)
        assert read_trace(out) == jobs
    single = tmp_path / "single.csv"
    write_trace([j for j in jobs if j.gpus == 1], single)
    assert "gpus" not in single.read_text(encoding="utf-8").splitlines()[0]  # the column only when needed


def test_missing_and_wrongly_mapped_columns(tmp_path: Path) -> None:
    log = _log(tmp_path, "submit_time,start_time,end_time", "0,0,10")
    with pytest.raises(InputError) as caught:
        import_trace("csv", log, ImportOptions())
    message = str(caught.value)
    assert "'submit'" in message and "submit_time, start_time, end_time" in message and "\n" not in message
    with pytest.raises(InputError, match="no column 'due'"):
        import_trace("csv", log, ImportOptions(columns=(*MAP, ("deadline", "due"))))
    with pytest.raises(InputError, match="no column for 'duration' nor for 'end'"):
        import_trace("csv", log, ImportOptions(columns=MAP[:2]))
    with pytest.raises(ConfigError, match=r"unknown key 'sumbit'.*did you mean 'submit'"):
        import_trace("csv", log, ImportOptions(columns=(("sumbit", "submit_time"),)))


@pytest.mark.parametrize(
    ("lines", "pieces"),
    [
        (
            ("submit,duration", "2024-03-01T00:00:00,10", "yesterday,10"),
            ("row 2", "column 'submit'", "'yesterday'", "ISO 8601"),
        ),
        (("submit,duration", "0,10", "1,ten"), ("row 2", "column 'duration'", "'ten'")),
        (("submit,duration", "0,10", "1,-5"), ("row 2", "column 'duration'")),
        (("submit,start,end", "0,5,10", "1,20,15"), ("row 2", "column 'end'", "before its start")),
        (("submit,duration,gpus", "0,10,1", "1,10,1.5"), ("row 2", "column 'gpus'", "whole number")),
        (("submit,duration,deadline", "100,10,50"), ("row 1", "column 'deadline'", "before the submission")),
        (("submit,duration,kind", "0,10,batch"), ("row 1", "column 'kind'", "inference, training")),
        (("submit,duration,job_id", "0,10,a", "1,10,a"), ("row 2", "column 'job_id'", "repeated")),
        (("submit,duration", ",10"), ("row 1", "column 'submit'", "empty time")),
        (("submit,duration",), ("no data rows",)),
    ],
)
def test_bad_cells_name_their_row_and_column(
    tmp_path: Path, lines: tuple[str, ...], pieces: tuple[str, ...]
) -> None:
    with pytest.raises(InputError) as caught:
        import_trace("csv", _log(tmp_path, *lines), ImportOptions())
    message = str(caught.value)
    assert "log.csv" in message
    for piece in pieces:
        assert piece in message


def test_unit_warnings_name_the_column(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    hours = _log(tmp_path, "submit,runtime", "0,2", "10,3", "20,12", name="hours.csv")
    with caplog.at_level(logging.WARNING, logger="wattsched"):
        import_trace("csv", hours, ImportOptions(columns=(("duration", "runtime"),)))
    assert any("'runtime' looks like hours" in r.getMessage() for r in caplog.records)
    caplog.clear()
    millis = _log(tmp_path, "submit,duration", "0,120000", "10,600000", name="ms.csv")
    with caplog.at_level(logging.WARNING, logger="wattsched"):
        import_trace("csv", millis, ImportOptions())
    assert any("'duration' looks like milliseconds" in r.getMessage() for r in caplog.records)
    caplog.clear()
    fine = _log(tmp_path, "submit,duration", "0,2.5", "10,3600", "20,45", name="fine.csv")
    epoch_ms = _log(tmp_path, "submit,duration", "1709280000000,60", name="epoch_ms.csv")
    with caplog.at_level(logging.WARNING, logger="wattsched"):
        import_trace("csv", fine, ImportOptions())
        assert not caplog.records  # not all whole numbers (2.5) and a median of 45 s: seconds
        import_trace("csv", epoch_ms, ImportOptions())
    assert any("milliseconds since the epoch" in r.getMessage() for r in caplog.records)
