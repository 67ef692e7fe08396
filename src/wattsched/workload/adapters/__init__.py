"""Trace adapters: job logs and public GPU-cluster job traces → wattsched traces (``wattsched schema trace``).

Every format implements one small interface, a parser ``(path, options) -> ParsedTrace`` registered in
:data:`ADAPTERS`: it reads the file's rows into jobs' trace time, observed run time, the slice that run time
was observed on, and what else the format knows (GPUs at once, deadline, class, scaling family), counting
rows it leaves out by reason. :func:`import_trace` parses and builds the jobs with one shared pipeline
(``common.build_jobs``: windowing, rate and duration scaling, class, deadline) and an :class:`ImportReport`.
Formats: ``csv`` (your own job log, ``csvlog.py``), ``sacct`` (a Slurm job log,
:mod:`wattsched.slurm.sacct`), ``philly``, ``alibaba-2023``. Each adapter module documents its column
mapping; ``common.py`` documents the shared rules.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from wattsched.registry import Registry
from wattsched.workload.adapters.alibaba2023 import parse_alibaba2023
from wattsched.workload.adapters.common import ImportOptions, ImportReport, ParsedTrace, build_jobs
from wattsched.workload.adapters.csvlog import parse_csv_log
from wattsched.workload.adapters.philly import parse_philly
from wattsched.workload.job import Job

__all__ = ["ADAPTERS", "ImportOptions", "ImportReport", "ParsedTrace", "TraceParser", "import_trace"]

TraceParser = Callable[[str, ImportOptions], ParsedTrace]


def _sacct() -> TraceParser:
    from wattsched.slurm.sacct import parse_sacct  # imports this package's common module: load it late

    return parse_sacct


#: Trace formats by name: each factory returns the format's parser.
ADAPTERS: Registry[TraceParser] = Registry("trace format")
ADAPTERS.register("csv")(lambda: parse_csv_log)
ADAPTERS.register("sacct")(_sacct)
ADAPTERS.register("philly")(lambda: parse_philly)
ADAPTERS.register("alibaba-2023")(lambda: parse_alibaba2023)


def import_trace(
    trace_format: str, path: str | Path, options: ImportOptions | None = None
) -> tuple[list[Job], ImportReport]:
    """Parse ``path`` as ``trace_format`` and turn it into jobs (see ``common.build_jobs``)."""
    options = options or ImportOptions()
    parser = ADAPTERS.make(trace_format)
    parsed = parser(str(path), options)
    jobs, report = build_jobs(parsed, options)
    if parsed.finish is not None:
        jobs, report = parsed.finish(jobs, report)
    return jobs, report
