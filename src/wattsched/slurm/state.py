"""The controller's state: one SQLite file (write-ahead log), the only thing it keeps between runs.

Tables:

* ``jobs``: one row per job of the managed partition the controller has seen — its annotation, where and
  when it ran, its phase in the controller (``booting``: held, waiting for its node to be turned on;
  ``queued``: held, waiting for a slice; ``released``: given a
  slice type and released; ``running``; ``signalled``: sent the checkpoint signal; ``done``; ``rejected``:
  held for a malformed annotation; ``renewed``: replaced by a copy, ``renewed_as``, that goes on in its
  place), its energy and preemptions, and the GRES its Slurm record was given (``gres``).
* ``actions``: the journal. Every action on Slurm is written as ``pending`` *before* it is sent and marked
  ``done`` once Slurm accepted it, in one transaction each. After a crash the pending ones are reconciled with
  what Slurm says (done already, or sent again) — so no job is started twice and no finished action repeated.
* ``decisions``: what the controller decided, for ``wattsched slurm status`` (the last few hundred).
* ``readings``: each GPU's last energy-counter reading and the jobs busy since, so that a restart goes on
  charging energy where it stopped.
* ``power``: every call of ``wattsched slurm suspend|resume`` (Slurm's SuspendProgram / ResumeProgram): the
  node, the action, the command run, its status (``pending`` while it runs, then ``done``, ``failed`` or
  ``recorded`` when no command is configured) and its last output line.
* ``repartitions``: every live repartition of a GPU (docs/slurm.md, "Dynamic MIG"): node, GPU, the
  configuration it leaves and the one it makes (ids and ``PROFILE@START`` layouts), its phase (``drain``,
  ``wait``, ``apply``, ``gres``, ``resume``; ``done``, ``rolled_back`` or ``failed`` once over), when it
  started, the seconds spent in each phase, the jobs it waited for and those it requeued, the tries of the MIG
  change and of the reload command, and the last error. The phase is written before its work is done, so
  a restart resumes it.
* ``meta``: the time origin of the GPU models (seconds since the epoch), and whether Slurm keeps accounting
  (``accounting``: ``slurmdbd`` or ``none``, as the controller last found).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from wattsched.errors import InputError

__all__ = ["ACTIVE", "ON_SLICE", "OPEN_PHASES", "Action", "JobRow", "Reading", "Repartition", "StateStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id INTEGER PRIMARY KEY, user TEXT, name TEXT, phase TEXT NOT NULL, slurm_state TEXT,
    submit_s REAL, deadline_s REAL, kind TEXT, scaling TEXT, work_s REAL, preemptible INTEGER,
    node TEXT, gpu INTEGER, slice_index INTEGER, slice TEXT, start_s REAL, end_s REAL,
    tardiness_s REAL, energy_mj INTEGER NOT NULL DEFAULT 0, preemptions INTEGER NOT NULL DEFAULT 0,
    remaining REAL NOT NULL DEFAULT 1.0, run_start_s REAL, signalled_s REAL, error TEXT, comment TEXT,
    gres TEXT, renewed_as INTEGER, gpus INTEGER NOT NULL DEFAULT 1, members TEXT
);
CREATE TABLE IF NOT EXISTS actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time_s REAL NOT NULL, job_id INTEGER NOT NULL, kind TEXT NOT NULL,
    args TEXT NOT NULL, status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time_s REAL NOT NULL, text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS readings (
    node TEXT NOT NULL, gpu INTEGER NOT NULL, time_s REAL NOT NULL, counter_mj INTEGER NOT NULL,
    busy TEXT NOT NULL, idle_mj INTEGER NOT NULL, first_mj INTEGER NOT NULL, PRIMARY KEY (node, gpu)
);
CREATE TABLE IF NOT EXISTS power (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time_s REAL NOT NULL, node TEXT NOT NULL, action TEXT NOT NULL,
    command TEXT NOT NULL, status TEXT NOT NULL, detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS repartitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, node TEXT NOT NULL, gpu INTEGER NOT NULL,
    from_config TEXT NOT NULL, to_config TEXT NOT NULL, from_layout TEXT NOT NULL, to_layout TEXT NOT NULL,
    phase TEXT NOT NULL, started_s REAL NOT NULL, phase_started_s REAL NOT NULL, finished_s REAL,
    phase_s TEXT NOT NULL DEFAULT '{}', waited TEXT NOT NULL DEFAULT '[]',
    requeued TEXT NOT NULL DEFAULT '[]', attempts INTEGER NOT NULL DEFAULT 0,
    reload_attempts INTEGER NOT NULL DEFAULT 0, detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_KEEP_DECISIONS = 500
#: Phases of a job the controller still manages, and those in which it holds a slice.
ACTIVE = ("booting", "queued", "released", "running", "signalled")
ON_SLICE = ("running", "signalled")
#: Phases of a repartition still under way, in order.
OPEN_PHASES = ("drain", "wait", "apply", "gres", "resume")


@dataclass
class JobRow:
    """A job as the controller keeps it (times in seconds since the epoch; ``slice`` as ``profile@start``)."""

    job_id: int
    phase: str
    user: str | None = None
    name: str | None = None
    slurm_state: str | None = None
    submit_s: float | None = None
    deadline_s: float | None = None
    kind: str | None = None
    scaling: str | None = None
    work_s: float | None = None
    preemptible: int = 0
    node: str | None = None
    gpu: int | None = None
    slice_index: int | None = None
    slice: str | None = None
    start_s: float | None = None
    end_s: float | None = None
    tardiness_s: float | None = None
    energy_mj: int = 0
    preemptions: int = 0
    #: Fraction of the job's work left at ``run_start_s`` (its latest start; 1.0 before it ever ran).
    remaining: float = 1.0
    run_start_s: float | None = None
    signalled_s: float | None = None
    error: str | None = None
    #: The job's comment when it was read (a rejected job is read again once its comment changes).
    comment: str | None = None
    #: The GRES the controller gave the job's Slurm record (``gpu:TYPE:1``; ``None``: none yet). Slurm keeps
    #: every type a job was given, so a job that must go to another type is renewed (``renewed_as``).
    gres: str | None = None
    #: A ``renewed`` job: the id of the copy that replaced it.
    renewed_as: int | None = None
    #: The GPUs the job asks for; a gang (> 1) keeps its reserved GPUs of ``node`` and the slice on each in
    #: ``members`` (:func:`wattsched.slurm.gangs.format_members`; ``gpu`` and ``slice_index`` are the first).
    gpus: int = 1
    members: str | None = None


_COLUMNS = tuple(f.name for f in fields(JobRow))


@dataclass(frozen=True)
class Reading:
    """A GPU's last energy-counter reading: when, the counter (mJ), the jobs busy from then on as ``(job id,
    compute slices, kind)``, the idle remainder charged to no job so far and the first reading's counter
    (so that the jobs' energy plus ``idle_mj`` is the counter's rise since ``first_mj``)."""

    time_s: float
    counter_mj: int
    busy: list[tuple[int, int, str]]
    idle_mj: int
    first_mj: int


@dataclass
class Repartition:
    """A live repartition of one GPU as the state file keeps it (see the module docstring); configurations
    as text (``3``, ``no-mig``), layouts as ``PROFILE@START,...``; ``phase_s`` the seconds of every phase
    done."""

    id: int
    node: str
    gpu: int
    from_config: str
    to_config: str
    from_layout: str
    to_layout: str
    phase: str
    started_s: float
    phase_started_s: float
    finished_s: float | None = None
    phase_s: dict[str, float] = field(default_factory=dict)
    waited: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    attempts: int = 0
    reload_attempts: int = 0
    detail: str = ""

    @property
    def open(self) -> bool:
        return self.phase in OPEN_PHASES

    @property
    def in_force(self) -> str:
        """The configuration the GPU's jobs refer to: the new one once the repartition is done (or failed
        after the MIG change), else the old one (while under way, rolled back, or failed before it)."""
        # A failure in the gres phase came after the MIG change; one in apply (its roll back refused) did
        # not finish it: the closing apply phase is timed too, so only a timed gres phase tells them apart.
        changed = self.phase == "done" or (self.phase == "failed" and "gres" in self.phase_s)
        return self.to_config if changed else self.from_config

    def as_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Action:
    id: int
    time_s: float
    job_id: int
    kind: str
    args: dict[str, Any]
    status: str


class StateStore:
    """The SQLite state file (see the module docstring). ``path=":memory:"`` keeps nothing (dry runs)."""

    def __init__(self, path: str | Path) -> None:
        where = str(path)
        if where != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(where, isolation_level=None, timeout=10.0)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL with a write-ahead log: a commit survives the controller's own crash (a SIGKILL);
            # only an OS crash may lose the last commits, which the reconciliation with Slurm then redoes.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._add_missing_columns()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"cannot open the controller's state file: {exc}", path=where) from None
        self.path = where

    def close(self) -> None:
        self._db.close()

    def _add_missing_columns(self) -> None:
        """A state file written before a column of ``jobs`` existed gets it (empty)."""
        have = {row["name"] for row in self._db.execute("PRAGMA table_info(jobs)")}
        columns = (("gres", "TEXT"), ("renewed_as", "INTEGER"), ("gpus", "INTEGER NOT NULL DEFAULT 1"))
        for name, kind in (*columns, ("members", "TEXT")):
            if name not in have:
                self._db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ------------------------------------------------------------------ meta
    def origin_s(self, now_s: float | None = None, *, midnight: bool = False) -> float:
        """The GPU models' time origin, fixed at the first start: ``now_s`` (or the time then) in whole
        seconds since the epoch, or, with ``midnight``, the local midnight before it (then a model's time
        modulo a day is the time of day)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'origin_s'").fetchone()
        if row is not None:
            return float(row["value"])
        origin = float(int(time.time() if now_s is None else now_s))
        if midnight:
            day = datetime.fromtimestamp(origin).replace(hour=0, minute=0, second=0, microsecond=0)
            origin = float(int(day.timestamp()))
        self._db.execute("INSERT INTO meta (key, value) VALUES ('origin_s', ?)", (repr(origin),))
        return origin

    def meta(self, key: str) -> str | None:
        """A value of the ``meta`` table (``None`` when not set)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------ jobs
    def job(self, job_id: int) -> JobRow | None:
        row = self._db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return JobRow(**dict(row)) if row is not None else None

    def jobs(self, phases: Sequence[str] | None = None) -> list[JobRow]:
        if phases is None:
            rows = self._db.execute("SELECT * FROM jobs ORDER BY job_id").fetchall()
        else:
            marks = ",".join("?" * len(phases))
            rows = self._db.execute(
                f"SELECT * FROM jobs WHERE phase IN ({marks}) ORDER BY job_id", tuple(phases)
            ).fetchall()
        return [JobRow(**dict(row)) for row in rows]

    def put_job(self, job: JobRow) -> None:
        marks = ",".join("?" * len(_COLUMNS))
        self._db.execute(
            f"INSERT OR REPLACE INTO jobs ({','.join(_COLUMNS)}) VALUES ({marks})",
            tuple(getattr(job, name) for name in _COLUMNS),
        )

    # ------------------------------------------------------------------ the journal
    def journal(self, job_id: int, kind: str, args: dict[str, Any], now_s: float) -> int:
        """Write a pending action (before it is sent); returns its id."""
        cursor = self._db.execute(
            "INSERT INTO actions (time_s, job_id, kind, args, status) VALUES (?, ?, ?, ?, 'pending')",
            (now_s, job_id, kind, json.dumps(args, sort_keys=True)),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def finish_action(self, action_id: int, status: str = "done") -> None:
        self._db.execute("UPDATE actions SET status = ? WHERE id = ?", (status, action_id))

    def pending_actions(self) -> list[Action]:
        rows = self._db.execute("SELECT * FROM actions WHERE status = 'pending' ORDER BY id").fetchall()
        return [self._action(row) for row in rows]

    def actions(self, job_id: int | None = None) -> list[Action]:
        if job_id is None:
            rows = self._db.execute("SELECT * FROM actions ORDER BY id").fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM actions WHERE job_id = ? ORDER BY id", (job_id,)
            ).fetchall()
        return [self._action(row) for row in rows]

    def action_counts(self, kind: str) -> dict[str, int]:
        """How many actions of ``kind`` the journal has, by status."""
        rows = self._db.execute(
            "SELECT status, COUNT(*) AS n FROM actions WHERE kind = ? GROUP BY status", (kind,)
        ).fetchall()
        return {str(row["status"]): int(row["n"]) for row in rows}

    @staticmethod
    def _action(row: sqlite3.Row) -> Action:
        return Action(
            row["id"], row["time_s"], row["job_id"], row["kind"], json.loads(row["args"]), row["status"]
        )

    # ------------------------------------------------------------------ node power states
    def add_power_action(self, now_s: float, node: str, action: str, command: list[str]) -> int:
        """Journal a suspend or resume of ``node`` as ``pending`` (before its command runs); its id."""
        cursor = self._db.execute(
            "INSERT INTO power (time_s, node, action, command, status) VALUES (?, ?, ?, ?, 'pending')",
            (now_s, node, action, json.dumps(command)),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def finish_power_action(self, entry: int, status: str, detail: str = "") -> None:
        self._db.execute("UPDATE power SET status = ?, detail = ? WHERE id = ?", (status, detail, entry))

    def power_actions(self, limit: int = 100) -> list[dict[str, Any]]:
        """The last ``limit`` suspend and resume calls, oldest first."""
        rows = self._db.execute("SELECT * FROM power ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [dict(row, command=json.loads(row["command"])) for row in rows][::-1]

    # ------------------------------------------------------------------ repartitions
    def add_repartition(
        self, node: str, gpu: int, configs: tuple[str, str], layouts: tuple[str, str], now_s: float
    ) -> Repartition:
        """Record a repartition of GPU ``gpu`` of ``node`` from ``configs[0]`` to ``configs[1]``, in its
        first phase (drain)."""
        cursor = self._db.execute(
            "INSERT INTO repartitions (node, gpu, from_config, to_config, from_layout, to_layout, phase, "
            "started_s, phase_started_s) VALUES (?, ?, ?, ?, ?, ?, 'drain', ?, ?)",
            (node, gpu, *configs, *layouts, now_s, now_s),
        )
        assert cursor.lastrowid is not None
        found = self.repartition(cursor.lastrowid)
        assert found is not None
        return found

    def put_repartition(self, entry: Repartition) -> None:
        self._db.execute(
            "UPDATE repartitions SET phase = ?, phase_started_s = ?, finished_s = ?, phase_s = ?, "
            "waited = ?, requeued = ?, attempts = ?, reload_attempts = ?, detail = ? WHERE id = ?",
            (
                entry.phase,
                entry.phase_started_s,
                entry.finished_s,
                json.dumps(entry.phase_s),
                json.dumps(entry.waited),
                json.dumps(entry.requeued),
                entry.attempts,
                entry.reload_attempts,
                entry.detail,
                entry.id,
            ),
        )

    def repartition(self, entry: int) -> Repartition | None:
        row = self._db.execute("SELECT * FROM repartitions WHERE id = ?", (entry,)).fetchone()
        return None if row is None else self._repartition(row)

    def repartitions(self, limit: int = 100) -> list[Repartition]:
        """The last ``limit`` repartitions, oldest first."""
        rows = self._db.execute("SELECT * FROM repartitions ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [self._repartition(row) for row in rows][::-1]

    def last_repartition(self, node: str, gpu: int) -> Repartition | None:
        """The latest repartition of one GPU (open or over)."""
        row = self._db.execute(
            "SELECT * FROM repartitions WHERE node = ? AND gpu = ? ORDER BY id DESC LIMIT 1", (node, gpu)
        ).fetchone()
        return None if row is None else self._repartition(row)

    @staticmethod
    def _repartition(row: sqlite3.Row) -> Repartition:
        values = dict(row)
        for key in ("phase_s", "waited", "requeued"):
            values[key] = json.loads(values[key])
        return Repartition(**values)

    # ------------------------------------------------------------------ decisions and readings
    def log_decision(self, now_s: float, text: str) -> None:
        self._db.execute("INSERT INTO decisions (time_s, text) VALUES (?, ?)", (now_s, text))
        self._db.execute(
            "DELETE FROM decisions WHERE id <= (SELECT MAX(id) FROM decisions) - ?", (_KEEP_DECISIONS,)
        )

    def decisions(self, limit: int = 20) -> list[tuple[float, str]]:
        rows = self._db.execute("SELECT time_s, text FROM decisions ORDER BY id DESC LIMIT ?", (limit,))
        return [(row["time_s"], row["text"]) for row in rows.fetchall()][::-1]

    def reading(self, node: str, gpu: int) -> Reading | None:
        """The last counter reading of a GPU (``None`` before the first)."""
        row = self._db.execute("SELECT * FROM readings WHERE node = ? AND gpu = ?", (node, gpu)).fetchone()
        if row is None:
            return None
        busy = [(int(a), int(b), str(c)) for a, b, c in json.loads(row["busy"])]
        return Reading(row["time_s"], row["counter_mj"], busy, row["idle_mj"], row["first_mj"])

    def put_reading(self, node: str, gpu: int, reading: Reading) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO readings (node, gpu, time_s, counter_mj, busy, idle_mj, first_mj) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                node,
                gpu,
                reading.time_s,
                reading.counter_mj,
                json.dumps([list(b) for b in reading.busy]),
                reading.idle_mj,
                reading.first_mj,
            ),
        )
