"""Run studies: expand cells, skip the stored ones, execute the rest, store, summarise, report."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from wattsched._progress import Progress
from wattsched.errors import ConfigError
from wattsched.experiments.executors import EXECUTORS, Executor
from wattsched.experiments.report import write_outputs
from wattsched.experiments.store import StudyStore, cell_fingerprint, package_version
from wattsched.experiments.study import STUDIES, Scale, Study

__all__ = ["ReproduceResult", "StudyRun", "make_executor", "reproduce", "run_study"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StudyRun:
    """The outcome of one study: its rows (ordered by cell) and how many cells ran now vs were stored."""

    name: str
    rows: pd.DataFrame
    cells: int
    executed: int
    skipped: int
    wall_s: float


@dataclass(frozen=True)
class ReproduceResult:
    out_dir: Path
    runs: tuple[StudyRun, ...]
    summary: dict[str, Any]


def run_study(
    study: Study,
    scale: Scale,
    out_dir: str | Path,
    executor: Executor,
    *,
    flush_every_s: float = 10.0,
    flush_every_cells: int | None = None,
    progress: bool | None = None,
    store_dir: str | Path | None = None,
) -> StudyRun:
    """Run the cells of ``study`` not yet stored under ``out_dir/raw`` (or ``store_dir``) and return all its
    rows.

    Finished cells are written in batches (every ``flush_every_s`` seconds or ``flush_every_cells`` cells)
    and whatever finished is flushed when a cell fails or the run is interrupted, so a re-run resumes.
    ``progress`` on stderr: ``None`` a bar on a terminal and a plain line every 5 s elsewhere (a log file),
    ``True`` a bar, ``False`` nothing.
    """
    started = time.monotonic()
    cells = list(study.cells(scale))
    version = package_version()
    fingerprints = {cell.key: cell_fingerprint(cell, version) for cell in cells}
    if len(fingerprints) != len(cells):
        raise ConfigError(f"study {study.name}: cell keys are not unique")
    store = StudyStore(Path(store_dir) if store_dir is not None else Path(out_dir) / "raw", study.name, scale)
    done = store.done(fingerprints)
    todo = [cell for cell in cells if cell.key not in done]
    log.info("%s: %d cells, %d stored, %d to run", study.name, len(cells), len(done), len(todo))
    # progress None: a bar on a terminal, a plain line every few seconds elsewhere; False: nothing.
    bar = None
    if progress is not False:
        bar = Progress(study.name, len(cells), "cell", done=len(done), bar=progress)
    pending: list[tuple[str, str, list[dict[str, Any]]]] = []
    last_flush = time.monotonic()
    try:
        for index, rows in executor.run(study.run_cell, todo):
            key = todo[index].key
            pending.append((key, fingerprints[key], list(rows)))
            if bar is not None:
                bar.advance()
            due = flush_every_cells is not None and len(pending) >= flush_every_cells
            if due or time.monotonic() - last_flush >= flush_every_s:
                store.append(pending)
                pending, last_flush = [], time.monotonic()
    finally:
        store.append(pending)  # keep what finished, even on failure or Ctrl-C
        if bar is not None:
            bar.close()
    rows = store.finalize(fingerprints)
    return StudyRun(study.name, rows, len(cells), len(todo), len(done), time.monotonic() - started)


def make_executor(name: str, workers: int | None = None, ray_address: str | None = None) -> Executor:
    if ray_address is not None and name != "ray":
        raise ConfigError("--ray-address needs --executor ray")
    kwargs: dict[str, object] = {"workers": workers}
    if name == "ray":
        kwargs["address"] = ray_address
    return EXECUTORS.make(name, **kwargs)


def _make_study(name: str, options: Mapping[str, Any]) -> Study:
    try:
        return STUDIES.make(name, **options)
    except TypeError as exc:
        if options:
            raise ConfigError(f"study '{name}' does not accept options {sorted(options)}: {exc}") from None
        raise


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
    section_order: Sequence[str] = (),
    on_start: Callable[[list[str]], None] | None = None,
) -> ReproduceResult:
    """Run the studies registered in :data:`STUDIES` (or ``only`` those) and write report.md (the sections
    named in ``section_order`` first), figures/, raw/, summary.json and index.html (the interactive page of
    :mod:`wattsched.viz.html`).

    Studies register themselves when their module is imported; this runner imports none. ``on_start`` is
    called with the study names once every option is checked and the output folder exists, before any work.
    """
    if scale not in ("quick", "paper"):
        raise ConfigError(f"unknown scale '{scale}'; valid: paper, quick")
    if not STUDIES.available():
        raise ConfigError("no study is registered: import the modules that register them in STUDIES first")
    names = list(only) if only else STUDIES.available()
    for name in names:
        if name not in STUDIES:
            raise ConfigError(f"unknown study '{name}'; valid names: {', '.join(STUDIES.available())}")
    options = dict(study_options or {})
    for name in options:
        if name not in STUDIES:
            raise ConfigError(
                f"options given for unknown study '{name}'; valid: {', '.join(STUDIES.available())}"
            )
    studies = [_make_study(name, options.get(name, {})) for name in names]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runner = make_executor(executor, workers, ray_address)
    if on_start is not None:
        on_start(names)
    runs = []
    try:
        for study in studies:
            runs.append(run_study(study, scale, out, runner, progress=progress, flush_every_s=flush_every_s))
    finally:
        runner.close()
    summary = write_outputs(
        out,
        scale,
        list(zip(studies, runs, strict=True)),
        executor=runner.name,
        workers=runner.workers,
        section_order=section_order,
    )
    # Deferred: plotly and markdown are only needed once the results are in.
    from wattsched.viz.html import write_html_report

    write_html_report(out)
    return ReproduceResult(out, tuple(runs), summary)
