"""A job's ``wattsched:`` comment: defaults, every key, every error (one safe line), format/parse round
trips."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.errors import WattschedError
from wattsched.slurm.annotations import (
    DEFAULTS,
    KEYS,
    MAX_COMMENT_CHARS,
    Annotation,
    AnnotationError,
    format_annotation,
    format_duration,
    parse_annotation,
    parse_duration,
)
from wattsched.workload.job import JobKind, Scaling

# 2024-03-01T12:00:00Z
SUBMIT_S = datetime(2024, 3, 1, 12, tzinfo=UTC).timestamp()


def _parse(comment: str | None, **kwargs: object) -> Annotation:
    return parse_annotation(comment, submit_s=SUBMIT_S, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "comment", [None, "", "   ", "nightly run of model X", "xwattsched: kind=inference", "wattsched:"]
)
def test_no_annotation_takes_every_default(comment: str | None) -> None:
    annotation = _parse(comment)
    assert annotation == Annotation(
        deadline_s=SUBMIT_S + 2 * 3600.0,  # submission + 2 x the default work of 1 h
        kind=JobKind.TRAINING,
        scaling=Scaling.LINEAR,
        work_s=3600.0,
        preemptible=False,
        defaulted=frozenset(KEYS),
    )
    assert DEFAULTS.work_s == 3600.0 and DEFAULTS.deadline_factor == 2.0


def test_the_time_limit_is_the_default_work_and_sets_the_default_deadline() -> None:
    annotation = _parse("wattsched: kind=inference", time_limit_s=1800.0)
    assert annotation.work_s == 1800.0
    assert annotation.deadline_s == SUBMIT_S + 3600.0  # 2 x 30 min
    assert annotation.defaulted == frozenset({"deadline", "scaling", "work", "preemptible", "gpus"})
    for unknown_limit in (None, float("inf"), 0.0):
        assert _parse("", time_limit_s=unknown_limit).work_s == 3600.0


def test_every_key_given_after_text_of_the_users_own() -> None:
    annotation = _parse(
        "checkpointed run  wattsched: deadline=+1h30m kind=inference scaling=capped work=15m preemptible=yes "
        "gpus=2"
    )
    assert annotation == Annotation(
        SUBMIT_S + 5400.0, JobKind.INFERENCE, Scaling.CAPPED, 900.0, True, frozenset(), gpus=2
    )


@pytest.mark.parametrize(
    ("text", "expected_s"),
    [
        ("2024-03-01T18:00:00Z", SUBMIT_S + 6 * 3600),
        ("2024-03-01T18:00:00+01:00", SUBMIT_S + 5 * 3600),
        ("2024-03-01T18:00:00", SUBMIT_S + 6 * 3600),  # naive: UTC by default
        ("2024-03-01T18:00", SUBMIT_S + 6 * 3600),
        ("2024-03-02", SUBMIT_S + 12 * 3600),
        ("2024-03-01T12:00:00Z", SUBMIT_S),  # at the submission: not before it
        ("+0", SUBMIT_S),
        ("+90s", SUBMIT_S + 90),
        ("+2h", SUBMIT_S + 7200),
        ("+1d12h", SUBMIT_S + 129_600),
        ("+12.5", SUBMIT_S + 12.5),
    ],
)
def test_deadline_forms(text: str, expected_s: float) -> None:
    annotation = _parse(f"wattsched: deadline={text}")
    assert annotation.deadline_s == expected_s
    assert "deadline" not in annotation.defaulted


def test_a_naive_deadline_is_read_in_the_zone_the_caller_gives() -> None:
    # 13:00 in Berlin on 1 March (CET, UTC+1) is 12:00 UTC.
    annotation = _parse("wattsched: deadline=2024-03-01T14:00:00", naive_timezone=ZoneInfo("Europe/Berlin"))
    assert annotation.deadline_s == SUBMIT_S + 3600.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("15m", 900.0),
        ("1h30m", 5400.0),
        ("2h", 7200.0),
        ("120", 120.0),
        ("12.5", 12.5),
        ("1d", 86_400.0),
        ("1h0m30s", 3630.0),
        ("0.5h", 1800.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert _parse(f"wattsched: work={text}").work_s == seconds


@pytest.mark.parametrize(
    "text", ["", "h", "1h30", "30m1h", "1.5.5", "-5", "1e3", "5 m", "inf", "nan", "1_000", "99999999999999d"]
)
def test_not_durations(text: str) -> None:
    with pytest.raises(ValueError, match=r"DURATION|longer than"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("comment", "key", "message"),
    [
        (
            "wattsched: deadline=tomorrow",
            "deadline",
            "deadline: expected an ISO 8601 time or +DURATION, got 'tomorrow'",
        ),
        ("wattsched: deadline=+", "deadline", "deadline: expected an ISO 8601 time or +DURATION, got '+'"),
        (
            "wattsched: deadline=+soon",
            "deadline",
            "deadline: expected an ISO 8601 time or +DURATION, got 'soon'",
        ),
        (
            "wattsched: deadline=2024-03-01T11:59:59Z",
            "deadline",
            "deadline: '2024-03-01T11:59:59Z' is before the job's submission (2024-03-01T12:00:00Z)",
        ),
        (
            "wattsched: deadlin=+1h",
            "deadlin",
            "deadlin: unknown key (did you mean 'deadline'?); valid keys: deadline, kind, scaling, work, "
            "preemptible, gpus",
        ),
        (
            "wattsched: colour=red",
            "colour",
            "colour: unknown key; valid keys: deadline, kind, scaling, work, preemptible, gpus",
        ),
        ("wattsched: kind=inference kind=training", "kind", "kind: given twice ('inference' and 'training')"),
        ("wattsched: work=0", "work", "work: expected a DURATION > 0, got '0'"),
        ("wattsched: work=0h0m", "work", "work: expected a DURATION > 0, got '0h0m'"),
        (
            "wattsched: work=-1h",
            "work",
            "work: expected a DURATION such as 90s, 15m, 1h30m or 120, got '-1h'",
        ),
        ("wattsched: kind=", "kind", "kind: value missing: expected inference or training"),
        ("wattsched: kind=serving", "kind", "kind: expected inference or training, got 'serving'"),
        ("wattsched: kind=Inference", "kind", "kind: expected inference or training, got 'Inference'"),
        (
            "wattsched: scaling=measured",
            "scaling",
            "scaling: expected linear, sublinear or capped, got 'measured'",
        ),
        ("wattsched: preemptible=maybe", "preemptible", "preemptible: expected yes or no, got 'maybe'"),
        ("wattsched: foo", None, "malformed pair 'foo': expected key=value"),
        ("wattsched: =inference", None, "malformed pair '=inference': expected key=value"),
    ],
)
def test_errors_name_the_key_and_what_was_expected(comment: str, key: str | None, message: str) -> None:
    with pytest.raises(AnnotationError) as caught:
        _parse(comment)
    assert caught.value.key == key
    assert str(caught.value) == message
    assert isinstance(caught.value, WattschedError) and isinstance(caught.value, ValueError)


def test_a_deadline_before_now_is_an_error_only_when_now_is_given() -> None:
    comment = "wattsched: deadline=+1h"
    assert _parse(comment, now_s=SUBMIT_S + 3600).deadline_s == SUBMIT_S + 3600
    late = r"^deadline: '\+1h' is in the past \(now 2024-03-01T13:00:01Z\)$"
    with pytest.raises(AnnotationError, match=late):
        _parse(comment, now_s=SUBMIT_S + 3601)
    # A defaulted deadline is never an error, even when it has passed.
    assert _parse("", now_s=SUBMIT_S + 10**6).deadline_s == SUBMIT_S + 7200


def test_a_comment_longer_than_the_bound_is_refused_unread() -> None:
    too_long = f"comment too long: {MAX_COMMENT_CHARS + 1} characters"
    with pytest.raises(AnnotationError, match=too_long) as caught:
        _parse("x" * (MAX_COMMENT_CHARS + 1))
    assert caught.value.key is None
    assert _parse("x" * MAX_COMMENT_CHARS).defaulted == frozenset(KEYS)


@pytest.mark.parametrize("value", ["a" * 100, "\x1b[31mred\x00", "caf\u00e9\u202e", "'; rm -rf / #", "x\ry"])
def test_messages_are_one_short_printable_line(value: str) -> None:
    with pytest.raises(AnnotationError) as caught:
        _parse(f"wattsched: kind={value}")
    message = str(caught.value)
    assert message.isascii() and message.isprintable()
    assert len(message) < 100  # the value is cut to 40 characters
    if len(value) > 40:
        assert f"'{'a' * 40}...'" in message


def test_unknown_key_with_control_characters_is_quoted_safely() -> None:
    with pytest.raises(AnnotationError) as caught:
        _parse("wattsched: k\x07y=1")
    assert caught.value.key == "k?y" and str(caught.value).isprintable()


def test_pairs_may_be_separated_by_any_whitespace() -> None:
    annotation = _parse("wattsched:\tkind=inference\n work=90s")
    assert (annotation.kind, annotation.work_s) == (JobKind.INFERENCE, 90.0)


def test_format_writes_the_explicit_keys_in_canonical_order() -> None:
    annotation = _parse("wattsched: preemptible=yes work=5400 deadline=2024-03-01T19:00:00+01:00")
    text = format_annotation(annotation)
    assert text == "wattsched: deadline=2024-03-01T18:00:00Z work=1h30m preemptible=yes"
    assert format_annotation(annotation, keys=("kind",)) == "wattsched: kind=training"
    assert format_annotation(_parse(None)) == "wattsched:"
    with pytest.raises(AnnotationError, match="unknown key"):
        format_annotation(annotation, keys=("colour",))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0"),
        (90.0, "1m30s"),
        (5400.0, "1h30m"),
        (7200.0, "2h"),
        (86_401.0, "1d1s"),
        (12.5, "12.5"),
        (0.00001, "0.00001"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


_WORK = st.one_of(
    st.integers(min_value=1, max_value=10**7).map(float),
    st.floats(min_value=1e-3, max_value=1e7, allow_nan=False, allow_infinity=False),
)


@given(
    submit=st.integers(min_value=0, max_value=4 * 10**9),
    offset_us=st.integers(min_value=0, max_value=10**13),
    kind=st.sampled_from(list(JobKind)),
    scaling=st.sampled_from([Scaling.LINEAR, Scaling.SUBLINEAR, Scaling.CAPPED]),
    work_s=_WORK,
    preemptible=st.booleans(),
    chosen=st.sets(st.sampled_from(KEYS)),
    time_limit_s=st.one_of(st.none(), _WORK),
)
def test_format_then_parse_gives_back_the_annotation(
    submit: int,
    offset_us: int,
    kind: JobKind,
    scaling: Scaling,
    work_s: float,
    preemptible: bool,
    chosen: set[str],
    time_limit_s: float | None,
) -> None:
    # Deadlines are kept to the microsecond: build one from whole microseconds.
    deadline_s = (submit * 10**6 + offset_us) / 10**6
    raw = Annotation(deadline_s, kind, scaling, work_s, preemptible)
    keys = tuple(k for k in KEYS if k in chosen)
    first = parse_annotation(
        format_annotation(raw, keys=keys), submit_s=float(submit), time_limit_s=time_limit_s
    )
    for key, field in (
        ("deadline", "deadline_s"),
        ("kind", "kind"),
        ("scaling", "scaling"),
        ("work", "work_s"),
        ("preemptible", "preemptible"),
    ):
        if key in chosen:
            assert getattr(first, field) == getattr(raw, field)
    assert first.defaulted == frozenset(KEYS) - chosen
    again = parse_annotation(format_annotation(first), submit_s=float(submit), time_limit_s=time_limit_s)
    assert again == first
