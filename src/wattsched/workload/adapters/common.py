"""What every trace adapter shares: options, the import report, and turning parsed rows into jobs.

An adapter (``csvlog.py``, ``philly.py``, ``alibaba2023.py``, and the Slurm log reader
``wattsched.slurm.sacct``) only parses its file into a :class:`ParsedTrace`: one row per usable job with its
trace time, its observed run time and the slice size that run time was observed on, plus counts of the rows
it skipped and why. Optional columns carry what a format may know besides: ``gpus`` (GPUs the job needs at
once, default 1), ``deadline_offset_s`` (its own deadline, as seconds after its arrival; NaN: the rule
below) and ``scaling_hint`` (``linear``, ``sublinear`` or ``capped``; empty: the default curve).
:func:`build_jobs` then does the rest, in this order, each step
counted in the :class:`ImportReport`:

1. **Duration filters** (``min_duration_s`` / ``max_duration_s`` on the observed run time).
2. **Time window**: ``day = N`` keeps arrivals in ``[N·86400, (N+1)·86400)`` of the trace clock (each adapter
   documents its origin), or ``start_s``/``end_s`` explicitly. Arrivals are re-based so that the window
   starts at 0.
3. **Rate scaling** to ``target_rate_per_min`` (jobs per minute over the window):
   ``thin`` (default) keeps a uniformly drawn subset of exactly ``round(rate·window_min)`` jobs, which keeps
   the time-of-day shape; ``stretch`` multiplies every arrival time by ``natural_rate / target_rate`` (the
   window
   grows or shrinks with it).
4. **Durations**: the observed run time is the run time alone on the observed slice ``g_obs``; with the job's
   speed-up curve S (linear by default, or a measured curve drawn per job from ``curves``, matched on class),
   ``dur_1g = dur_obs · S(g_obs)`` and ``dur_g = dur_1g / S(g)`` (:func:`durations_from_base`).
   ``duration_scale`` multiplies every duration; ``target_load`` instead picks the scale so that the offered
   load ``Σ dur_7g / horizon`` equals it (one GPU, every job on 7g).
5. **Class**: ``source`` uses the adapter's own hint (Alibaba: QoS; a job log's ``kind`` column; rows
   without a hint take the ``duration`` rule), ``duration`` calls a job inference when
   its *observed* run time is at most ``inference_max_s`` (600 s: P1's training jobs take at least 10 min),
   ``share`` draws inference with probability ``inference_share``.
6. **Deadline** by P1's rule (docs/concepts/mig-model.md): ``d = a + U(lo, hi) · dur_7g`` with
   ``deadline_slack = (lo, hi)``, unless the row gives its own (``deadline_offset_s``: ``d = a + offset``).

**Multi-GPU jobs** (``multi_gpu``): a job that ran on g > 1 GPUs at once is ``fold``-ed (its GPU work,
``g ·`` run time, serialised onto one whole GPU: the default, for the one-GPU simulator), ``skip``-ped
(counted as ``multi_gpu``), or ``keep``-t: the job keeps its run time and needs g GPUs at once (the trace's
``gpus`` column, which only ``cluster run`` accepts).

Randomness (thinning, class share, curve draws, slack) comes from ``numpy.random.SeedSequence(seed)`` spawned
into independent streams, so an import is a pure function of (file, options).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from wattsched.errors import ConfigError, InputError
from wattsched.units import SECONDS_PER_MINUTE
from wattsched.workload.job import P1_SIZES as COMPUTE_SIZES
from wattsched.workload.job import Job, JobKind, Scaling
from wattsched.workload.scaling import FAMILY_CURVES, ScalingCurve, durations_from_base, linear_curve

__all__ = [
    "OPTIONAL_COLUMNS",
    "RAW_COLUMNS",
    "SECONDS_PER_DAY",
    "ImportOptions",
    "ImportReport",
    "ParsedTrace",
    "build_jobs",
    "read_raw_csv",
    "require_columns",
]

SECONDS_PER_DAY = 86_400.0
#: Columns of :attr:`ParsedTrace.frame`.
RAW_COLUMNS = ("row", "job_id", "time_s", "duration_s", "observed_g", "kind_hint")
#: Columns of :attr:`ParsedTrace.frame` a format may add (module docstring).
OPTIONAL_COLUMNS = ("gpus", "deadline_offset_s", "scaling_hint")

ClassRule = Literal["source", "duration", "share"]
RateMethod = Literal["thin", "stretch"]
MultiGpu = Literal["fold", "skip", "keep"]


@dataclass(frozen=True)
class ImportOptions:
    """How to turn a public trace into a wattsched trace. Defaults keep every row, unscaled."""

    day: int | None = None
    start_s: float | None = None
    end_s: float | None = None
    target_rate_per_min: float | None = None
    rate_method: RateMethod = "thin"
    duration_scale: float = 1.0
    target_load: float | None = None
    min_duration_s: float | None = None
    max_duration_s: float | None = None
    deadline_slack: tuple[float, float] = (1.0, 1.5)
    class_rule: ClassRule | None = None  # None: the adapter's default
    inference_share: float | None = None
    inference_max_s: float = 600.0
    curves: tuple[ScalingCurve, ...] | None = None
    multi_gpu: MultiGpu = "fold"
    seed: int = 0
    #: A job log's column for each key (``csv`` format): ``(("submit", "submit_time"), ...)``.
    columns: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in (
            "start_s",
            "end_s",
            "target_rate_per_min",
            "duration_scale",
            "target_load",
            "min_duration_s",
            "max_duration_s",
            "inference_max_s",
        ):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value}")
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        if self.day is not None and (self.start_s is not None or self.end_s is not None):
            raise ConfigError("give either day or start_s/end_s, not both")
        if self.day is not None and self.day < 0:
            raise ConfigError(f"day must be >= 0, got {self.day}")
        if self.start_s is not None and self.end_s is not None and self.end_s <= self.start_s:
            raise ConfigError(f"end_s ({self.end_s}) must be after start_s ({self.start_s})")
        if self.target_rate_per_min is not None and not self.target_rate_per_min > 0:
            raise ConfigError(f"target rate must be > 0 jobs/min, got {self.target_rate_per_min}")
        if self.rate_method not in ("thin", "stretch"):
            raise ConfigError(f"rate method must be 'thin' or 'stretch', got {self.rate_method!r}")
        if not self.duration_scale > 0:
            raise ConfigError(f"duration scale must be > 0, got {self.duration_scale}")
        if self.target_load is not None and (not self.target_load > 0 or self.duration_scale != 1.0):
            raise ConfigError("target load must be > 0 and cannot be combined with a duration scale")
        lo, hi = self.deadline_slack
        if not (0 < lo <= hi and math.isfinite(hi)):
            raise ConfigError(f"deadline slack must satisfy 0 < lo <= hi, got ({lo}, {hi})")
        if self.class_rule not in (None, "source", "duration", "share"):
            raise ConfigError(f"class rule must be source, duration or share, got {self.class_rule!r}")
        if self.inference_share is not None and not 0.0 <= self.inference_share <= 1.0:
            raise ConfigError(f"inference share must be in [0, 1], got {self.inference_share}")
        if (self.class_rule == "share") != (self.inference_share is not None):
            raise ConfigError("class rule 'share' needs inference_share, and inference_share needs that rule")
        if self.curves is not None and not self.curves:
            raise ConfigError("curves, when given, must hold at least one curve")
        if self.multi_gpu not in ("fold", "skip", "keep"):
            raise ConfigError(f"multi_gpu must be 'fold', 'skip' or 'keep', got {self.multi_gpu!r}")

    def window(self, first_time_s: float, last_time_s: float) -> tuple[float, float]:
        """The ``[start, end)`` window on the trace clock; without options, whole days around the data."""
        if self.day is not None:
            return self.day * SECONDS_PER_DAY, (self.day + 1) * SECONDS_PER_DAY
        start = (
            self.start_s
            if self.start_s is not None
            else math.floor(first_time_s / SECONDS_PER_DAY) * SECONDS_PER_DAY
        )
        end = (
            self.end_s
            if self.end_s is not None
            else (math.floor(last_time_s / SECONDS_PER_DAY) + 1) * SECONDS_PER_DAY
        )
        if end <= start:
            raise ConfigError(f"empty window [{start}, {end})")
        return float(start), float(end)


@dataclass(frozen=True)
class ParsedTrace:
    """An adapter's output: usable rows (columns :data:`RAW_COLUMNS`) and skipped-row counts by reason."""

    path: str
    format: str
    rows_read: int
    frame: pd.DataFrame
    skipped: dict[str, int]
    filtered: dict[str, int]
    default_class_rule: ClassRule
    origin: str  # what time 0 of the trace clock is, for the report
    #: A format's last step on the built jobs (a Slurm log: its jobs' annotations); ``None``: none.
    finish: Callable[[list[Job], ImportReport], tuple[list[Job], ImportReport]] | None = None


@dataclass(frozen=True)
class ImportReport:
    """Counts of an import: ``rows_read == rows_kept + Σ skipped + Σ filtered`` always holds.

    ``offered_load`` is ``Σ gpus · dur_7g / horizon`` (GPU-seconds of work per second of the window).

    ``skipped`` counts malformed rows by reason (bad values); ``filtered`` counts valid rows left out by an
    option or a documented rule (outside the window, thinned, CPU-only, ...).
    """

    path: str
    format: str
    rows_read: int
    rows_kept: int
    skipped: dict[str, int]
    filtered: dict[str, int]
    origin: str
    window_start_s: float
    window_end_s: float
    horizon_s: float
    arrival_rate_per_min: float
    duration_scale: float
    offered_load: float
    inference_share: float
    observed_duration_quantiles_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "skipped": dict(self.skipped),
            "filtered": dict(self.filtered),
            "origin": self.origin,
            "window_start_s": self.window_start_s,
            "window_end_s": self.window_end_s,
            "horizon_s": self.horizon_s,
            "arrival_rate_per_min": self.arrival_rate_per_min,
            "duration_scale": self.duration_scale,
            "offered_load": self.offered_load,
            "inference_share": self.inference_share,
            "observed_duration_quantiles_s": dict(self.observed_duration_quantiles_s),
        }

    def lines(self) -> list[str]:
        """Human-readable summary, one fact a line (the CLI prints these)."""
        out = [
            f"{self.format} import of {self.path} (trace clock origin: {self.origin})",
            f"rows read {self.rows_read}, kept {self.rows_kept}, "
            f"skipped {sum(self.skipped.values())}, filtered {sum(self.filtered.values())}",
        ]
        out += [f"  skipped ({reason}): {n}" for reason, n in sorted(self.skipped.items())]
        out += [f"  filtered ({reason}): {n}" for reason, n in sorted(self.filtered.items())]
        q = ", ".join(f"{k} {v:.0f} s" for k, v in self.observed_duration_quantiles_s.items())
        out += [
            f"window [{self.window_start_s:.0f}, {self.window_end_s:.0f}) s of the trace clock; "
            f"horizon {self.horizon_s:.0f} s (pass --horizon-s {self.horizon_s:.0f} to mig run)",
            f"arrival rate {self.arrival_rate_per_min:.4f} jobs/min; "
            f"inference share {self.inference_share:.3f}",
            f"observed durations: {q or 'n/a'}; duration scale {self.duration_scale:.6g}; "
            f"offered load (sum gpus x dur_7g / horizon) {self.offered_load:.3f}",
        ]
        return out


def _bump(counts: dict[str, int], reason: str, n: int) -> None:
    if n:
        counts[reason] = counts.get(reason, 0) + int(n)


def require_columns(frame: pd.DataFrame, required: tuple[str, ...], path: str) -> None:
    """Raise :class:`InputError` naming the file and the first missing column."""
    for column in required:
        if column not in frame.columns:
            raise InputError(
                f"missing required column; found columns: {', '.join(map(str, frame.columns)) or 'none'}",
                path=path,
                column=column,
            )


def read_raw_csv(path: str, required: tuple[str, ...]) -> pd.DataFrame:
    """Read every column as text (so bad values are counted, not silently coerced) and check the header."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=True)
    except pd.errors.EmptyDataError:
        raise InputError("the file is empty (no header)", path=path) from None
    except pd.errors.ParserError as exc:
        raise InputError(f"not a readable CSV file: {' '.join(str(exc).split())}", path=path) from None
    except UnicodeDecodeError:
        raise InputError("not a text CSV file", path=path) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    require_columns(frame, required, path)
    return frame


def _window_select(
    parsed: ParsedTrace, options: ImportOptions, filtered: dict[str, int]
) -> tuple[pd.DataFrame, float, float]:
    frame = parsed.frame
    if options.min_duration_s is not None:
        keep = frame["duration_s"] >= options.min_duration_s
        _bump(filtered, "below_min_duration", int((~keep).sum()))
        frame = frame[keep]
    if options.max_duration_s is not None:
        keep = frame["duration_s"] <= options.max_duration_s
        _bump(filtered, "above_max_duration", int((~keep).sum()))
        frame = frame[keep]
    if frame.empty:
        raise InputError("no usable rows left before windowing (see the skip counts)", path=parsed.path)
    start, end = options.window(float(frame["time_s"].min()), float(frame["time_s"].max()))
    inside = (frame["time_s"] >= start) & (frame["time_s"] < end)
    _bump(filtered, "outside_window", int((~inside).sum()))
    frame = frame[inside].copy()
    if frame.empty:
        raise InputError(
            f"no job arrives in the window [{start:.0f}, {end:.0f}) s of the trace", path=parsed.path
        )
    frame["arrival_s"] = frame["time_s"] - start
    frame = frame.sort_values(["arrival_s", "row"], kind="stable")
    return frame, start, end


def _scale_rate(
    frame: pd.DataFrame,
    options: ImportOptions,
    window_s: float,
    rng: np.random.Generator,
    filtered: dict[str, int],
) -> tuple[pd.DataFrame, float]:
    """Apply the target rate; return the frame and the horizon (window length after stretching)."""
    target = options.target_rate_per_min
    if target is None:
        return frame, window_s
    natural = len(frame) / (window_s / SECONDS_PER_MINUTE)
    if options.rate_method == "stretch":
        factor = natural / target
        frame = frame.assign(arrival_s=frame["arrival_s"] * factor)
        return frame, window_s * factor
    wanted = target * window_s / SECONDS_PER_MINUTE
    if not math.isfinite(wanted) or round(wanted) > len(frame):  # a huge rate overflows to inf
        raise ConfigError(
            f"target rate {target} jobs/min is above the trace's {natural:.4f} jobs/min in this window; "
            "thinning can only lower a rate (use rate method 'stretch')"
        )
    keep_n = round(wanted)
    if keep_n < 1:
        raise ConfigError(f"target rate {target} jobs/min keeps no job of a {window_s:.0f} s window")
    chosen = np.sort(rng.choice(len(frame), size=keep_n, replace=False))
    _bump(filtered, "thinned", len(frame) - keep_n)
    return frame.iloc[chosen], window_s


def _assign_curves(
    kinds: list[JobKind], options: ImportOptions, rng: np.random.Generator
) -> list[ScalingCurve]:
    if options.curves is None:
        linear = linear_curve()
        return [linear] * len(kinds)
    by_kind: dict[str, list[ScalingCurve]] = {}
    for curve in options.curves:
        kind = _curve_kind(curve)
        if kind is not None:
            by_kind.setdefault(kind, []).append(curve)
    all_curves = list(options.curves)
    draws = rng.random(len(kinds))
    chosen = []
    for kind, u in zip(kinds, draws, strict=True):
        pool = by_kind.get(kind.value) or all_curves
        chosen.append(pool[min(int(u * len(pool)), len(pool) - 1)])
    return chosen


def _curve_kind(curve: ScalingCurve) -> str | None:
    """Measured curve names start with ``<source>:<model>:<kind>:`` (see ``workload.measured``)."""
    parts = curve.name.split(":")
    return parts[2] if len(parts) >= 3 and parts[2] in ("inference", "training") else None


def _classify(
    frame: pd.DataFrame, parsed: ParsedTrace, options: ImportOptions, rng: np.random.Generator
) -> list[JobKind]:
    rule = options.class_rule or parsed.default_class_rule
    if rule == "share":
        assert options.inference_share is not None
        draws = rng.random(len(frame))
        return [JobKind.INFERENCE if u < options.inference_share else JobKind.TRAINING for u in draws]
    if rule == "duration":
        return [
            JobKind.INFERENCE if d <= options.inference_max_s else JobKind.TRAINING
            for d in frame["duration_s"]
        ]
    hints = frame["kind_hint"].tolist()
    if not any(h in ("inference", "training") for h in hints):
        raise ConfigError(
            f"the {parsed.format} trace has no job class; use the 'duration' or 'share' class rule"
        )
    # Rows without a class of their own take the duration rule.
    return [
        JobKind(h)
        if h in ("inference", "training")
        else JobKind.INFERENCE
        if d <= options.inference_max_s
        else JobKind.TRAINING
        for h, d in zip(hints, frame["duration_s"], strict=True)
    ]


def _checked_times(
    parsed: ParsedTrace,
    row: int,
    observed_s: float,
    base_1g_s: float,
    scale: float,
    curve: ScalingCurve,
    arrival_s: float,
    slack: float,
) -> tuple[tuple[float, float, float, float, float, float], float]:
    """The job's durations and deadline, or an InputError naming the row when they leave float64's range."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        dur_1g_s = float(base_1g_s * scale)
    if math.isfinite(dur_1g_s) and dur_1g_s > 0:
        durations = durations_from_base(dur_1g_s, curve)
        deadline_s = arrival_s + slack * durations[4]
        if all(math.isfinite(d) and d > 0 for d in durations) and math.isfinite(deadline_s):
            return durations, deadline_s
    raise InputError(
        f"run time {observed_s:g} s x duration scale {scale:g} gives durations or a deadline outside the "
        "range of float64 (not finite, or 0)",
        path=parsed.path,
        row=int(row),
    )


def build_jobs(parsed: ParsedTrace, options: ImportOptions) -> tuple[list[Job], ImportReport]:
    """Window, rate-scale, classify and time a parsed trace (see the module docstring for the rules)."""
    filtered = dict(parsed.filtered)
    thin_rng, class_rng, curve_rng, slack_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(options.seed).spawn(4)
    )
    frame, start, end = _window_select(parsed, options, filtered)
    frame, horizon_s = _scale_rate(frame, options, end - start, thin_rng, filtered)
    kinds = _classify(frame, parsed, options, class_rng)
    curves = _assign_curves(kinds, options, curve_rng)
    if "scaling_hint" in frame.columns:  # a row's own scaling family wins over the drawn curve
        curves = [
            FAMILY_CURVES[Scaling(h)] if h else c for c, h in zip(curves, frame["scaling_hint"], strict=True)
        ]
    gpus = (
        frame["gpus"].to_numpy(dtype=np.int64)
        if "gpus" in frame.columns
        else np.ones(len(frame), dtype=np.int64)
    )
    offsets = (
        frame["deadline_offset_s"].to_numpy(dtype=float)
        if "deadline_offset_s" in frame.columns
        else np.full(len(frame), np.nan)
    )

    observed = frame["duration_s"].to_numpy(dtype=float)
    g_obs = frame["observed_g"].to_numpy(dtype=int)
    s_obs = np.array([c.speedups[COMPUTE_SIZES.index(int(g))] for c, g in zip(curves, g_obs, strict=True)])
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        base_1g = observed * s_obs
        dur_7g_unscaled = base_1g / np.array([c.speedups[-1] for c in curves])
        scale = options.duration_scale
        if options.target_load is not None:  # a job of g GPUs offers g times its run time
            scale = options.target_load * horizon_s / float((dur_7g_unscaled * gpus).sum())
    slack = slack_rng.uniform(options.deadline_slack[0], options.deadline_slack[1], size=len(frame))

    rows = frame["row"].to_numpy(dtype=np.int64)
    jobs: list[Job] = []
    for i, (job_id, arrival) in enumerate(zip(frame["job_id"], frame["arrival_s"], strict=True)):
        arrival_s = float(arrival)
        durations, deadline_s = _checked_times(
            parsed, int(rows[i]), observed[i], base_1g[i], scale, curves[i], arrival_s, float(slack[i])
        )
        if not math.isnan(offsets[i]):
            deadline_s = arrival_s + float(offsets[i])
        jobs.append(
            Job(
                job_id=str(job_id),
                arrival_s=arrival_s,
                deadline_s=deadline_s,
                kind=kinds[i],
                scaling=curves[i].kind,
                durations_s=durations[:-1],
                dur_full_s=durations[-1],
                gpus=int(gpus[i]),
            )
        )
    report = ImportReport(
        path=parsed.path,
        format=parsed.format,
        rows_read=parsed.rows_read,
        rows_kept=len(jobs),
        skipped=dict(parsed.skipped),
        filtered=filtered,
        origin=parsed.origin,
        window_start_s=start,
        window_end_s=end,
        horizon_s=horizon_s,
        arrival_rate_per_min=len(jobs) / (horizon_s / SECONDS_PER_MINUTE),
        duration_scale=scale,
        offered_load=float(sum(j.duration_for_size(7) * j.gpus for j in jobs)) / horizon_s,
        inference_share=sum(k == JobKind.INFERENCE for k in kinds) / len(kinds),
        observed_duration_quantiles_s={
            f"p{int(q * 100)}": float(np.quantile(observed, q)) for q in (0.1, 0.5, 0.9, 0.99)
        },
    )
    if not all(math.isfinite(v) and v > 0 for v in (horizon_s, report.arrival_rate_per_min)) or not (
        math.isfinite(report.offered_load)
    ):
        raise ConfigError(
            f"the options stretch the window to {horizon_s:g} s (arrival rate "
            f"{report.arrival_rate_per_min:g} jobs/min, offered load {report.offered_load:g}): not finite"
        )
    counted = report.rows_kept + sum(report.skipped.values()) + sum(report.filtered.values())
    if counted != report.rows_read:  # an accounting bug must never pass silently
        raise AssertionError(f"import accounting: {counted} rows counted, {report.rows_read} read")
    return jobs, report
