"""What a Slurm job tells wattsched in its ``--comment``: deadline, class, scaling, work, preemptibility.

A comment is one of

* empty or absent, or text without the marker ``wattsched:``: every field takes its default;
* ``wattsched: key=value key=value ...``: the marker at the start of the comment or after a space (text
  before it is the user's own and is ignored), then pairs separated by whitespace up to the end of the
  comment. Keys, each at most once:

  ``deadline=``
      an ISO 8601 time without spaces (``2024-03-01T18:00:00+01:00``, ``2024-03-01T17:00:00Z``,
      ``2024-03-01T18:00``; a time without an offset is in ``naive_timezone``, UTC unless the caller says
      otherwise), or ``+DURATION`` after the job's submission. It must not lie before the submission (nor
      before ``now_s`` when the caller gives it).
  ``kind=inference|training``
      the job's class.
  ``scaling=linear|sublinear|capped``
      how the job speeds up on larger MIG slices (``measured`` needs profiled data and is not accepted here).
  ``work=DURATION``
      its run time alone on the whole GPU; must be > 0.
  ``preemptible=yes|no``
      whether the job may be requeued to make room for another.
  ``gpus=N``
      the whole GPUs of one node the job needs at once (a whole number from 1 to :data:`MAX_GPUS`; a job of
      several runs as a gang: :mod:`wattsched.slurm.gangs`). Slurm's own ``--gres=gpu:N`` says the same.

DURATION: whole or decimal seconds (``120``, ``12.5``), or units in the order ``d``, ``h``, ``m``, ``s``
(``90s``, ``15m``, ``1h30m``, ``2h``, ``1d12h``), at most :data:`MAX_DURATION_S`. Keys and the words
``kind``, ``scaling`` and ``preemptible`` take are lower case as written here.

Defaults (:data:`DEFAULTS`): ``work`` = the job's Slurm time limit when it has one, else 1 h; ``deadline``
= submission + 2 × work; ``kind`` training; ``scaling`` linear; ``preemptible`` no; ``gpus`` 1.
:attr:`Annotation.defaulted` names the fields that took a default, so that a caller with a better rule
(the sacct importer's deadline rule) can tell them apart.

A comment is untrusted text: it is read only as data (never evaluated), at most :data:`MAX_COMMENT_CHARS`
characters are accepted, and an :class:`AnnotationError` message is one printable ASCII line that quotes
the offending text cut to :data:`QUOTE_CHARS` characters, fit for a Slurm hold reason.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import TypeVar

from wattsched.errors import WattschedError, did_you_mean
from wattsched.workload.job import JobKind, Scaling

__all__ = [
    "DEFAULTS",
    "KEYS",
    "MARKER",
    "MAX_COMMENT_CHARS",
    "MAX_DURATION_S",
    "MAX_GPUS",
    "QUOTE_CHARS",
    "Annotation",
    "AnnotationDefaults",
    "AnnotationError",
    "format_annotation",
    "format_duration",
    "parse_annotation",
    "parse_duration",
]

#: The text that starts an annotation.
MARKER = "wattsched:"
#: The annotation's keys, in the order :func:`format_annotation` writes them.
KEYS: tuple[str, ...] = ("deadline", "kind", "scaling", "work", "preemptible", "gpus")
#: Most GPUs a job may ask for (a node of Slurm holds far fewer).
MAX_GPUS = 1024
#: Longest comment accepted (Slurm itself allows much longer comments).
MAX_COMMENT_CHARS = 4096
#: Longest piece of a comment an error message quotes.
QUOTE_CHARS = 40
#: Longest DURATION accepted: 10 years, far beyond any job, and small enough to stay exact in a float.
MAX_DURATION_S = 10 * 366 * 86_400.0

_SCALINGS = (Scaling.LINEAR, Scaling.SUBLINEAR, Scaling.CAPPED)
_YES_NO = {"yes": True, "no": False}
_NUMBER = r"[0-9]{1,12}(?:\.[0-9]{1,24})?"
_SECONDS = re.compile(rf"^{_NUMBER}$")
_UNITS = re.compile(rf"^(?:({_NUMBER})d)?(?:({_NUMBER})h)?(?:({_NUMBER})m)?(?:({_NUMBER})s)?$")
_UNIT_S = (86_400.0, 3_600.0, 60.0, 1.0)
_T = TypeVar("_T")
_MARKER_AT = re.compile(rf"(?:^|\s){re.escape(MARKER)}")


class AnnotationError(WattschedError, ValueError):
    """A malformed annotation. ``key`` is the key concerned (``None`` when the problem is the comment as a
    whole or a pair without a key); the message is one printable line naming it and what was expected."""

    def __init__(self, key: str | None, message: str) -> None:
        self.key = key
        super().__init__(f"{key}: {message}" if key is not None else message)


@dataclass(frozen=True)
class AnnotationDefaults:
    """What a field takes when the comment does not give it."""

    kind: JobKind = JobKind.TRAINING
    scaling: Scaling = Scaling.LINEAR
    #: Work when the job has no Slurm time limit either (s).
    work_s: float = 3_600.0
    #: Deadline = submission + this × work.
    deadline_factor: float = 2.0
    preemptible: bool = False


DEFAULTS = AnnotationDefaults()


@dataclass(frozen=True)
class Annotation:
    """A job's annotation with every field resolved.

    * ``deadline_s``: the soft deadline, absolute, in seconds since the Unix epoch.
    * ``kind``: inference or training.
    * ``scaling``: linear, sublinear or capped.
    * ``work_s``: run time alone on the whole GPU (MIG disabled), seconds, > 0.
    * ``preemptible``: the job may be requeued to make room for another.
    * ``gpus``: the GPUs it needs at once (> 1: a gang of whole GPUs of one node).
    * ``defaulted``: the names (of :data:`KEYS`) of the fields that took a default.
    """

    deadline_s: float
    kind: JobKind
    scaling: Scaling
    work_s: float
    preemptible: bool
    defaulted: frozenset[str] = frozenset()
    gpus: int = 1


def parse_annotation(
    comment: str | None,
    *,
    submit_s: float,
    time_limit_s: float | None = None,
    now_s: float | None = None,
    naive_timezone: tzinfo = UTC,
    defaults: AnnotationDefaults = DEFAULTS,
) -> Annotation:
    """The annotation in a job's comment (module docstring), defaults filled in.

    ``submit_s``: the job's submission (epoch seconds); ``time_limit_s``: its Slurm time limit, the default
    work (``None`` or not finite: no limit); ``now_s``: when given, an explicit deadline before it is an
    error too; ``naive_timezone``: the zone of an ISO time written without an offset.
    Raises :class:`AnnotationError`.
    """
    given = _pairs(comment)
    defaulted = frozenset(k for k in KEYS if k not in given)
    kind = _choice("kind", given["kind"], {k.value: k for k in JobKind}) if "kind" in given else defaults.kind
    scaling = (
        _choice("scaling", given["scaling"], {s.value: s for s in _SCALINGS})
        if "scaling" in given
        else defaults.scaling
    )
    preemptible = (
        _choice("preemptible", given["preemptible"], _YES_NO)
        if "preemptible" in given
        else defaults.preemptible
    )
    if "work" in given:
        work_s = _duration("work", given["work"])
        if work_s <= 0:
            raise AnnotationError("work", f"expected a DURATION > 0, got {_quote(given['work'])}")
    elif time_limit_s is not None and math.isfinite(time_limit_s) and time_limit_s > 0:
        work_s = float(time_limit_s)
    else:
        work_s = defaults.work_s
    if "deadline" in given:
        deadline_s = _deadline(given["deadline"], submit_s, naive_timezone)
        text = _quote(given["deadline"])
        if deadline_s < submit_s:
            raise AnnotationError("deadline", f"{text} is before the job's submission ({_iso(submit_s)})")
        if now_s is not None and deadline_s < now_s:
            raise AnnotationError("deadline", f"{text} is in the past (now {_iso(now_s)})")
    else:
        deadline_s = submit_s + defaults.deadline_factor * work_s
    gpus = _gpus(given["gpus"]) if "gpus" in given else 1
    return Annotation(float(deadline_s), kind, scaling, float(work_s), bool(preemptible), defaulted, gpus)


def format_annotation(annotation: Annotation, *, keys: tuple[str, ...] | None = None) -> str:
    """The canonical comment text of ``annotation``: ``wattsched: deadline=... kind=...`` in :data:`KEYS`
    order, the deadline in UTC to the microsecond. ``keys``: the fields to write (default: those not
    defaulted), so that :func:`parse_annotation` with the same submission and time limit gives back an equal
    annotation. With no key to write, the text is the bare marker."""
    chosen = [k for k in KEYS if k not in annotation.defaulted] if keys is None else list(keys)
    unknown = [k for k in chosen if k not in KEYS]
    if unknown:
        raise AnnotationError(unknown[0], f"unknown key; valid keys: {', '.join(KEYS)}")
    values = {
        "deadline": _iso(annotation.deadline_s),
        "kind": JobKind(annotation.kind).value,
        "scaling": Scaling(annotation.scaling).value,
        "work": format_duration(annotation.work_s),
        "preemptible": "yes" if annotation.preemptible else "no",
        "gpus": str(annotation.gpus),
    }
    return " ".join([MARKER, *(f"{k}={values[k]}" for k in KEYS if k in chosen)]).rstrip()


def parse_duration(text: str) -> float:
    """Seconds of a DURATION (module docstring); ``ValueError`` when ``text`` is not one."""
    value = text.strip()
    if _SECONDS.match(value):
        seconds = float(value)
    else:
        units = _UNITS.match(value)
        if not value or units is None:
            raise ValueError(f"not a DURATION: {_quote(text)}")
        seconds = sum(float(part) * unit for part, unit in zip(units.groups(), _UNIT_S, strict=True) if part)
    if not seconds <= MAX_DURATION_S:
        raise ValueError(f"{_quote(text)} is longer than {MAX_DURATION_S:.0f} s")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest DURATION text for ``seconds``: ``1h30m`` for whole seconds, else plain seconds."""
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_DURATION_S):
        raise ValueError(f"a DURATION is in [0, {MAX_DURATION_S:.0f}] s, got {seconds!r}")
    if seconds != int(seconds):
        text = repr(float(seconds))
        # repr switches to an exponent below 1e-4, which a DURATION does not allow.
        return text if "e" not in text else f"{seconds:.9f}".rstrip("0")
    rest = int(seconds)
    parts = []
    for unit, size in zip("dhms", (86_400, 3_600, 60, 1), strict=True):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0"


def _pairs(comment: str | None) -> dict[str, str]:
    """The key=value pairs after the marker (empty without one); the first malformed pair raises."""
    if not comment:
        return {}
    if len(comment) > MAX_COMMENT_CHARS:
        raise AnnotationError(
            None, f"comment too long: {len(comment)} characters, at most {MAX_COMMENT_CHARS}"
        )
    found = _MARKER_AT.search(comment)
    if found is None:
        return {}
    given: dict[str, str] = {}
    for token in comment[found.end() :].split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise AnnotationError(None, f"malformed pair {_quote(token)}: expected key=value")
        if key not in KEYS:
            raise AnnotationError(
                _safe(key), f"unknown key{did_you_mean(_safe(key), KEYS)}; valid keys: {', '.join(KEYS)}"
            )
        if key in given:
            raise AnnotationError(key, f"given twice ({_quote(given[key])} and {_quote(value)})")
        if not value:
            raise AnnotationError(key, f"value missing: expected {_EXPECTED[key]}")
        given[key] = value
    return given


_EXPECTED = {
    "deadline": "an ISO 8601 time or +DURATION",
    "kind": "inference or training",
    "scaling": "linear, sublinear or capped",
    "work": "a DURATION such as 90s, 15m, 1h30m or 120",
    "preemptible": "yes or no",
    "gpus": f"a whole number of GPUs from 1 to {MAX_GPUS}",
}


def _choice(key: str, value: str, valid: dict[str, _T]) -> _T:
    if value not in valid:
        raise AnnotationError(key, f"expected {_EXPECTED[key]}, got {_quote(value)}")
    return valid[value]


def _duration(key: str, value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError:
        raise AnnotationError(key, f"expected {_EXPECTED[key]}, got {_quote(value)}") from None


def _gpus(value: str) -> int:
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_GPUS:
        raise AnnotationError("gpus", f"expected {_EXPECTED['gpus']}, got {_quote(value)}")
    return int(value)


def _deadline(value: str, submit_s: float, naive_timezone: tzinfo) -> float:
    if value.startswith("+"):
        return submit_s + _duration("deadline", value[1:]) if value[1:] else _bad_deadline(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return _bad_deadline(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=naive_timezone)
    return moment.timestamp()


def _bad_deadline(value: str) -> float:
    raise AnnotationError("deadline", f"expected {_EXPECTED['deadline']}, got {_quote(value)}")


def _iso(epoch_s: float) -> str:
    """UTC ISO 8601 with ``Z``, fractional seconds only when there are any."""
    moment = datetime.fromtimestamp(epoch_s, UTC)
    text = moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def _safe(text: str) -> str:
    """``text`` as printable ASCII (anything else becomes ``?``), cut to :data:`QUOTE_CHARS` characters."""
    cut = text[:QUOTE_CHARS]
    clean = "".join(c if " " <= c <= "~" else "?" for c in cut)
    return clean + ("..." if len(text) > QUOTE_CHARS else "")


def _quote(text: str) -> str:
    return f"'{_safe(text)}'"
