"""Sacct job logs to traces: hand-computed jobs, every reason a row is left out, annotations applied, the
cluster the jobs ran on, and the result run through the cluster engine."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from wattsched.cluster.engine import ClusterSimulation
from wattsched.cluster.nodes import read_cluster_file, write_cluster_file
from wattsched.cluster.spec import ClusterOptions
from wattsched.errors import ConfigError, InputError
from wattsched.slurm.jobs import CURVES
from wattsched.slurm.sacct import import_sacct, infer_cluster, parse_sacct, read_sacct, slurm_duration_s
from wattsched.workload.adapters import ImportOptions
from wattsched.workload.job import JobKind, Scaling
from wattsched.workload.traces import read_trace, write_trace

HEADER = "JobID|User|Partition|Submit|Start|End|Elapsed|Timelimit|State|AllocTRES|Comment|NodeList"
MIG3 = "billing=1,cpu=1,gres/gpu:a100_3g.20gb=1,gres/gpu=1,mem=1G,node=1"


def _row(
    job: str,
    submit: str = "12:00:00",
    start: str = "12:01:00",
    end: str = "12:11:00",
    elapsed: str = "00:10:00",
    limit: str = "01:00:00",
    state: str = "COMPLETED",
    tres: str = MIG3,
    comment: str = "",
    node: str = "gpu01",
    day: str = "2024-03-01",
) -> str:
    def stamp(clock: str) -> str:
        return clock if clock in ("Unknown", "None", "") or "T" in clock else f"{day}T{clock}"

    return "|".join(
        [
            job,
            "alice",
            "mig",
            stamp(submit),
            stamp(start),
            stamp(end),
            elapsed,
            limit,
            state,
            tres,
            comment,
            node,
        ]
    )


def _log(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_small_log_by_hand(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        _row("100"),  # 10 min on a 3g slice, submitted 12:00
        _row("100.batch", tres="cpu=1,gres/gpu=1,mem=1G,node=1"),
        _row("100.extern"),
        _row(
            "101",
            submit="13:00:00",
            start="13:00:00",
            end="14:00:00",
            elapsed="01:00:00",
            tres="cpu=1,gres/gpu=1,node=1",
            comment="wattsched: deadline=+3h kind=inference work=30m",
        ),
    )
    imported = import_sacct(path)
    first, second = imported.jobs
    # Day 0 starts at midnight of the first submission: 12:00 -> 43,200 s.
    assert (first.job_id, first.arrival_s) == ("100", 43_200.0)
    # Observed 600 s on 3g, linear: dur_1g = 600 * 3 = 1800, dur_g = 1800 / g, dur_full = dur_7g / 1.06.
    assert first.durations_s == pytest.approx((1800.0, 900.0, 600.0, 450.0, 1800.0 / 7))
    assert first.dur_full_s == pytest.approx(1800.0 / 7 / 1.06)
    assert first.kind == JobKind.INFERENCE  # observed 600 s <= 600 s: the duration rule
    assert first.arrival_s + 1800.0 / 7 <= first.deadline_s <= first.arrival_s + 1.5 * 1800.0 / 7
    # Job 101: work=30m is dur_full_s; linear dur_7g = 1800 * 1.06 = 1908; deadline 3 h after submission.
    assert second.arrival_s == 46_800.0 and second.deadline_s == 46_800.0 + 10_800.0
    assert second.dur_full_s == pytest.approx(1800.0)
    dur_1g = 1908.0 * 7
    assert second.durations_s == pytest.approx(tuple(dur_1g / g for g in (1, 2, 3, 4, 7)))
    assert second.kind == JobKind.INFERENCE and second.scaling == Scaling.LINEAR
    report = imported.report
    assert (report.rows_read, report.rows_kept) == (4, 2)
    assert report.filtered == {"job_step": 2} and report.skipped == {}
    assert (report.window_start_s, report.window_end_s) == (0.0, 86_400.0)
    assert report.offered_load == pytest.approx((1800.0 / 7 + 1908.0) / 86_400)
    assert imported.annotated == 1
    assert imported.rows["101"].annotation is not None and imported.rows["100"].annotation is None


def test_every_reason_a_row_is_left_out(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        _row("1"),
        _row("1.0"),  # filtered job_step
        _row("2", state="PENDING", start="Unknown", end="Unknown", tres=""),  # filtered not_completed
        _row("3", state="CANCELLED by 1000"),  # filtered not_completed
        _row("4", start="None", end="None"),  # filtered never_started
        _row("5", tres="billing=1,cpu=2,mem=1G,node=1"),  # filtered no_gpu
        _row("6", tres="cpu=2,gres/gpu=2,node=1"),  # filtered multi_gpu
        _row("7", tres="gres/gpu:a100_1g.5gb=2"),  # filtered multi_gpu (two slices)
        _row("8", elapsed="00:00:00", end="12:01:00"),  # filtered zero_run_time
        "9|alice|mig|2024-03-01T12:00:00",  # skipped bad_field_count
        _row(""),  # skipped bad_job_id
        _row("1"),  # skipped duplicate_id
        _row("10", tres="gres/gpu=one"),  # skipped bad_alloc_tres
        _row("11", tres="gres/gpu:a100_5g.30gb=1"),  # skipped bad_gpu_type
        _row("12", submit="yesterday"),  # skipped bad_time
        _row("13", end="Unknown", elapsed=""),  # skipped bad_time: a completed job with no end
        _row("14", elapsed="ten minutes"),  # skipped bad_elapsed
        _row("15", limit="forever"),  # skipped bad_time_limit
        _row("16", start="12:30:00", end="12:00:00", elapsed=""),  # skipped negative_run_time
        _row("17", comment="wattsched: kind=fast"),  # skipped bad_annotation
    )
    imported = import_sacct(path)
    assert [j.job_id for j in imported.jobs] == ["1"]
    report = imported.report
    assert report.filtered == {
        "job_step": 1,
        "not_completed": 2,
        "never_started": 1,
        "no_gpu": 1,
        "multi_gpu": 2,
        "zero_run_time": 1,
    }
    assert report.skipped == {
        "bad_field_count": 1,
        "bad_job_id": 1,
        "duplicate_id": 1,
        "bad_alloc_tres": 1,
        "bad_gpu_type": 1,
        "bad_time": 2,
        "bad_elapsed": 1,
        "bad_time_limit": 1,
        "negative_run_time": 1,
        "bad_annotation": 1,
    }
    assert (
        report.rows_read
        == 20
        == report.rows_kept + sum(report.skipped.values()) + sum(report.filtered.values())
    )


def test_more_states_can_be_kept(tmp_path: Path) -> None:
    path = _log(tmp_path, _row("1"), _row("2", state="TIMEOUT"), _row("3", state="FAILED"))
    imported = import_sacct(path, states=frozenset({"COMPLETED", "TIMEOUT"}))
    assert [j.job_id for j in imported.jobs] == ["1", "2"]
    with pytest.raises(ConfigError, match="unknown job state 'COMPLETE' \\(did you mean 'COMPLETED'\\?\\)"):
        import_sacct(path, states=frozenset({"COMPLETE"}))
    with pytest.raises(ConfigError, match="at least one job state"):
        import_sacct(path, states=frozenset())


def test_run_time_is_elapsed_else_end_minus_start(tmp_path: Path) -> None:
    path = _log(tmp_path, _row("1", elapsed="00:05:00"), _row("2", elapsed=""))
    one, two = import_sacct(path).jobs
    assert one.duration_for_size(3) == 300.0  # Elapsed wins over End - Start (600 s)
    assert two.duration_for_size(3) == 600.0
    header = HEADER.replace("|Elapsed", "")
    line = _row("3").split("|")
    del line[6]
    assert import_sacct(_log(tmp_path, "|".join(line), header=header)).jobs[0].duration_for_size(3) == 600.0


@pytest.mark.parametrize(
    ("tres", "size", "dur_7g_s"),
    [
        ("gres/gpu=1", 7, 600.0),  # untyped: a whole GPU taken as 7g
        ("gres/gpu:a100=1,gres/gpu=1", 7, 600.0),
        ("gres/gpu:nvidia_a100_1g.5gb=1", 1, 600.0 / 7),
        ("gres/gpu:a100_2g.10gb=1", 2, 600.0 * 2 / 7),
        ("gres/gpu:h100_4g.40gb=1", 4, 600.0 * 4 / 7),
        ("gres/gpu:7g.40gb=1", 7, 600.0),
    ],
)
def test_the_slice_comes_from_the_gres_type(tmp_path: Path, tres: str, size: int, dur_7g_s: float) -> None:
    job = import_sacct(_log(tmp_path, _row("1", tres=tres))).jobs[0]
    assert job.duration_for_size(size) == pytest.approx(600.0)
    assert job.duration_for_size(7) == pytest.approx(dur_7g_s)


def test_multi_gpu_jobs_fold_their_slice_seconds_onto_one_gpu_when_asked(tmp_path: Path) -> None:
    path = _log(tmp_path, _row("1", tres="gres/gpu=2"), _row("2", tres="gres/gpu:a100_1g.5gb=2"))
    one, two = import_sacct(path, ImportOptions(multi_gpu="fold")).jobs
    assert one.duration_for_size(7) == 1200.0  # 2 whole GPUs x 600 s
    assert two.duration_for_size(7) == pytest.approx(600.0 * 2 / 7)  # 2 x 1g for 600 s = 2/7 of a GPU


def test_comments_with_pipes_and_the_parsable_format(tmp_path: Path) -> None:
    path = _log(tmp_path, _row("1", comment="a|b wattsched: kind=training"), _row("2", comment="x|y|z"))
    imported = import_sacct(path)
    assert [j.kind for j in imported.jobs] == [JobKind.TRAINING, JobKind.INFERENCE]
    trailing = _log(tmp_path, _row("1") + "|", header=HEADER + "|")
    assert import_sacct(trailing).jobs[0].duration_for_size(3) == 600.0


def test_times_are_read_in_the_given_zone(tmp_path: Path) -> None:
    # 00:30 on 31 March in Berlin (CET) then 04:30 (CEST, clocks went forward at 02:00): 3 h apart, not 4.
    path = _log(
        tmp_path,
        _row("1", submit="00:30:00", start="00:31:00", end="00:41:00", day="2024-03-31"),
        _row("2", submit="04:30:00", start="04:31:00", end="04:41:00", day="2024-03-31"),
    )
    imported = import_sacct(path, timezone=ZoneInfo("Europe/Berlin"))
    assert [j.arrival_s for j in imported.jobs] == [1800.0, 1800.0 + 3 * 3600]
    assert "2024-03-31T00:00:00+01:00" in imported.report.origin


def test_annotated_scaling_takes_the_controllers_curve_of_that_family(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        _row("1", comment="wattsched: scaling=capped"),
        _row("2", comment="wattsched: scaling=sublinear work=1h"),
    )
    one, two = import_sacct(path).jobs
    assert (one.scaling, two.scaling) == (Scaling.CAPPED, Scaling.SUBLINEAR)
    # Capped at 3: observed 600 s on 3g, so 1800 s on 1g, 900 s on 2g and 600 s on 3g, 4g and 7g.
    assert one.durations_s == pytest.approx((1800.0, 900.0, 600.0, 600.0, 600.0))
    assert one.dur_full_s == 600.0  # not linear: no 6 % whole-GPU speed-up
    # Sublinear S(g) = g^0.75 with 1 h on the whole GPU (= on 7g): dur_g = 3600 * 7^0.75 / g^0.75.
    assert two.durations_s == pytest.approx(tuple(3600.0 * (7 / g) ** 0.75 for g in (1, 2, 3, 4, 7)))
    assert two.dur_full_s == pytest.approx(3600.0)
    assert CURVES[Scaling.CAPPED].speedups == (1.0, 2.0, 3.0, 3.0, 3.0)


def test_an_annotated_work_without_deadline_keeps_the_shared_rules_slack(tmp_path: Path) -> None:
    plain = import_sacct(_log(tmp_path, _row("1"))).jobs[0]
    work = import_sacct(_log(tmp_path, _row("1", comment="wattsched: work=2h"))).jobs[0]
    slack = (plain.deadline_s - plain.arrival_s) / plain.duration_for_size(7)
    assert (work.deadline_s - work.arrival_s) / work.duration_for_size(7) == pytest.approx(slack)
    assert work.dur_full_s == pytest.approx(7200.0)


def test_windows_and_duration_scale_apply(tmp_path: Path) -> None:
    path = _log(tmp_path, _row("1"), _row("2", day="2024-03-02", comment="wattsched: deadline=+1h"))
    imported = import_sacct(path, ImportOptions(day=1, multi_gpu="skip", duration_scale=2.0))
    (job,) = imported.jobs
    assert job.arrival_s == 43_200.0 and job.deadline_s == 43_200.0 + 3600.0
    assert job.duration_for_size(3) == 1200.0
    assert imported.report.filtered == {"outside_window": 1}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:10:00", 600.0),
        ("1-00:00:00", 86_400.0),
        ("2-03:04:05", 2 * 86_400 + 3 * 3600 + 4 * 60 + 5),
        ("05:30", 330.0),
        ("05:30.250", 330.25),
        ("90", 5400.0),
        ("1-12", 129_600.0),
        ("1-12:30", 131_400.0),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("", None),
    ],
)
def test_slurm_durations(text: str, seconds: float | None) -> None:
    assert slurm_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["ten", "1:2:3:4", "-5", "1-", "01:00:00 "[:-1] + "x"])
def test_not_slurm_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a Slurm duration"):
        slurm_duration_s(text)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the file is empty"),
        ("JobID|Submit|Start|End|State\n1|x|x|x|x\n", "missing field AllocTRES"),
        (HEADER + "\n" + _row("1.batch") + "\n", "no usable rows"),
    ],
)
def test_bad_files_are_one_input_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as caught:
        import_sacct(path)
    assert str(path) in str(caught.value)
    with pytest.raises(InputError, match="file not found"):
        import_sacct(tmp_path / "absent.txt")


def test_parse_sacct_is_a_trace_parser_of_the_shared_pipeline(tmp_path: Path) -> None:
    path = _log(tmp_path, _row("1"), _row("2", comment="wattsched: kind=training"))
    parsed = parse_sacct(str(path), ImportOptions())
    assert parsed.format == "sacct" and list(parsed.frame["job_id"]) == ["1", "2"]
    assert list(parsed.frame["observed_g"]) == [3, 3] and list(parsed.frame["duration_s"]) == [600.0, 600.0]
    assert read_sacct(path)[1]["2"].annotation is not None


def test_the_cluster_is_the_nodes_at_their_busiest(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        # gpu01: three 3g jobs at once from 12:05 to 12:10 -> 9 compute slices -> 2 GPUs.
        _row("1", start="12:00:00", end="12:10:00", elapsed=""),
        _row("2", start="12:05:00", end="12:15:00", elapsed=""),
        _row("3", start="12:05:00", end="12:20:00", elapsed=""),
        # gpu02: back-to-back whole-GPU jobs (one ends when the next starts) -> 1 GPU.
        _row("4", start="12:00:00", end="12:10:00", elapsed="", tres="gres/gpu=1", node="gpu02"),
        _row("5", start="12:10:00", end="12:20:00", elapsed="", tres="gres/gpu=1", node="gpu02"),
    )
    imported = import_sacct(path)
    nodes = infer_cluster(imported)
    assert [(s.name, s.gpus, s.gpu) for s in nodes.spec.servers] == [
        ("gpu01", 2, "a100-40gb"),
        ("gpu02", 1, "a100-40gb"),
    ]
    assert nodes.models == ("a100_3g.20gb", "gpu")
    fixed = infer_cluster(imported, "h100-80gb", gpus_per_server=4)
    assert [s.gpus for s in fixed.spec.servers] == [4, 4] and fixed.spec.servers[0].gpu == "h100-80gb"
    with pytest.raises(ConfigError, match="h100-80"):
        infer_cluster(imported, "h100-80")


def test_the_imported_trace_runs_on_the_inferred_cluster(tmp_path: Path) -> None:
    rows = [
        _row(
            str(i),
            submit=f"12:{i:02d}:00",
            start=f"12:{i:02d}:30",
            end=f"13:{i:02d}:30",
            elapsed="",
            node=f"gpu0{i % 2}",
            comment="wattsched: deadline=+2h" if i % 3 == 0 else "",
        )
        for i in range(10)
    ]
    imported = import_sacct(_log(tmp_path, *rows))
    trace = tmp_path / "trace.csv"
    write_trace(imported.jobs, trace)
    assert read_trace(trace) == imported.jobs
    cluster_file = tmp_path / "cluster.json"
    write_cluster_file(infer_cluster(imported), cluster_file)
    spec = read_cluster_file(cluster_file)
    options = ClusterOptions(record_jobs=True)
    result = ClusterSimulation(spec, options, horizon_s=imported.report.horizon_s).run(imported.jobs)
    summary = result.to_dict()
    assert summary["jobs"] == 10 and summary["energy_j"] > 0 and summary["gpus"] == spec.gpus
    records = result.records or ()
    assert sorted(r.record.job_id for r in records) == sorted(j.job_id for j in imported.jobs)
    assert all(r.record.completion_s <= summary["end_s"] for r in records)


def test_the_controllers_measured_energy_is_read_from_the_admin_comment(tmp_path: Path) -> None:
    """``AdminComment`` (after ``Comment``, with a ``|`` in the comment) carries the Slurm controller's
    ``wattsched_energy_j``: each kept job's, exactly as written; a job without one has none."""
    header = HEADER.replace("Comment|NodeList", "Comment|AdminComment|NodeList")
    rows = [
        _row("1", comment="wattsched: kind=training").replace("|gpu01", "|wattsched_energy_j=99.425|gpu01"),
        _row("2", comment="a|b").replace("|gpu01", "|wattsched_energy_j=0.001|gpu01"),
        _row("3").replace("|gpu01", "|wattsched: waiting to be placed|gpu01"),
        _row("4").replace("|gpu01", "|wattsched_energy_j=|gpu01"),  # no figure: none
    ]
    imported = import_sacct(_log(tmp_path, *rows, header=header))
    assert imported.energies_j == {"1": 99.425, "2": 0.001}
    assert imported.rows["3"].energy_j is None and imported.rows["4"].energy_j is None
    assert imported.rows["2"].annotation is None  # the | went back into the Comment, not the AdminComment


def test_the_energy_tres_of_slurm_25_11_on_comes_before_the_admin_comment(tmp_path: Path) -> None:
    """From Slurm 25.11 on the controller also sets the job's ``energy`` TRES, which ``AllocTRES`` shows
    (``energy=1234``, whole joules): it is the job's energy where it is there and not 0."""
    header = HEADER.replace("Comment|NodeList", "Comment|AdminComment|NodeList")
    rows = [
        _row("1", tres=f"billing=1,cpu=1,energy=1234,{MIG3}").replace(
            "|gpu01", "|wattsched_energy_j=1234.4|gpu01"
        ),
        _row("2", tres=f"energy=0,{MIG3}").replace(
            "|gpu01", "|wattsched_energy_j=7.5|gpu01"
        ),  # 0: the comment
        _row("3", tres=f"energy=55,{MIG3}").replace("|gpu01", "||gpu01"),
        _row("4", tres=f"energy=x,{MIG3}").replace("|gpu01", "||gpu01"),  # a bad count: none
    ]
    imported = import_sacct(_log(tmp_path, *rows, header=header))
    assert imported.energies_j == {"1": 1234.0, "2": 7.5, "3": 55.0}
    assert imported.rows["4"].energy_j is None and imported.rows["1"].gpu_type == imported.rows["3"].gpu_type
