"""The files wattsched reads and writes, documented where the package can print them (``wattsched schema``).

Every table is CSV or Parquet, chosen by the file's suffix (``.csv``; ``.parquet`` or ``.pq``). Times are in
seconds, energy in joules, power in watts. Readers check every cell: a malformed file is one error naming the
file, the 1-based data row and the column (exit status 2 on the command line).

:data:`SCHEMAS` maps a name to its description; :func:`schema_text` returns one. Names: ``trace`` (MIG job
traces), ``tasks`` (DVFS task files), ``settings`` (``dvfs solve`` output), ``jobs`` (``mig run --jobs-out``),
``timeline`` (``mig run --timeline-out``, the run file ``wattsched plot`` reads), ``sweep`` (sweep files and
their output folder).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from wattsched.errors import UnknownNameError

__all__ = ["SCHEMAS", "SWEEP_RUN_COLUMNS", "schema_text"]

#: The columns every row of a sweep's ``runs.parquet`` has, first and in this order (the sweep writes them,
#: ``wattsched plot`` / ``report`` require them).
SWEEP_RUN_COLUMNS: tuple[str, ...] = (
    "gpu",
    "configuration",
    "policy",
    "seed",
    "energy_j",
    "avg_tardiness_s",
    "late_jobs",
    "preemptions",
    "et",
)

TRACE = """\
MIG job trace (read by mig run, mig day, cluster run, sweep; written by mig generate, import, mig import)
CSV or Parquet, one row per job:

  job_id       text, unique
  arrival_s    number >= 0: arrival time, s
  deadline_s   number >= arrival_s: soft deadline (absolute), s
  kind         inference | training
  scaling      linear | sublinear | capped | measured (metadata only)
  dur_1g_s, dur_2g_s, dur_3g_s, dur_4g_s, dur_7g_s
               number > 0: run time alone on a slice of that compute size, s (a GPU's compute sizes;
               every catalogue GPU has 1, 2, 3, 4 and 7)
  dur_full_s   optional, number > 0: run time on the GPU with MIG disabled, s
               (default dur_7g_s / 1.06 for linear jobs, else dur_7g_s)
  gpus         optional, whole number >= 1 (default 1): GPUs the job needs at once, its durations being
               each GPU's run time; cluster run runs such a job on that many whole GPUs of one server,
               started and ended together; mig run, mig day and sweeps refuse a trace with a job above 1
               (written by 'wattsched import' when a job needs more than one GPU)

Nothing else is needed: hand-written traces work. Errors (missing column, a value that is not a finite
number, a duration <= 0, deadline < arrival, a repeated job_id, an empty file, an unknown kind) name the
file, the row and the column.
"""

TASKS = """\
DVFS task file (read by dvfs solve, dvfs run --tasks; written by dvfs generate)
CSV or Parquet, one row per task; P2's model in normalised voltage V and clocks f:
power P = p0 + gamma*f_mem + c*V^2*f_core (W), time T = t0 + d*(delta/f_core + (1 - delta)/f_mem) (s).

  task_id      text
  arrival_s    number >= 0: arrival, s
  deadline_s   number >= arrival_s: deadline (absolute), s
  p0_w         number >= 0: static power, W
  gamma_w      number >= 0: memory-clock power coefficient, W
  c_w          number >= 0: core power coefficient, W
  t0_s         number >= 0: time not scaled by the clocks, s
  d_s          number >= 0: time scaled by the clocks at f = 1, s (t0_s + d_s > 0)
  delta        number in [0, 1]: core-bound share of d_s

Times are at most 1e12 s; every value must be finite. Errors name the file, the row and the column.
"""

SETTINGS = """\
DVFS settings (written by dvfs solve): the task file's columns plus, per task,

  v            normalised voltage chosen
  f_core       normalised core clock
  f_mem        normalised memory clock
  time_s       run time at that setting, s
  power_w      power at that setting, W
  energy_j     energy of the task, J
  feasible     true when time_s <= deadline_s - arrival_s; false: no setting meets the window and the
               fastest one is given
"""

SWEEP_FALLBACK = """\
Sweep file (read by wattsched sweep FILE.toml --out DIR): TOML whose lists are crossed, at least

  gpus = ["a100-40gb", "h200-141gb"]    # catalogue names or catalogue .toml files
  configurations = [3, "no-mig"]        # ids as 'wattsched mig configs --gpu G' lists them
  policies = ["edf-fs", "edf-ss"]
  seeds = [1, 2]
  [workload]
  profile = "alibaba-day"                # or trace = "FILE"
  rate_multiplier = 2.5
  hours = 24

DIR/runs.parquet holds one row per run with at least gpu, configuration, policy, seed, energy_j,
avg_tardiness_s, late_jobs, preemptions and et (ET over the sweep's whole pool, stated in DIR/sweep.json).
"""


def _docstring(module: str) -> Callable[[], str]:
    def text() -> str:
        return str(importlib.import_module(module).__doc__ or "").strip() + "\n"

    return text


def _sweep() -> str:
    try:
        return _docstring("wattsched.experiments.sweep")()
    except ImportError:  # a tree without the sweep command
        return SWEEP_FALLBACK


#: Name -> (one-line summary, the description).
SCHEMAS: dict[str, tuple[str, Callable[[], str]]] = {
    "trace": ("MIG job traces (CSV/Parquet)", lambda: TRACE),
    "tasks": ("DVFS task files (CSV/Parquet)", lambda: TASKS),
    "settings": ("dvfs solve output (CSV/Parquet)", lambda: SETTINGS),
    "jobs": ("mig run --jobs-out: one row per job", _docstring("wattsched.mig.frames")),
    "timeline": ("mig run --timeline-out: the run file plot reads", _docstring("wattsched.viz.timeline")),
    "sweep": ("sweep files (TOML) and their output folder", _sweep),
}


def schema_text(name: str) -> str:
    """The description of file kind ``name`` (one of :data:`SCHEMAS`; an unknown name raises
    :class:`~wattsched.errors.UnknownNameError` listing the valid ones)."""
    if name not in SCHEMAS:
        raise UnknownNameError("schema", name, list(SCHEMAS))
    return SCHEMAS[name][1]()
