"""Run a sweep (docs/howto/sweep.md): cells on the local or Ray executor through the result store, one tidy
table.

Output under ``DIR``:

* ``runs.parquet`` — one row per run: ``gpu, configuration, policy, seed, energy_j, avg_tardiness_s,
  late_jobs, preemptions, et`` first, then ``partitioner, workload, rate_multiplier, hours, part, jobs,
  unfinished_jobs, max_tardiness_s, repartitions, end_s`` (and the DVFS columns when the sweep has a DVFS
  part) and ``cell`` (the run's key). Rows follow the sweep file's order.
* ``runs.csv`` — the same table, on request (an earlier one is removed otherwise, so it never goes stale).
* ``sweep.json`` — the ET pool(s), the validated spec, the package version and the code digest.
* ``cache/`` — the result store (Parquet parts and a manifest): a re-run reuses every stored row whose
  fingerprint (cell fields, package version, digest of the package source) matches; a killed sweep resumes.

ET (docs/concepts/et.md): ``a = t̄ / (2·s̄)`` over the sweep's whole pool of MIG runs (energy in J, average
tardiness in minutes) and ``et = (a·x + y) / (a + 1)`` per run. DVFS runs (P2) form their own pool: their
energies are of a whole cluster, so pooling them with single-GPU days would let one part set the other's
scale. A pool without tardiness (DVFS runs that meet every deadline) has ``a = 0``: every ``et`` is then 0
and energy alone tells the runs apart. A run that left jobs unfinished (``unfinished_jobs > 0``; a store
written before the column reads as 0) has no ``et`` and is left out of its pool: its tardiness leaves work
out.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from wattsched.errors import ConfigError
from wattsched.experiments.sweep import SweepSpec
from wattsched.experiments.sweep_cells import DvfsRunCell, MigRunCell, run_sweep_cell
from wattsched.experiments.sweep_expand import expand_sweep
from wattsched.schemas import SWEEP_RUN_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from wattsched.experiments.study import Scale, Study

__all__ = ["ET_DEFINITION", "SWEEP_RUN_COLUMNS", "SweepResult", "run_sweep"]

log = logging.getLogger(__name__)

#: Columns of ``runs.parquet`` after :data:`SWEEP_RUN_COLUMNS` (the ones docs/howto/sweep.md requires).
_MORE_COLUMNS = (
    "partitioner",
    "workload",
    "rate_multiplier",
    "hours",
    "part",
    "jobs",
    "unfinished_jobs",
    "max_tardiness_s",
    "repartitions",
    "end_s",
    "bound_energy_j",
    "gap_to_bound",
)
ET_DEFINITION = (
    "et = (a*x + y)/(a + 1) per run, x = energy_j (J), y = avg_tardiness_s / 60 (min), "
    "a = mean(y)/(2*mean(x)) "
    "over the pool (P1 Sec. IV-A)"
)
RUNS_FILE, CSV_FILE, POOL_FILE, STORE_DIR = "runs.parquet", "runs.csv", "sweep.json", "cache"


@dataclass(frozen=True)
class SweepResult:
    """What a sweep wrote: the tidy runs, the ``sweep.json`` content and how many cells ran vs were reused."""

    out_dir: Path
    runs: pd.DataFrame
    summary: dict[str, Any]
    executed: int
    reused: int
    wall_s: float


class _SweepStudy:
    """The sweep as a study of the experiment engine (cells, a pure module-level cell function)."""

    name = "sweep"

    def __init__(self, cells: list[MigRunCell | DvfsRunCell]) -> None:
        self._cells = cells
        self.run_cell = run_sweep_cell  # a plain function: executors pickle it by name, not with the cells

    def cells(self, scale: Scale) -> list[MigRunCell | DvfsRunCell]:
        del scale
        return self._cells


def run_sweep(
    spec: SweepSpec,
    base: Path,
    out_dir: str | Path,
    *,
    where: str = "<sweep>",
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    csv: bool = False,
    hours: float | None = None,
    confirm: bool = False,
    progress: bool | None = None,
    flush_every_s: float = 10.0,
) -> SweepResult:
    """Run every cell of ``spec`` not yet stored under ``out_dir/cache`` and write the outputs (module doc).

    Every check (the spec's names, the cell limit, ``hours`` > 0, the executor and workers) happens before
    anything is written. ``base`` is the folder relative paths in the spec start at.
    """
    from wattsched.experiments.runner import make_executor, run_study

    if hours is not None and not (0 < hours <= 24 * 365):
        raise ConfigError(f"--hours must be in (0, 8760], got {hours:g}")
    cells = expand_sweep(spec, base, where, hours=hours, confirm=confirm)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    runner = make_executor(executor, workers, ray_address)
    started = time.monotonic()
    try:
        out.mkdir(parents=True, exist_ok=True)
        run = run_study(
            cast("Study", _SweepStudy(cells)),  # runs cells only: the sweep writes its own outputs
            cast("Scale", "sweep"),
            out,
            runner,
            progress=progress,
            store_dir=out / STORE_DIR,
            flush_every_s=flush_every_s,
        )
    finally:
        runner.close()
    runs, pools = tidy_runs(run.rows)
    summary = _summary(spec, where, runs, pools)
    _write(out, runs, summary, csv)
    log.info("sweep: %d runs, %d ran now, %d reused", len(runs), run.executed, run.skipped)
    return SweepResult(out, runs, summary, run.executed, run.skipped, time.monotonic() - started)


def tidy_runs(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
    """The stored rows as ``runs.parquet``: ET per pool (one per part), the required columns first,
    columns that no row fills dropped. Returns the table and each pool's coefficient and means."""
    from wattsched.metrics import et_coefficient, et_values
    from wattsched.units import SECONDS_PER_MINUTE

    runs = rows.reset_index(drop=True).copy()
    runs["et"] = float("nan")
    if "unfinished_jobs" not in runs.columns:  # a store from before the column: its runs ran to the end
        runs["unfinished_jobs"] = 0
    runs["unfinished_jobs"] = runs["unfinished_jobs"].fillna(0).astype(int)
    unfinished = (runs["unfinished_jobs"] > 0).to_numpy()
    if unfinished.any():
        log.warning(
            "sweep: %d run(s) left jobs unfinished: their et is left empty and they are not in the "
            "ET pool (e.g. %s)",
            int(unfinished.sum()),
            runs.loc[unfinished, "cell"].iloc[0],
        )
    pools: dict[str, dict[str, float]] = {}
    for part in dict.fromkeys(runs["part"]):
        mask = (runs["part"] == part).to_numpy() & ~unfinished
        if not mask.any():
            continue
        energy_j = runs.loc[mask, "energy_j"].to_numpy(float)
        tardiness_s = runs.loc[mask, "avg_tardiness_s"].to_numpy(float)
        a = et_coefficient(energy_j, tardiness_s)
        runs.loc[mask, "et"] = et_values(energy_j, tardiness_s, a)
        pools[str(part)] = {
            "runs": int(mask.sum()),
            "a_per_j": a,
            "mean_energy_j": float(energy_j.mean()),
            "mean_avg_tardiness_min": float(tardiness_s.mean() / SECONDS_PER_MINUTE),
            "mean_et": float(runs.loc[mask, "et"].mean()),
        }
    runs = runs.dropna(axis=1, how="all")
    first = [c for c in (*SWEEP_RUN_COLUMNS, *_MORE_COLUMNS) if c in runs.columns]
    rest = [c for c in runs.columns if c not in first and c != "cell"]
    return runs[[*first, *rest, "cell"]], pools


def _summary(spec: SweepSpec, where: str, runs: pd.DataFrame, pools: dict[str, Any]) -> dict[str, Any]:
    from wattsched.experiments.store import code_digest, package_version
    from wattsched.plugins import loaded_plugins, plugin_digests

    extra: dict[str, Any] = {}
    if loaded_plugins():
        digests = plugin_digests()
        extra["plugins"] = [
            {"module": name, "loaded_by": how, "source_digest": digests[name]}
            for name, how in loaded_plugins().items()
        ]
    return {
        "format": 1,
        "file": where,
        "runs": len(runs),
        "et_definition": ET_DEFINITION,
        "et_pool": pools,
        "columns": list(runs.columns),
        "package_version": package_version(),
        "code_digest": code_digest(),
        "spec": spec.model_dump(mode="json", exclude_none=True),
        **extra,
    }


def _write(out: Path, runs: pd.DataFrame, summary: dict[str, Any], csv: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from wattsched.experiments.store import atomic_write_bytes, atomic_write_text

    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(runs, preserve_index=False), sink)
    atomic_write_bytes(out / RUNS_FILE, sink.getvalue().to_pybytes())
    if csv:
        atomic_write_text(out / CSV_FILE, runs.to_csv(index=False))
    elif (out / CSV_FILE).is_file():  # a CSV of an earlier run would no longer match runs.parquet
        (out / CSV_FILE).unlink()
    atomic_write_text(out / POOL_FILE, json.dumps(summary, indent=1, allow_nan=False) + "\n")
