"""Trace adapters: public GPU-cluster job traces → wattsched MIG traces (docs/howto/import-trace.md).

``ADAPTERS.make("philly")`` returns a parser ``(path, options) -> ParsedTrace``; :func:`import_trace` parses
and builds the jobs with an :class:`ImportReport` of rows read / kept / skipped / filtered by reason. Each
adapter module documents its column mapping; ``common.py`` documents windowing, rate scaling, durations,
classes and deadlines.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from wattsched.registry import Registry
from wattsched.workload.adapters.alibaba2023 import parse_alibaba2023
from wattsched.workload.adapters.common import ImportOptions, ImportReport, ParsedTrace, build_jobs
from wattsched.workload.adapters.philly import parse_philly
from wattsched.workload.job import Job

__all__ = ["ADAPTERS", "ImportOptions", "ImportReport", "ParsedTrace", "TraceParser", "import_trace"]

TraceParser = Callable[[str, ImportOptions], ParsedTrace]

#: Trace formats by name: each factory returns the format's parser.
ADAPTERS: Registry[TraceParser] = Registry("trace format")
ADAPTERS.register("philly")(lambda: parse_philly)
ADAPTERS.register("alibaba-2023")(lambda: parse_alibaba2023)


def import_trace(
    trace_format: str, path: str | Path, options: ImportOptions | None = None
) -> tuple[list[Job], ImportReport]:
    """Parse ``path`` as ``trace_format`` and turn it into jobs (see ``common.build_jobs``)."""
    options = options or ImportOptions()
    parser = ADAPTERS.make(trace_format)
    return build_jobs(parser(str(path), options), options)
