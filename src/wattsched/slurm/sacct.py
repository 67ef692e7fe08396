"""A Slurm job log (``sacct --parsable2``) as a wattsched trace, and the cluster it ran on.

Make the log with, for example::

    sacct --parsable2 --allocations --starttime 2024-03-01 --endtime 2024-03-02 \\
        --format=JobID,User,Partition,Submit,Start,End,Elapsed,Timelimit,State,AllocTRES,Comment,AdminComment,NodeList

The file is ``|``-separated with a header line of field names (``--parsable``, with a ``|`` ending every line,
works too). Fields, in any order:

* required: ``JobID``, ``Submit``, ``Start``, ``End``, ``State``, ``AllocTRES``;
* optional: ``Elapsed`` (the run time; without it End − Start), ``Timelimit`` (the default work of an
  annotation), ``Comment`` (the job's ``wattsched:`` annotation, :mod:`wattsched.slurm.annotations`),
  ``AdminComment`` (where the Slurm controller wrote a job's measured energy, ``wattsched_energy_j=<J>``:
  :attr:`SacctRow.energy_j`, :attr:`SacctImport.energies_j`), ``NodeList`` (for the cluster); any other field
  is ignored. From Slurm 25.11 on the controller also sets the job's ``energy`` TRES, which ``AllocTRES``
  shows (``energy=<J>``): a job's energy is that one where it is there (and not 0), else its AdminComment's.

Sacct does not escape ``|`` inside a comment: a row with more fields than the header is read with the surplus
joined back into ``Comment`` (when the log has that field).

Times (``2024-03-01T12:00:00``) carry no zone: sacct prints the local time of the machine it ran on, so give
that zone as ``timezone`` (default UTC). ``Unknown`` and ``None`` mean no time. Durations: ``[D-]HH:MM:SS``,
``MM:SS``, ``D-HH[:MM]``, or minutes, with optional fractional seconds; ``UNLIMITED`` and
``Partition_Limit`` mean no limit.

Rows → jobs (the rest is the shared pipeline of :mod:`wattsched.workload.adapters.common`: windowing, rate
and duration scaling, class, deadline):

* ``job_id`` ← ``JobID``; ``arrival_s`` ← ``Submit``, in seconds since midnight (in ``timezone``) of the
  first kept submission's day (day 0), minus the window start;
* observed run time ← ``Elapsed`` (else End − Start), on the slice the job held: ``AllocTRES``'s
  ``gres/gpu:<type>=1`` with a MIG profile in the type (``a100_3g.20gb`` → 3g: the digit before
  ``g.<n>gb``), else a whole GPU (``gres/gpu=1``, ``gres/gpu:a100=1``), taken as 7g;
* class by the ``duration`` rule (observed run ≤ 600 s → inference), deadline by P1's rule, unless the
  comment's annotation says otherwise: an explicit ``kind`` is the class; an explicit ``work`` is the run time
  on the whole GPU (``dur_full_s``, times the duration scale); an explicit ``scaling`` is the job's family,
  with the curve the Slurm controller assumes for it (:data:`wattsched.slurm.jobs.CURVES`); an explicit
  ``deadline`` keeps its distance from the submission (``deadline_s = arrival_s + deadline − Submit``).
  Duration filters and ``target_load`` act on the observed run times.

Left out, counted by reason. Filtered (valid rows a rule leaves out): ``job_step`` (``123.batch``,
``123.0``, ``123.extern``), ``not_completed`` (a ``State`` not in ``states``, by default only
``COMPLETED``), ``never_started`` (no ``Start``), ``no_gpu``, ``multi_gpu`` (more than one GPU or slice:
left out by default; ``multi_gpu="fold"`` serialises their slice-seconds onto one whole GPU, and
``multi_gpu="keep"`` keeps the run time and the GPU count as the job's ``gpus``, on slices of the GRES
type), ``zero_run_time``. Skipped (malformed):
``bad_field_count``, ``bad_job_id`` (empty), ``duplicate_id``, ``bad_alloc_tres``, ``bad_gpu_type`` (a MIG
profile of 5 or 6 compute slices), ``bad_time``, ``bad_elapsed``, ``bad_time_limit``,
``negative_run_time``, ``bad_annotation``.
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from pathlib import Path

import numpy as np
import pandas as pd

from wattsched.cluster.nodes import NodeImport
from wattsched.cluster.spec import ClusterSpec, ServerSpec
from wattsched.errors import ConfigError, InputError, did_you_mean
from wattsched.hardware.catalogue import DEFAULT_GPU
from wattsched.slurm.annotations import KEYS, Annotation, AnnotationError, parse_annotation
from wattsched.slurm.jobs import CURVES
from wattsched.workload.adapters.common import (
    RAW_COLUMNS,
    ImportOptions,
    ImportReport,
    ParsedTrace,
    build_jobs,
)
from wattsched.workload.job import P1_SIZES as COMPUTE_SIZES
from wattsched.workload.job import Job
from wattsched.workload.scaling import durations_from_base

__all__ = [
    "COMPLETED_STATES",
    "JOB_STATES",
    "REQUIRED_FIELDS",
    "SacctImport",
    "SacctRow",
    "import_sacct",
    "infer_cluster",
    "parse_sacct",
    "read_sacct",
    "slurm_duration_s",
]

LOG = logging.getLogger(__name__)

REQUIRED_FIELDS = ("JobID", "Submit", "Start", "End", "State", "AllocTRES")
#: States kept by default: jobs that ran to their end.
COMPLETED_STATES: frozenset[str] = frozenset({"COMPLETED"})
#: Job states sacct reports (sacct(1), JOB STATE CODES); ``states`` must be among them.
JOB_STATES: tuple[str, ...] = (
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PENDING",
    "PREEMPTED",
    "RUNNING",
    "REQUEUED",
    "RESIZING",
    "REVOKED",
    "SUSPENDED",
    "TIMEOUT",
)
#: Compute slices of a whole GPU (every catalogue GPU has 7).
WHOLE_GPU = 7
_NO_TIME = frozenset({"", "unknown", "none"})
_NO_LIMIT = frozenset({"", "unlimited", "partition_limit", "none", "invalid"})
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
_GPU_TRES = re.compile(r"^gres/gpu(?::(?P<type>[^=]+))?$")
_MIG_TYPE = re.compile(r"(?<![0-9])(?P<compute>[0-9])g\.[0-9]+gb", re.IGNORECASE)
#: The Slurm controller's energy in an AdminComment (wattsched.slurm.accounting.energy_comment).
_ENERGY = re.compile(r"(?:^|[\s,;])wattsched_energy_j=(?P<joules>[0-9]+(?:\.[0-9]+)?)(?=$|[\s,;])")
_CLOCK = re.compile(r"^(?:(?P<days>[0-9]+)-)?(?P<clock>[0-9]+(?::[0-9]+){0,2}(?:\.[0-9]+)?)$")


@dataclass(frozen=True)
class SacctRow:
    """What a kept row adds to its job: times on the epoch clock, where it ran and its annotation."""

    submit_s: float
    start_s: float
    end_s: float
    #: ``NodeList`` as given (``""`` when the log has none).
    node: str
    #: GRES type of the GPU (``""`` untyped).
    gpu_type: str
    #: Compute slices the job held (7: a whole GPU).
    compute: int
    #: Observed run time (s) and the slice size it was observed on (a folded multi-GPU job: 7).
    run_s: float
    observed_g: int
    #: The comment's annotation; ``None`` when the comment has none (every field would be a default).
    annotation: Annotation | None
    #: GPUs the job held at once.
    gpus: int = 1
    #: The energy the Slurm controller measured for the job (its energy TRES, else its AdminComment's
    #: ``wattsched_energy_j``), J; ``None`` when the log has neither.
    energy_j: float | None = None


@dataclass(frozen=True)
class SacctImport:
    """The jobs of a sacct log, the import report, and each kept job's row (by ``job_id``)."""

    jobs: list[Job]
    report: ImportReport
    rows: dict[str, SacctRow]

    @property
    def annotated(self) -> int:
        """Jobs whose comment carried an annotation."""
        return sum(self.rows[job.job_id].annotation is not None for job in self.jobs)

    @property
    def energies_j(self) -> dict[str, float]:
        """The measured energy (J) of each kept job whose AdminComment has the controller's, by job id."""
        found = {job.job_id: self.rows[job.job_id].energy_j for job in self.jobs}
        return {job_id: energy for job_id, energy in found.items() if energy is not None}


def slurm_duration_s(text: str) -> float | None:
    """Seconds of a Slurm duration (module docstring); ``None`` for no limit; ``ValueError`` otherwise."""
    value = text.strip()
    if value.lower() in _NO_LIMIT:
        return None
    match = _CLOCK.match(value)
    if match is None:
        raise ValueError(f"not a Slurm duration: {value!r}")
    parts = [float(p) for p in match.group("clock").split(":")]
    if match.group("days") is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = (*parts, 0.0, 0.0)[:3]
        return int(match.group("days")) * 86_400.0 + hours * 3_600.0 + minutes * 60.0 + seconds
    if len(parts) == 1:  # minutes
        return parts[0] * 60.0
    if len(parts) == 2:  # MM:SS
        return parts[0] * 60.0 + parts[1]
    return parts[0] * 3_600.0 + parts[1] * 60.0 + parts[2]


def _epoch(text: str, timezone: tzinfo) -> float | None:
    """Epoch seconds of a sacct time; ``None`` for no time; ``ValueError`` when malformed."""
    value = text.strip()
    if value.lower() in _NO_TIME:
        return None
    return datetime.strptime(value, _TIME_FORMAT).replace(tzinfo=timezone).timestamp()


def _gpus(tres: str) -> tuple[int, str, int]:
    """(GPUs, GRES type, compute slices held) of an ``AllocTRES`` value; ``ValueError`` when malformed."""
    total: int | None = None
    typed: dict[str, int] = {}
    for item in tres.split(","):
        name, _, count = item.strip().partition("=")
        match = _GPU_TRES.match(name.strip())
        if match is None:
            continue
        number = int(count.strip())  # ValueError on a bad count
        if number < 0:
            raise ValueError(f"negative GPU count in {item!r}")
        if match.group("type") is None:
            total = number
        else:
            typed[match.group("type")] = typed.get(match.group("type"), 0) + number
    gpus = total if total is not None else sum(typed.values())
    compute = 0
    for gres_type, number in typed.items():
        compute += number * _compute_of(gres_type)
    if not typed:
        compute = gpus * WHOLE_GPU
    return gpus, "+".join(sorted(typed)), compute


def _energy_tres(tres: str) -> float | None:
    """The ``energy=<J>`` of an ``AllocTRES`` value, ``None`` when it has none (or a bad count)."""
    for item in tres.split(","):
        name, _, count = item.partition("=")
        if name.strip() == "energy":
            try:
                return float(count)
            except ValueError:
                return None
    return None


def _compute_of(gres_type: str) -> int:
    mig = _MIG_TYPE.search(gres_type)
    if mig is None:
        return WHOLE_GPU
    compute = int(mig.group("compute"))
    if compute not in COMPUTE_SIZES:
        raise LookupError(f"MIG profile of {compute} compute slices")
    return compute


def _lines(path: str) -> tuple[list[str], list[list[str]]]:
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a sacct log", path=path) from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise InputError("the file is empty (no header)", path=path)
    header = [name.strip() for name in lines[0].split("|")]
    trailing = header[-1] == ""  # --parsable ends every line with a '|'
    if trailing:
        header = header[:-1]
    missing = [name for name in REQUIRED_FIELDS if name not in header]
    if missing:
        raise InputError(
            f"missing field {missing[0]}; a sacct log needs {', '.join(REQUIRED_FIELDS)} "
            f"(found: {', '.join(header) or 'none'})",
            path=path,
            column=missing[0],
        )
    rows = []
    for line in lines[1:]:
        fields = line.split("|")
        if trailing and fields and fields[-1] == "":
            fields = fields[:-1]
        rows.append(fields)
    return header, rows


def _fit(fields: list[str], header: list[str]) -> list[str] | None:
    """The fields of a row, a surplus joined back into ``Comment``; ``None`` when they cannot fit."""
    surplus = len(fields) - len(header)
    if surplus == 0:
        return fields
    if surplus < 0 or "Comment" not in header:
        return None
    at = header.index("Comment")
    return [*fields[:at], "|".join(fields[at : at + surplus + 1]), *fields[at + surplus + 1 :]]


def read_sacct(
    path: str | Path,
    options: ImportOptions | None = None,
    *,
    states: frozenset[str] = COMPLETED_STATES,
    timezone: tzinfo = UTC,
) -> tuple[ParsedTrace, dict[str, SacctRow]]:
    """Parse a sacct log (module docstring) into the shared pipeline's rows, and each kept row's details."""
    where = str(path)
    options = options or ImportOptions(multi_gpu="skip")
    for state in sorted(states):
        if state not in JOB_STATES:
            raise ConfigError(
                f"unknown job state '{state}'{did_you_mean(state, JOB_STATES)}; valid: "
                f"{', '.join(JOB_STATES)}"
            )
    if not states:
        raise ConfigError("states: give at least one job state to keep")
    header, lines = _lines(where)
    counts: dict[str, dict[str, int]] = {"skipped": defaultdict(int), "filtered": defaultdict(int)}
    kept: list[tuple[int, str, SacctRow]] = []
    seen: set[str] = set()
    for number, fields in enumerate(lines, start=1):
        group, reason, row = _row(fields, header, seen, options, states, timezone)
        if row is None:
            counts[group][reason] += 1
        else:
            kept.append((number, reason, row))
    skipped, filtered = dict(counts["skipped"]), dict(counts["filtered"])
    if not kept:
        raise InputError(f"no usable rows (skipped: {skipped}; filtered: {filtered})", path=where)
    origin = datetime.fromtimestamp(min(r[2].submit_s for r in kept), timezone)
    midnight = origin.replace(hour=0, minute=0, second=0, microsecond=0)
    origin_s = midnight.timestamp()
    frame = pd.DataFrame(
        {
            "row": np.array([r[0] for r in kept], dtype=np.int64),
            "job_id": [r[1] for r in kept],
            "time_s": np.array([r[2].submit_s - origin_s for r in kept], dtype=float),
            "duration_s": np.array([r[2].run_s for r in kept], dtype=float),
            "observed_g": np.array([r[2].observed_g for r in kept], dtype=int),
            "kind_hint": "",
        },
        columns=list(RAW_COLUMNS),
    )
    if options.multi_gpu == "keep":
        frame["gpus"] = np.array([r[2].gpus for r in kept], dtype=np.int64)
    rows = {r[1]: r[2] for r in kept}
    parsed = ParsedTrace(
        path=where,
        format="sacct",
        rows_read=len(lines),
        frame=frame,
        skipped=skipped,
        filtered=filtered,
        default_class_rule="duration",
        origin=f"{midnight.isoformat()} (midnight of the first submission's day, day 0)",
        finish=lambda jobs, report: _with_annotations(jobs, report, rows),
    )
    return parsed, rows


def _row(
    fields: list[str],
    header: list[str],
    seen: set[str],
    options: ImportOptions,
    states: frozenset[str],
    timezone: tzinfo,
) -> tuple[str, str, SacctRow | None]:
    """``(group, reason, None)`` for a row left out, else ``("", job_id, its details)``."""
    fitted = _fit(fields, header)
    if fitted is None:
        return "skipped", "bad_field_count", None
    cell = dict(zip(header, fitted, strict=True))
    job_id = cell["JobID"].strip()
    if "." in job_id:
        return "filtered", "job_step", None
    if not job_id:
        return "skipped", "bad_job_id", None
    if job_id in seen:
        return "skipped", "duplicate_id", None
    seen.add(job_id)
    state = (cell["State"].split() or [""])[0].upper()
    if state not in states:
        return "filtered", "not_completed", None
    try:
        gpus, gpu_type, compute = _gpus(cell["AllocTRES"])
    except ValueError:
        return "skipped", "bad_alloc_tres", None
    except LookupError:
        return "skipped", "bad_gpu_type", None
    if gpus == 0:
        return "filtered", "no_gpu", None
    if gpus > 1 and options.multi_gpu == "skip":
        return "filtered", "multi_gpu", None
    try:
        submit, start, end = (_epoch(cell[name], timezone) for name in ("Submit", "Start", "End"))
    except ValueError:
        return "skipped", "bad_time", None
    if start is None:
        return "filtered", "never_started", None
    if submit is None or end is None:
        return "skipped", "bad_time", None
    run_s = end - start
    try:
        elapsed = slurm_duration_s(cell["Elapsed"]) if "Elapsed" in cell else None
    except ValueError:
        return "skipped", "bad_elapsed", None
    if elapsed is not None:
        run_s = elapsed
    if run_s < 0:
        return "skipped", "negative_run_time", None
    if run_s == 0:
        return "filtered", "zero_run_time", None
    observed_g = _compute_of(gpu_type) if gpus == 1 else WHOLE_GPU
    if gpus > 1 and options.multi_gpu == "keep":  # a gang: its run time, on slices of the GRES type
        observed_g = _compute_of(gpu_type)
    elif gpus > 1:  # fold: the slice-seconds of all its GPUs serialised onto one whole GPU
        run_s = run_s * compute / WHOLE_GPU
    try:
        limit = slurm_duration_s(cell["Timelimit"]) if "Timelimit" in cell else None
    except ValueError:
        return "skipped", "bad_time_limit", None
    try:
        annotation = parse_annotation(
            cell.get("Comment"), submit_s=submit, time_limit_s=limit, naive_timezone=timezone
        )
    except AnnotationError as exc:
        LOG.debug("sacct job %s: bad annotation: %s", job_id, exc)
        return "skipped", "bad_annotation", None
    node = cell.get("NodeList", "").strip()
    measured = _ENERGY.search(cell.get("AdminComment", ""))
    tres_energy = _energy_tres(cell["AllocTRES"])
    return (
        "",
        job_id,
        SacctRow(
            submit,
            start,
            end,
            "" if node.lower() == "none assigned" else node,
            gpu_type,
            compute,
            run_s,
            observed_g,
            None if annotation.defaulted == frozenset(KEYS) else annotation,
            gpus,
            tres_energy if tres_energy else float(measured.group("joules")) if measured else None,
        ),
    )


def parse_sacct(path: str, options: ImportOptions) -> ParsedTrace:
    """The shared pipeline's rows of a sacct log (a ``TraceParser``; its ``finish`` step applies the
    annotations, as :func:`import_sacct` does)."""
    return read_sacct(path, options)[0]


def import_sacct(
    path: str | Path,
    options: ImportOptions | None = None,
    *,
    states: frozenset[str] = COMPLETED_STATES,
    timezone: tzinfo = UTC,
) -> SacctImport:
    """The jobs of a sacct log with annotations applied (module docstring). ``options`` default: keep every
    row, multi-GPU jobs left out."""
    options = options or ImportOptions(multi_gpu="skip")
    parsed, rows = read_sacct(path, options, states=states, timezone=timezone)
    jobs, report = build_jobs(parsed, options)
    out, report = _with_annotations(jobs, report, rows)
    return SacctImport(out, report, {job.job_id: rows[job.job_id] for job in out})


def _with_annotations(
    jobs: list[Job], report: ImportReport, rows: dict[str, SacctRow]
) -> tuple[list[Job], ImportReport]:
    """The jobs with their annotations' explicit fields, and the report's load and share for them."""
    out = []
    for job in jobs:
        row = rows[job.job_id]
        out.append(job if row.annotation is None else _annotated(job, row, report.duration_scale))
    horizon = report.horizon_s
    report = replace(
        report,
        offered_load=sum(j.duration_for_size(WHOLE_GPU) * j.gpus for j in out) / horizon,
        inference_share=sum(j.kind == "inference" for j in out) / len(out),
    )
    return out, report


def _annotated(job: Job, row: SacctRow, scale: float) -> Job:
    """``job`` with its annotation's explicit fields (module docstring)."""
    annotation = row.annotation
    assert annotation is not None
    explicit = set(KEYS) - annotation.defaulted
    durations: tuple[float, ...] = (*job.durations_s, job.dur_full_s)
    scaling = job.scaling
    if "scaling" in explicit:
        curve = CURVES[annotation.scaling]
        scaling = curve.kind
        durations = durations_from_base(row.run_s * curve.speedup(row.observed_g) * scale, curve)
    if "work" in explicit:  # durations are proportional to the work: rescale them to the given dur_full_s
        factor = annotation.work_s * scale / durations[-1]
        durations = tuple(d * factor for d in durations)
    if "deadline" in explicit:
        deadline_s = job.arrival_s + (annotation.deadline_s - row.submit_s)
    else:  # the shared rule's slack, on the (possibly new) dur_7g
        slack = (job.deadline_s - job.arrival_s) / job.duration_for_size(WHOLE_GPU)
        deadline_s = job.arrival_s + slack * durations[COMPUTE_SIZES.index(WHOLE_GPU)]
    if not all(math.isfinite(d) and d > 0 for d in durations) or not math.isfinite(deadline_s):
        raise InputError(
            f"job {job.job_id}: its annotation gives durations or a deadline that are not finite"
        )
    kind = annotation.kind if "kind" in explicit else job.kind
    return Job(
        job.job_id,
        job.arrival_s,
        deadline_s,
        kind,
        scaling,
        durations[:-1],
        durations[-1],
        job.sizes,
        job.gpus,
    )


def infer_cluster(
    imported: SacctImport, gpu: str = DEFAULT_GPU, gpus_per_server: int | None = None
) -> NodeImport:
    """The servers the log's jobs ran on: one per ``NodeList`` name (``unknown`` when the log has none), in
    order of first use, each with ``gpus_per_server`` GPUs of catalogue entry ``gpu``, or, without it, the
    fewest whole GPUs that held the node's busiest moment: ⌈peak compute slices in use at once / 7⌉ (a lower
    bound: an idle GPU leaves no trace in the log)."""
    if gpus_per_server is not None and gpus_per_server < 1:
        raise ConfigError(f"gpus per server must be >= 1, got {gpus_per_server}")
    events: dict[str, list[tuple[float, int]]] = {}
    types: dict[str, set[str]] = {}
    for job in imported.jobs:
        row = imported.rows[job.job_id]
        node = row.node or "unknown"
        events.setdefault(node, []).extend([(row.start_s, row.compute), (row.end_s, -row.compute)])
        types.setdefault(node, set()).add(row.gpu_type or "gpu")
    servers, models = [], []
    for node, changes in events.items():
        in_use = peak = 0
        for _, change in sorted(changes):  # at equal times a release (negative) comes first
            in_use += change
            peak = max(peak, in_use)
        count = gpus_per_server if gpus_per_server is not None else max(1, math.ceil(peak / WHOLE_GPU))
        servers.append(ServerSpec(gpu, count, node))
        models.append("+".join(sorted(types[node])))
    spec = ClusterSpec(tuple(servers))
    spec.gpu_models()  # an unknown catalogue entry lists the valid ones
    by_model: dict[str, int] = defaultdict(int)
    for server, model in zip(servers, models, strict=True):
        by_model[model] += server.gpus
    mapping = {model: (gpu, "--gpu", count) for model, count in by_model.items()}
    return NodeImport(spec, tuple(models), len(servers), 0, mapping)
