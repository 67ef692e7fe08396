"""The papers' reproductions, written as users of the experiment library (:mod:`wattsched.experiments`).

Importing this package registers every study (:data:`~wattsched.experiments.study.STUDIES`: ``table2``,
``table3``, ``dvfs``, ``real-workloads``, ``cluster``), the report sections drawn from the merged summary
(:data:`~wattsched.experiments.study.SUMMARY_SECTIONS`: ``presets``, ``gpus``) and the studies' interactive
views (:data:`~wattsched.experiments.study.STUDY_VIEWS`). :func:`reproduce` runs them and writes the report
with its sections in the papers' order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from wattsched.experiments import runner
from wattsched.experiments.study import Scale
from wattsched.studies import (  # noqa: F401  (imported for their registrations)
    cluster,
    dvfs,
    gpus_section,
    presets_section,
    real_workloads,
    table2,
    table3,
    views,
)

__all__ = ["REPORT_ORDER", "reproduce"]

#: The sections that open ``report.md``, in this order; the other sections follow by name.
REPORT_ORDER: tuple[str, ...] = ("presets", "table2", "table3", "gpus", "dvfs")


def reproduce(
    out_dir: str | Path,
    scale: Scale = "quick",
    *,
    only: Sequence[str] | None = None,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    study_options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool | None = None,
    flush_every_s: float = 10.0,
    on_start: Callable[[list[str]], None] | None = None,
) -> runner.ReproduceResult:
    """Run the papers' studies (or ``only`` those) with :func:`wattsched.experiments.runner.reproduce`: the
    same outputs, report.md's sections in :data:`REPORT_ORDER`."""
    return runner.reproduce(
        out_dir,
        scale,
        only=only,
        executor=executor,
        workers=workers,
        ray_address=ray_address,
        study_options=study_options,
        progress=progress,
        flush_every_s=flush_every_s,
        section_order=REPORT_ORDER,
        on_start=on_start,
    )
