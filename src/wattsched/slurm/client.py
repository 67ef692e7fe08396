"""A typed client over Slurm's own commands (``squeue``, ``sinfo``, ``scontrol``, ``scancel``, ``sbatch``).

Every command runs as an argument list (never through a shell) with a timeout, pointed at a cluster by
``SLURM_CONF`` (a parameter, else the environment). Facts of Slurm 22.05.8 this relies on, checked by running
it:

- Only ``squeue`` and ``sinfo`` have ``--json`` (``scontrol --json`` arrived in 23.02), and ``squeue --json``
  ignores ``-j``/``-p``/``-t``: it always lists every job slurmctld holds, so filtering happens here. From
  23.02 on it honours them and lists only pending and running jobs by default: the client asks for
  ``--states=all`` (which 22.05 accepts and ignores), and reads the nodes from ``scontrol show nodes --json``
  where ``sinfo --json`` gives partition/state groups instead of nodes (seen on 24.11).
- A job stays in that list for ``MinJobAge`` seconds after it ends (default 300), with its final state,
  ``end_time`` and ``exit_code``; then slurmctld purges it and neither ``squeue`` nor ``scontrol show job``
  knows it. Without slurmdbd ``sacct`` answers "Slurm accounting storage is disabled"; a cluster that needs a
  lasting record sets ``JobCompType=jobcomp/filetxt`` (the sandbox does). A watcher polling more often than
  ``MinJobAge`` sees every end.
- ``exit_code`` is the raw wait status in 22.05 (``exit 3`` reads 768); 23.02+ gives an object, and numbers
  as ``{"set": true, "infinite": false, "number": N}``, ``job_state`` as a list: both are read.
- Changing the GRES of a pending job *adds* to what it asked before (``Gres=A`` then ``Gres=B`` runs the job
  with A and B). Only an empty ``TresPerNode=`` clears the request, so :meth:`SlurmClient.set_gres` clears
  first, then sets, and pins the node with ``ReqNodeList`` (``NodeList`` only shrinks running jobs).
- ``scancel --signal=SIG`` without a scope reaches only job steps, never the batch script; ``--batch``
  reaches the script's shell, ``--full`` every process of the batch step (the script and its children).
- A job keeps, for its whole life, an entry for every GRES type it was ever given: the empty ``TresPerNode=``
  sets their counts to 0 but does not drop them, and slurmctld restarts keep them. A job asked for type A and
  then B is only started when a device of type A is free too (it gets none of it), and never once the node
  has no type A left (pending, reason ``BadConstraints``: "Requested node configuration is not available") —
  as after a MIG change. Only a new job asks for nothing: :meth:`SlurmClient.renew` replaces a pending job
  by a copy of it (its script and submission environment from slurmctld's ``StateSaveLocation``).
- ``scontrol requeuehold`` puts a running (or just ended) batch job back to PENDING, held, reason
  "job requeued in held state", ``Restarts`` + 1; once released it waits (reason ``BeginTime``) until the
  credential lifetime has passed (``AuthInfo=cred_expire``, 121 s by default) and its script starts again from
  the top with ``SLURM_RESTART_COUNT`` set.
- No job field can carry a free-text reason into ``squeue``'s REASON column from the command line (it shows
  slurmctld's own reason, e.g. ``JobHeldAdmin``); the AdminComment is shown by ``squeue -O admin_comment``.
- With slurmdbd (``AccountingStorageType=accounting_storage/slurmdbd``) an ended job's record lives on in the
  accounting database, and ``sacctmgr modify job where jobid=N set AdminComment=...`` changes it there (also
  once the job has ended, when ``scontrol update`` refuses it); ``sacct`` shows it (docs/slurm.md,
  "Accounting"). Without slurmdbd both commands say so (:class:`NoAccountingError`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Protocol

from wattsched.errors import WattschedError

__all__ = [
    "ORIGINAL_JOB_ID",
    "AccountingRecord",
    "FakeSlurmClient",
    "GresEntry",
    "JobState",
    "NoAccountingError",
    "SignalScope",
    "SlurmApi",
    "SlurmClient",
    "SlurmError",
    "SlurmJob",
    "SlurmNode",
    "energy_tres_args",
    "parse_gres",
    "parse_job",
    "parse_node",
    "release_of",
]

log = logging.getLogger(__name__)

#: The environment variable that gives a renewed job's copy the id of the job it replaces (the first one).
ORIGINAL_JOB_ID = "WATTSCHED_JOB_ID"

#: Which processes of a job :meth:`SlurmClient.signal` reaches: ``full`` every process of the batch step
#: (the script and its children), ``batch`` the batch script's shell only, ``steps`` only ``srun`` steps.
SignalScope = Literal["full", "batch", "steps"]

# Words of sacct and sacctmgr (their last line) on a cluster without slurmdbd (22.05).
_NO_ACCOUNTING = (
    "accounting storage is disabled",
    "not running a supported accounting_storage plugin",
    "Only 'accounting_storage/slurmdbd' is supported",
)
# Words of sacctmgr modify job (its last line) when the database has no record of the job.
_NO_RECORD = ("Nothing modified", "didn't affect anything", "Data has not changed")
# Words in a command's stderr that mean slurmctld did not answer at all.
_NOT_RUNNING = ("Unable to contact slurm controller", "Connection refused", "Socket timed out", "Zero Bytes")


class SlurmError(WattschedError):
    """A Slurm command failed; the message names the command."""


class NoAccountingError(SlurmError):
    """The cluster keeps no accounting database (no slurmdbd): ``sacct`` and ``sacctmgr`` have nothing."""


class JobState(StrEnum):
    """A job's base state as Slurm names it."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    REQUEUED = "REQUEUED"
    RESIZING = "RESIZING"
    REVOKED = "REVOKED"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    UNKNOWN = "UNKNOWN"

    @property
    def finished(self) -> bool:
        """Whether the job has ended (it will not run again unless requeued)."""
        return self not in _ACTIVE


_ACTIVE = frozenset(
    {
        JobState.PENDING,
        JobState.RUNNING,
        JobState.SUSPENDED,
        JobState.COMPLETING,
        JobState.REQUEUED,
        JobState.RESIZING,
        JobState.UNKNOWN,
    }
)


@dataclass(frozen=True)
class GresEntry:
    """One item of a GRES list such as ``gpu:a100_3g.20gb:1(IDX:2)``; ``type`` is ``None`` when untyped."""

    name: str
    type: str | None
    count: int
    indices: tuple[int, ...] = ()

    def __str__(self) -> str:
        return ":".join([self.name, *([self.type] if self.type else []), str(self.count)])


@dataclass(frozen=True)
class SlurmJob:
    """A job as slurmctld reports it. Times are seconds since the epoch, ``None`` when not (yet) known."""

    job_id: int
    name: str
    user: str
    state: JobState
    partition: str
    submit_s: float
    start_s: float | None
    #: When the job ended; ``None`` while it has not (Slurm's projected end of a running job is not kept).
    end_s: float | None
    #: ``None``: no limit (``UNLIMITED``).
    time_limit_s: float | None
    comment: str
    admin_comment: str
    #: Allocated nodes (a hostlist, e.g. ``gpu[01-02]``); ``""`` while pending.
    nodes: str
    #: The nodes it asked for (``ReqNodeList``); ``""`` for any.
    required_nodes: str
    #: Requested GRES per node, e.g. ``gpu:a100_3g.20gb:1``; ``""`` for none.
    gres: str
    #: Allocated GPU device indices (Slurm's order of the node's devices), empty unless running.
    gpu_indices: tuple[int, ...]
    #: The MIG/GPU UUIDs of those indices, where the client knows the node's device order; else empty.
    gpu_uuids: tuple[str, ...]
    held: bool
    #: Slurm's reason (``JobHeldAdmin``, ``Resources``, ``None``...), or its free-text description if any.
    reason: str
    restart_count: int
    priority: int
    #: The script's exit status (0..255), ``None`` while it has not ended.
    exit_code: int | None
    #: The signal that ended the script, 0 for none.
    exit_signal: int = 0


@dataclass(frozen=True)
class SlurmNode:
    """A node as ``sinfo --json`` reports it."""

    name: str
    #: Slurm's state in lower case (``idle``, ``mixed``, ``allocated``, ``down``...).
    state: str
    #: Flags such as ``DRAIN``, ``NOT_RESPONDING``, ``INVALID_REG`` (upper case).
    state_flags: tuple[str, ...]
    gres: tuple[GresEntry, ...]
    gres_used: tuple[GresEntry, ...]
    partitions: tuple[str, ...]
    cpus: int
    alloc_cpus: int
    reason: str

    @property
    def available(self) -> bool:
        """Whether the node accepts jobs (up, not drained or failing)."""
        bad = {"DRAIN", "DRAINED", "DRAINING", "NOT_RESPONDING", "FAIL", "INVALID_REG", "POWERED_DOWN"}
        return self.state in {"idle", "mixed", "allocated"} and not bad.intersection(self.state_flags)


@dataclass(frozen=True)
class AccountingRecord:
    """A job as Slurm's accounting database (slurmdbd) has it: what ``sacct`` shows."""

    job_id: int
    #: The state the database has; ``finished`` once the job's end has reached it.
    state: JobState
    admin_comment: str
    #: Its ``energy`` TRES (J: ``energy=`` in ``AllocTRES``, what ``sacct`` shows as ``ConsumedEnergy``);
    #: ``None`` when the record has none.
    energy_j: int | None = None


class SlurmApi(Protocol):
    """What the controller needs from Slurm: :class:`SlurmClient` and the in-memory fake both provide it."""

    def ping(self) -> bool: ...
    def jobs(self, partition: str | None = None) -> list[SlurmJob]: ...
    def job(self, job_id: int) -> SlurmJob | None: ...
    def nodes(self) -> list[SlurmNode]: ...
    def hold(self, job_id: int) -> None: ...
    def hold_with_reason(self, job_id: int, reason: str) -> None: ...
    def release(self, job_id: int) -> None: ...
    def set_gres(self, job_id: int, gres: str, node: str | None = None) -> None: ...
    def set_admin_comment(self, job_id: int, text: str) -> None: ...
    def signal(self, job_id: int, signal: str = "USR1", scope: SignalScope = "full") -> None: ...
    def requeue_hold(self, job_id: int) -> None: ...
    def renew(self, job_id: int, marker: str) -> int: ...
    def cancel(self, job_id: int) -> None: ...
    def power_up(self, node: str) -> None: ...
    def accounting_enabled(self) -> bool: ...
    def accounting_job(self, job_id: int) -> AccountingRecord | None: ...
    def set_accounting_comment(self, job_id: int, text: str) -> None: ...
    def slurm_release(self) -> str | None: ...
    def set_accounting_energy(self, job_id: int, energy_j: int) -> None: ...


class SlurmClient:
    """Slurm's command-line tools, typed; see the module docstring for the Slurm behaviour behind each call.

    ``slurm_conf``: the cluster's ``slurm.conf`` (default: ``SLURM_CONF`` of the environment, else Slurm's
    own default). ``gpu_uuids``: per node, the UUIDs of its GPU devices in Slurm's index order (the order of
    ``gres.conf``/``fake_gpus.conf``), so that jobs report the UUIDs they got. ``bin_dir``: where the
    commands are, default the ``PATH``.
    """

    def __init__(
        self,
        slurm_conf: str | Path | None = None,
        *,
        timeout_s: float = 30.0,
        gpu_uuids: Mapping[str, Sequence[str]] | None = None,
        bin_dir: str | Path | None = None,
    ) -> None:
        self.slurm_conf = str(slurm_conf) if slurm_conf is not None else os.environ.get("SLURM_CONF")
        self.timeout_s = timeout_s
        self.gpu_uuids = {node: tuple(uuids) for node, uuids in (gpu_uuids or {}).items()}
        self.bin_dir = Path(bin_dir) if bin_dir is not None else None
        self._release: str | None = None  # slurm_release(): "" once asked and none found

    # ------------------------------------------------------------------ running commands
    def run(self, *args: str, environment: Mapping[str, str] | None = None) -> str:
        """Run one Slurm command and return its standard output; :class:`SlurmError` when it fails.
        ``environment``: the command's environment instead of this process's (``SLURM_CONF`` still set)."""
        command = " ".join(args)
        program = str(self.bin_dir / args[0]) if self.bin_dir else args[0]
        env = dict(os.environ if environment is None else environment)
        if self.slurm_conf:
            env["SLURM_CONF"] = self.slurm_conf
        try:
            done = subprocess.run(
                [program, *args[1:]],
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                env=env,
                check=False,
            )
        except FileNotFoundError:
            raise SlurmError(f"slurm command not found: '{args[0]}' (is slurm-client installed?)") from None
        except subprocess.TimeoutExpired:
            raise SlurmError(f"'{command}' timed out after {self.timeout_s:g} s") from None
        if done.returncode != 0:
            lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            detail = lines[-1] if lines else f"exit status {done.returncode}"
            if any(word in (done.stderr or "") for word in _NOT_RUNNING):
                raise SlurmError(f"slurm is not running: '{command}' failed: {detail}")
            raise SlurmError(f"'{command}' failed: {detail}")
        log.debug("ran %s", command)
        return done.stdout

    def _json(self, *args: str) -> dict[str, Any]:
        text = self.run(*args)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SlurmError(f"'{' '.join(args)}' printed no valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise SlurmError(f"'{' '.join(args)}' printed JSON that is not an object")
        return data

    # ------------------------------------------------------------------ reading
    def ping(self) -> bool:
        """Whether slurmctld answers (``scontrol ping``); never raises."""
        try:
            return "is UP" in self.run("scontrol", "ping")
        except SlurmError:
            return False

    def jobs(self, partition: str | None = None) -> list[SlurmJob]:
        """Every job slurmctld holds (pending, running, and ended within ``MinJobAge``), by job id; only
        those of ``partition`` when given."""
        data = self._json("squeue", "--json", "--states=all")
        found = [parse_job(raw, self.gpu_uuids) for raw in data.get("jobs") or []]
        if partition is not None:
            found = [job for job in found if partition in job.partition.split(",")]
        return sorted(found, key=lambda job: job.job_id)

    def job(self, job_id: int) -> SlurmJob | None:
        """One job, ``None`` when slurmctld does not know it (never submitted, or purged after
        ``MinJobAge``)."""
        return next((job for job in self.jobs() if job.job_id == job_id), None)

    def nodes(self) -> list[SlurmNode]:
        """Every node, once each, by name."""
        data = self._json("sinfo", "--json")
        if "nodes" not in data and "sinfo" in data:
            # 23.02 on: sinfo --json lists partition/state groups ("sinfo"), scontrol --json the nodes.
            data = self._json("scontrol", "show", "nodes", "--json")
        seen: dict[str, SlurmNode] = {}
        for raw in data.get("nodes") or []:
            node = parse_node(raw)
            seen.setdefault(node.name, node)
        return [seen[name] for name in sorted(seen)]

    # ------------------------------------------------------------------ changing
    def submit(
        self,
        script: str | Path,
        *,
        partition: str | None = None,
        name: str | None = None,
        comment: str | None = None,
        time_limit_s: float | None = None,
        output: str | Path | None = None,
        workdir: str | Path | None = None,
        extra: Sequence[str] = (),
    ) -> int:
        """``sbatch --parsable`` a script file; returns the job id."""
        args = ["sbatch", "--parsable"]
        for flag, value in (
            ("--partition", partition),
            ("--job-name", name),
            ("--comment", comment),
            ("--output", output),
            ("--chdir", workdir),
        ):
            if value is not None:
                args.append(f"{flag}={value}")
        if time_limit_s is not None:
            args.append(f"--time={max(1, -(-int(time_limit_s) // 60))}")
        return _submitted(self.run(*args, *extra, str(script)))

    def hold(self, job_id: int) -> None:
        """Hold a pending job (priority 0, reason ``JobHeldAdmin``: its user cannot release it)."""
        self.run("scontrol", "hold", str(job_id))

    def hold_with_reason(self, job_id: int, reason: str) -> None:
        """Hold a job and tell its user why: the AdminComment becomes ``wattsched: <reason>``.

        The user sees it with ``squeue -O JobID,State,Reason,admin_comment:60`` (REASON stays
        ``JobHeldAdmin``: Slurm 22.05 has no way to set a job's reason text from outside) and in
        ``scontrol show job ID`` as ``AdminComment=wattsched: <reason>``. The next
        :meth:`set_admin_comment` (e.g. the energy at the end) replaces it.
        """
        self.hold(job_id)
        self.set_admin_comment(job_id, f"wattsched: {' '.join(reason.split())}")

    def release(self, job_id: int) -> None:
        """Let a held job be scheduled."""
        self.run("scontrol", "release", str(job_id))

    def set_gres(self, job_id: int, gres: str, node: str | None = None) -> None:
        """Make a pending job ask for exactly ``gres`` per node (``gpu:a100_3g.20gb:1``; ``""``: none),
        replacing what it asked before, and, with ``node``, run only there."""
        self.run("scontrol", "update", f"jobid={job_id}", "TresPerNode=")
        items = [item.strip() for item in gres.split(",") if item.strip()]
        value = ",".join(item if item.startswith("gres:") else f"gres:{item}" for item in items)
        args = [f"TresPerNode={value}"] if value else []
        if node is not None:
            args.append(f"ReqNodeList={node}")
        if args:
            self.run("scontrol", "update", f"jobid={job_id}", *args)

    def set_admin_comment(self, job_id: int, text: str) -> None:
        """Replace the job's AdminComment (only root or SlurmUser may)."""
        self.run("scontrol", "update", f"jobid={job_id}", f"AdminComment={text}")

    def signal(self, job_id: int, signal: str = "USR1", scope: SignalScope = "full") -> None:
        """Send ``signal`` (``USR1``, ``SIGTERM``, ``10``...) to a running job's processes (see
        :data:`SignalScope`; ``full`` is what reaches a batch script's own ``trap``)."""
        name = signal.upper().removeprefix("SIG")
        args = ["scancel", f"--signal={name}"]
        if scope != "steps":
            args.append(f"--{scope}")
        self.run(*args, str(job_id))

    def requeue_hold(self, job_id: int) -> None:
        """Stop a running batch job and put it back to pending *and held*, so Slurm never restarts it on its
        own; :meth:`release` lets it run again (from its script's top, ``SLURM_RESTART_COUNT`` + 1). The job
        is COMPLETING (``held`` already true) until its processes are gone, then PENDING."""
        self.run("scontrol", "requeuehold", str(job_id))

    def cancel(self, job_id: int) -> None:
        self.run("scancel", str(job_id))

    def power_up(self, node: str) -> None:
        """Ask Slurm to turn a powered-down node on (``scontrol update NodeName=NODE State=POWER_UP``): Slurm
        22.05 shows it ``POWER_UP`` + ``POWERED_DOWN`` at once, then runs its ResumeProgram and shows it
        ``POWERING_UP`` (and ``NOT_RESPONDING``) until its slurmd registers, about a second on the sandbox."""
        self.run("scontrol", "update", f"NodeName={node}", "State=POWER_UP")

    def renew(self, job_id: int, marker: str) -> int:
        """Replace a pending job by a copy that has asked for no GRES yet (see the module docstring: a job
        keeps every GRES type it was given): the same script, arguments (Slurm 22.05 shows them joined by
        spaces: an argument with a space in it is split) and submission environment (read from
        slurmctld's ``StateSaveLocation``: the caller must run where slurmctld keeps its state, as root or
        SlurmUser), user, partition, name, comment, working directory, output files (appended to, so the
        first run's output is kept), time limit, tasks, CPUs, memory, account and QOS; a copy of a job that
        was requeued gets ``SLURM_RESTART_COUNT`` as the original had it, so that it resumes from its
        checkpoint, and every copy gets the first job's id in ``$WATTSCHED_JOB_ID`` (for checkpoints named
        after the job: ``${WATTSCHED_JOB_ID:-$SLURM_JOB_ID}``). The copy is submitted held with the
        AdminComment ``marker``, then the original is cancelled. Returns the copy's id; :class:`SlurmError`
        (the original untouched) when its script or environment cannot be read or the copy is refused."""
        listed = self._json("squeue", "--json", "--states=all").get("jobs") or []
        raw = next((r for r in listed if _job_id(r) == job_id), None)
        if raw is None:
            raise SlurmError(f"cannot renew job {job_id}: slurmctld does not know it")
        if _state(raw.get("job_state")) is not JobState.PENDING:
            raise SlurmError(f"cannot renew job {job_id}: it is not pending")
        script, environment = self._submission(job_id)
        shown = _job_fields(self.run("scontrol", "show", "job", str(job_id)))
        restarts = int(_number(raw.get("restart_cnt")) or 0)
        if restarts:
            environment["SLURM_RESTART_COUNT"] = str(restarts)
        environment.setdefault(ORIGINAL_JOB_ID, str(job_id))  # a copy of a copy keeps the first id
        args = ["sbatch", "--parsable", "--hold", "--open-mode=append"]
        for flag, value in (
            ("--partition", _text(raw.get("partition"))),
            ("--job-name", _text(raw.get("name"))),
            ("--comment", _text(raw.get("comment"))),
            ("--chdir", _text(raw.get("current_working_directory"))),
            ("--output", shown.get("StdOut", "")),
            ("--error", shown.get("StdErr", "")),
            ("--input", shown.get("StdIn", "")),
            ("--account", _text(raw.get("account"))),
            ("--qos", _text(raw.get("qos"))),
        ):
            if value and value != "(null)":
                args.append(f"{flag}={value}")
        for flag, key in (
            ("--time", "time_limit"),
            ("--ntasks", "tasks"),
            ("--nodes", "node_count"),
            ("--cpus-per-task", "cpus_per_task"),
            ("--mem", "memory_per_node"),
            ("--mem-per-cpu", "memory_per_cpu"),
        ):
            number = _number(raw.get(key))
            if number:
                args.append(f"{flag}={int(number)}")
        if os.geteuid() == 0:
            args += [
                f"--uid={int(_number(raw.get('user_id')) or 0)}",
                f"--gid={int(_number(raw.get('group_id')) or 0)}",
            ]
        # The script's arguments: Slurm 22.05 shows the command line joined by spaces only.
        words = _text(raw.get("command")).split()
        path, *arguments = words if words and words[0] != "(null)" else [""]
        with tempfile.TemporaryDirectory(prefix="wattsched-renew-") as scratch:
            if not _same_text(path, script):  # edited or gone since: the copy runs the script Slurm kept
                path = os.path.join(scratch, os.path.basename(path) or "script")
                Path(path).write_text(script, encoding="utf-8", errors="surrogateescape")
            try:
                copy = _submitted(self.run(*args, path, *arguments, environment=environment))
            except SlurmError as exc:
                raise SlurmError(f"cannot renew job {job_id}: {exc}") from None
        try:
            self.set_admin_comment(copy, marker)
            self.cancel(job_id)
        except SlurmError:
            self.cancel(copy)
            raise
        return copy

    # ------------------------------------------------------------------ accounting (slurmdbd)
    def accounting_enabled(self) -> bool:
        """Whether the cluster keeps an accounting database: ``AccountingStorageType`` of ``scontrol show
        config`` is ``accounting_storage/slurmdbd``."""
        kind = _config_value(self.run("scontrol", "show", "config"), "AccountingStorageType")
        return kind == "accounting_storage/slurmdbd"

    def accounting_job(self, job_id: int) -> AccountingRecord | None:
        """The job's record in the accounting database (``sacct -X -j ID``), ``None`` while the database has
        none; :class:`NoAccountingError` without slurmdbd, :class:`SlurmError` when slurmdbd does not
        answer."""
        out = self._accounting(
            "sacct",
            "--noheader",
            "--parsable2",
            "--allocations",
            f"--jobs={job_id}",
            "--format=JobID,State,AllocTRES,AdminComment",
        )
        for line in out.splitlines():
            ident, _, rest = line.partition("|")
            state, _, rest = rest.partition("|")
            tres, _, comment = rest.partition("|")  # the comment last: sacct does not escape a | in it
            if ident.strip() == str(job_id):
                words = state.split()
                return AccountingRecord(
                    job_id, _state(words[0] if words else ""), comment, _energy_tres(tres)
                )
        return None

    def set_accounting_comment(self, job_id: int, text: str) -> None:
        """Replace the AdminComment of the job's record in the accounting database (``sacctmgr -i modify job
        where jobid=ID set AdminComment=TEXT``; root, SlurmUser or an operator may). Works on ended jobs too;
        :class:`SlurmError` when the database has no record of the job (yet) or slurmdbd does not answer,
        :class:`NoAccountingError` without slurmdbd."""
        if "\n" in text:
            raise SlurmError(f"an AdminComment is one line; got {text!r}")
        self._modify_job(job_id, f"AdminComment={text}")

    def slurm_release(self) -> str | None:
        """The release (``major.minor``) of the cluster's Slurm commands (``sacctmgr -V``), asked once;
        ``None`` when the answer names none."""
        if self._release is None:
            self._release = release_of(self.run("sacctmgr", "-V")) or ""
        return self._release or None

    def set_accounting_energy(self, job_id: int, energy_j: int) -> None:
        """Set the ``energy`` TRES of an ended job's record in the accounting database
        (:func:`energy_tres_args`; Slurm 25.11 and later): ``sacct`` then shows it in the job's
        ``AllocTRES`` and ``ConsumedEnergy``. Errors as :meth:`set_accounting_comment`'s."""
        self._modify_job(job_id, energy_tres_args(job_id, energy_j)[-1])

    def _modify_job(self, job_id: int, setting: str) -> None:
        """``sacctmgr -i modify job where jobid=ID set SETTING``."""
        args = ["sacctmgr", "--immediate", "modify", "job", "where", f"jobid={job_id}", "set"]
        try:
            out = self._accounting(*args, setting)
        except NoAccountingError:
            raise
        except SlurmError as exc:
            # 22.05: exit status 1, "Nothing modified" on stdout, "Request didn't affect anything" on stderr;
            # 26.05: "Data has not changed since time specified".
            if any(words in str(exc) for words in _NO_RECORD):
                raise SlurmError(
                    f"job {job_id} has no record in the accounting database (yet): {exc}"
                ) from None
            raise
        if "Modified jobs" not in out:
            raise SlurmError(f"sacctmgr did not say it modified job {job_id}: {' '.join(out.split())}")

    def _accounting(self, *args: str) -> str:
        """Run ``sacct`` or ``sacctmgr``; :class:`NoAccountingError` when they say the cluster has no
        accounting storage."""
        try:
            out = self.run(*args)
        except SlurmError as exc:
            if any(words in str(exc) for words in _NO_ACCOUNTING):
                raise NoAccountingError(f"no accounting database: {exc}") from None
            raise
        if any(words in out for words in _NO_ACCOUNTING):
            raise NoAccountingError(
                f"no accounting database: '{' '.join(args)}' said: {' '.join(out.split())}"
            )
        return out

    def _submission(self, job_id: int) -> tuple[str, dict[str, str]]:
        """A job's batch script and submission environment, as slurmctld keeps them in its
        ``StateSaveLocation`` (``hash.N/job.ID/script`` and ``environment``: a 32-bit count, then that many
        NUL-terminated ``NAME=value`` strings)."""
        where = (
            Path(_config_value(self.run("scontrol", "show", "config"), "StateSaveLocation"))
            / f"hash.{job_id % 10}"
            / f"job.{job_id}"
        )
        try:
            script = (where / "script").read_text(encoding="utf-8", errors="surrogateescape")
            data = (where / "environment").read_bytes()
        except OSError as exc:
            raise SlurmError(
                f"cannot renew job {job_id}: its script and environment are not readable here ({exc})"
            ) from None
        count = int.from_bytes(data[:4], sys.byteorder) if len(data) >= 4 else 0
        items = [item.decode("utf-8", "surrogateescape") for item in data[4:].split(b"\0")[:count]]
        environment = dict(item.split("=", 1) for item in items if "=" in item)
        return script.rstrip("\0"), environment


# ---------------------------------------------------------------------- parsing Slurm's JSON
# One GRES item: name[:type][:count] then an optional "(IDX:0-1,3)" or "(S:0)"; items are comma separated,
# and so are the indices inside the parentheses.
_GRES_ITEM = re.compile(r"\s*([^,(]+)(?:\(([^)]*)\))?\s*(?:,|$)")


def parse_gres(text: str | None) -> tuple[GresEntry, ...]:
    """A GRES list as Slurm prints it (``gpu:a100_4g.20gb:1(S:0),gpu:a100_2g.10gb:0(IDX:N/A)``, the
    ``gres:``/``gres/`` prefixes of ``tres_per_node``, ``(null)``) as entries; ``count`` 1 when unstated."""
    if not text or text in {"(null)", "N/A"}:
        return ()
    entries = []
    for match in _GRES_ITEM.finditer(text):
        spec, extra = match.group(1).strip(), match.group(2) or ""
        if not spec:
            continue
        spec = spec.removeprefix("gres:").removeprefix("gres/").replace("=", ":")
        parts = spec.split(":")
        count = 1
        if len(parts) > 1 and parts[-1].isdigit():
            count = int(parts.pop())
        indices: tuple[int, ...] = ()
        if extra.startswith("IDX:"):
            indices = _index_list(extra[4:])
        entries.append(GresEntry(parts[0], ":".join(parts[1:]) or None, count, indices))
    return tuple(entries)


def _index_list(text: str) -> tuple[int, ...]:
    """``0-1,3`` as ``(0, 1, 3)``; ``N/A`` or empty as ``()``."""
    found: list[int] = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        if low.isdigit():
            found.extend(range(int(low), int(high if high.isdigit() else low) + 1))
    return tuple(found)


def _number(value: Any) -> float | None:
    """A number of Slurm's JSON: plain (22.05), or ``{"set", "infinite", "number"}`` (23.02+); ``None`` when
    unset or infinite."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _same_text(path: str, text: str) -> bool:
    try:
        return bool(path) and Path(path).read_text(encoding="utf-8", errors="surrogateescape") == text
    except OSError:
        return False


def _job_id(raw: Mapping[str, Any]) -> int:
    return int(_number(raw.get("job_id")) or 0)


def _job_fields(text: str) -> dict[str, str]:
    """The ``Key=value`` fields of ``scontrol show job`` (one per word; the last of a key wins)."""
    return {key: value for key, equal, value in (word.partition("=") for word in text.split()) if equal}


def release_of(text: str) -> str | None:
    """``major.minor`` of a ``slurmctld -V`` / ``sacctmgr -V`` line (``slurm-wlm 24.11.5``), else ``None``."""
    found = re.search(r"(\d+)\.(\d+)(?:\.\d+)?", text)
    return f"{int(found.group(1)):02d}.{int(found.group(2)):02d}" if found else None


def energy_tres_args(job_id: int, energy_j: int) -> list[str]:
    """The command that sets an ended job's ``energy`` TRES in the accounting database (Slurm 25.11 and
    later): ``sacctmgr --immediate modify job where jobid=ID set TRES=energy=J``."""
    if energy_j < 0:
        raise SlurmError(f"a job's energy TRES is a count of joules, not {energy_j} (job {job_id})")
    return [
        "sacctmgr",
        "--immediate",
        "modify",
        "job",
        "where",
        f"jobid={job_id}",
        "set",
        f"TRES=energy={energy_j}",
    ]


def _energy_tres(tres: str) -> int | None:
    """The ``energy=`` count of an ``AllocTRES`` value (``billing=1,cpu=1,energy=1234,node=1``)."""
    for item in tres.split(","):
        name, _, count = item.partition("=")
        if name.strip() == "energy" and count.strip().isdigit():
            return int(count)
    return None


def _config_value(text: str, key: str) -> str:
    """The value of ``key`` in ``scontrol show config`` (``Key = value`` lines; ``""`` when absent)."""
    for line in text.splitlines():
        name, equal, value = line.partition(" = ")
        if equal and name.strip() == key:
            return value.strip()
    return ""


def _submitted(out: str) -> int:
    """The job id ``sbatch --parsable`` printed (``ID`` or ``ID;CLUSTER``)."""
    try:
        return int(out.strip().split(";")[0])
    except ValueError:
        raise SlurmError(f"'sbatch --parsable' printed '{out.strip()}', not a job id") from None


def _time_s(value: Any) -> float | None:
    """An epoch time; Slurm writes 0 for "not yet"."""
    number = _number(value)
    return number if number else None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _state(value: Any) -> JobState:
    """``"RUNNING"`` (22.05) or ``["PENDING", "REQUEUED"]`` (23.02+): the first base state named."""
    names = value if isinstance(value, list) else [value]
    for name in names:
        try:
            return JobState(str(name).upper())
        except ValueError:
            continue
    return JobState.UNKNOWN


def _exit(value: Any) -> tuple[int, int]:
    """(exit status, signal) from a raw wait status (22.05) or ``{"return_code", "signal"}`` (23.02+)."""
    if isinstance(value, dict):
        code = _number(value.get("return_code"))
        signal = value.get("signal")
        number = _number(signal.get("id") if isinstance(signal, dict) else signal)
        return int(code or 0), int(number or 0)
    raw = int(_number(value) or 0)
    return (raw >> 8) & 0xFF, raw & 0x7F


_HELD_REASONS = ("JobHeldUser", "JobHeldAdmin", "job_requeued_in_held_state", "job requeued in held state")
# A job requeued held is COMPLETING (its processes being killed) for a moment before it is PENDING again.
_HOLDABLE = (JobState.PENDING, JobState.COMPLETING, JobState.REQUEUED)


def parse_job(raw: Mapping[str, Any], gpu_uuids: Mapping[str, Sequence[str]] | None = None) -> SlurmJob:
    """One job of ``squeue --json``; ``gpu_uuids`` maps a node's device indices to UUIDs."""
    state = _state(raw.get("job_state"))
    priority = int(_number(raw.get("priority")) or 0)
    reason = _text(raw.get("state_description")) or _text(raw.get("state_reason"))
    held = state in _HOLDABLE and (priority == 0 or reason in _HELD_REASONS)
    indices: tuple[int, ...] = ()
    for item in raw.get("gres_detail") or []:
        indices += tuple(i for entry in parse_gres(str(item)) if entry.name == "gpu" for i in entry.indices)
    nodes = _text(raw.get("nodes"))
    known = (gpu_uuids or {}).get(nodes, ())
    uuids = tuple(known[i] for i in indices if i < len(known)) if len(known) else ()
    limit_min = _number(raw.get("time_limit"))
    code, signal = _exit(raw.get("exit_code"))
    return SlurmJob(
        job_id=_job_id(raw),
        name=_text(raw.get("name")),
        user=_text(raw.get("user_name")) or _text(raw.get("user_id")),
        state=state,
        partition=_text(raw.get("partition")),
        submit_s=_time_s(raw.get("submit_time")) or 0.0,
        # Slurm stamps a start time on a job cancelled while pending: only one given nodes really started.
        start_s=_time_s(raw.get("start_time")) if state is not JobState.PENDING and nodes else None,
        end_s=_time_s(raw.get("end_time")) if state.finished else None,
        time_limit_s=None if limit_min is None else limit_min * 60.0,
        comment=_text(raw.get("comment")),
        admin_comment=_text(raw.get("admin_comment")),
        nodes=nodes,
        required_nodes=_text(raw.get("required_nodes")),
        gres=",".join(str(entry) for entry in parse_gres(_text(raw.get("tres_per_node")))),
        gpu_indices=indices,
        gpu_uuids=uuids,
        held=held,
        reason=reason,
        restart_count=int(_number(raw.get("restart_cnt")) or 0),
        priority=priority,
        exit_code=code if state.finished else None,
        exit_signal=signal if state.finished else 0,
    )


def parse_node(raw: Mapping[str, Any]) -> SlurmNode:
    """One node of ``sinfo --json``: ``state`` a string (22.05) or a list of state and flags (23.02+)."""
    state = raw.get("state")
    flags = [str(flag).upper() for flag in raw.get("state_flags") or []]
    if isinstance(state, list):
        names = [str(name).upper() for name in state]
        state, flags = (names[0] if names else "unknown"), flags + names[1:]
    return SlurmNode(
        name=_text(raw.get("name")),
        state=_text(state).lower(),
        state_flags=tuple(flags),
        gres=parse_gres(_text(raw.get("gres"))),
        gres_used=parse_gres(_text(raw.get("gres_used"))),
        partitions=tuple(str(p) for p in raw.get("partitions") or []),
        cpus=int(_number(raw.get("cpus")) or 0),
        alloc_cpus=int(_number(raw.get("alloc_cpus")) or 0),
        reason=_text(raw.get("reason")),
    )


# ---------------------------------------------------------------------- an in-memory Slurm for tests
class FakeSlurmClient:
    """:class:`SlurmApi` in memory, for fast tests of whatever drives Slurm.

    ``nodes`` maps a node name to its GPU devices' GRES types in Slurm's index order (``["a100_4g.20gb",
    "a100_1g.10gb"]``), ``uuids`` optionally to their UUIDs. Jobs come from :meth:`submit`; a job of
    ``managed_partition`` is held at submission, as the shipped ``job_submit.lua`` does. Slurm's own moves are
    the test's: :meth:`start` (or :meth:`schedule`, which starts every released job that fits),
    :meth:`finish`. Every changing call is logged in :attr:`calls`, every signal in :attr:`signals`.

    Accounting: with ``accounting`` (the default) a job has a record in an in-memory accounting database from
    its start on, following its state and AdminComment as slurmctld sends them to slurmdbd, except for the
    jobs in :attr:`unrecorded` (their news has not reached the database: :meth:`flush_accounting` delivers
    it); :attr:`dbd_up` ``False`` is slurmdbd not answering. Without ``accounting`` the cluster has no
    slurmdbd. ``slurm_version``: the release its commands say they are (:meth:`slurm_release`).
    """

    def __init__(
        self,
        nodes: Mapping[str, Sequence[str]] | None = None,
        *,
        uuids: Mapping[str, Sequence[str]] | None = None,
        managed_partition: str = "mig",
        clock: Callable[[], float] = time.time,
        accounting: bool = True,
        slurm_version: str | None = "22.05",
    ) -> None:
        self.slurm_version = slurm_version
        self.devices = {name: tuple(types) for name, types in (nodes or {"node0": ()}).items()}
        self.uuids = {name: tuple(ids) for name, ids in (uuids or {}).items()}
        self.managed_partition = managed_partition
        self.clock = clock
        self.up = True
        self.calls: list[tuple[Any, ...]] = []
        self.signals: list[tuple[int, str, str]] = []
        self._jobs: dict[int, SlurmJob] = {}
        self._next_id = 1
        #: Per job, every GRES type it was ever given (Slurm 22.05 keeps them all: the module docstring).
        self._asked: dict[int, set[str | None]] = {}
        #: A renewed job's copy -> the original.
        self.renewed: dict[int, int] = {}
        #: Per node, the state flags :meth:`nodes` reports (``("POWERED_DOWN",)``: Slurm's power saving).
        self.node_flags: dict[str, tuple[str, ...]] = {}
        #: Per node, a state :meth:`nodes` reports instead of ``idle`` / ``mixed`` (``"down"``).
        self.node_state: dict[str, str] = {}
        self.accounting = accounting
        self.dbd_up = True
        self.unrecorded: set[int] = set()
        #: The accounting database: a record per job that ever started.
        self.records: dict[int, AccountingRecord] = {}

    # ------------------------------------------------------------------ the SlurmApi
    def ping(self) -> bool:
        return self.up

    def jobs(self, partition: str | None = None) -> list[SlurmJob]:
        self._check_up("squeue --json")
        found = sorted(self._jobs.values(), key=lambda job: job.job_id)
        return [job for job in found if partition is None or job.partition == partition]

    def job(self, job_id: int) -> SlurmJob | None:
        self._check_up("squeue --json")
        return self._jobs.get(job_id)

    def nodes(self) -> list[SlurmNode]:
        self._check_up("sinfo --json")
        result = []
        in_use: dict[str, set[int]] = {}  # one scan of the jobs, not one per node
        for job in self._jobs.values():
            if job.state is JobState.RUNNING:
                in_use.setdefault(job.nodes, set()).update(job.gpu_indices)
        for name, types in sorted(self.devices.items()):
            used = in_use.get(name, set())
            counts: dict[str, list[int]] = {}
            for index, kind in enumerate(types):
                counts.setdefault(kind, [])
                if index in used:
                    counts[kind].append(index)
            gres = tuple(GresEntry("gpu", kind, types.count(kind)) for kind in counts)
            gres_used = tuple(GresEntry("gpu", kind, len(ids), tuple(ids)) for kind, ids in counts.items())
            state = self.node_state.get(name) or ("mixed" if used else "idle")
            flags = self.node_flags.get(name, ())
            result.append(SlurmNode(name, state, flags, gres, gres_used, (self.managed_partition,), 2, 0, ""))
        return result

    def hold(self, job_id: int) -> None:
        self._log("hold", job_id)
        job = self._get(job_id)
        if job.state is JobState.PENDING:
            self._put(job, held=True, priority=0, reason="JobHeldAdmin")

    def hold_with_reason(self, job_id: int, reason: str) -> None:
        self.hold(job_id)
        self.set_admin_comment(job_id, f"wattsched: {' '.join(reason.split())}")

    def release(self, job_id: int) -> None:
        self._log("release", job_id)
        job = self._get(job_id)
        if job.state is JobState.PENDING:
            self._put(job, held=False, priority=1, reason="None")

    def set_gres(self, job_id: int, gres: str, node: str | None = None) -> None:
        self._log("set_gres", job_id, gres, node)
        job = self._get(job_id)
        if job.state is not JobState.PENDING:
            raise SlurmError(f"'scontrol update jobid={job_id} TresPerNode=' failed: job is not pending")
        if node is not None and node not in self.devices:
            raise SlurmError(f"'scontrol update jobid={job_id} ReqNodeList={node}' failed: invalid node name")
        entries = parse_gres(gres)
        self._asked.setdefault(job_id, set()).update(entry.type for entry in entries)
        value = ",".join(str(entry) for entry in entries)
        self._put(job, gres=value, required_nodes=node if node is not None else job.required_nodes)

    def set_admin_comment(self, job_id: int, text: str) -> None:
        self._log("set_admin_comment", job_id, text)
        self._put(self._get(job_id), admin_comment=text)

    def signal(self, job_id: int, signal: str = "USR1", scope: SignalScope = "full") -> None:
        self._log("signal", job_id, signal, scope)
        if self._get(job_id).state is not JobState.RUNNING:
            raise SlurmError(f"'scancel --signal={signal} {job_id}' failed: job is not running")
        self.signals.append((job_id, signal.upper().removeprefix("SIG"), scope))

    def requeue_hold(self, job_id: int) -> None:
        self._log("requeue_hold", job_id)
        job = self._get(job_id)
        if job.state is JobState.PENDING:
            raise SlurmError(f"'scontrol requeuehold {job_id}' failed: job is pending")
        self._put(
            job,
            state=JobState.PENDING,
            held=True,
            priority=0,
            reason="job_requeued_in_held_state",
            restart_count=job.restart_count + 1,
            start_s=None,
            end_s=None,
            nodes="",
            gpu_indices=(),
            gpu_uuids=(),
            exit_code=None,
        )

    def power_up(self, node: str) -> None:
        self._log("power_up", node)
        if node not in self.devices:
            raise SlurmError(f"'scontrol update NodeName={node} State=POWER_UP' failed: invalid node name")
        if "POWERED_DOWN" in self.node_flags.get(node, ()):
            self.node_flags[node] = ("POWER_UP", "POWERED_DOWN")  # as Slurm shows it; a test clears it

    def cancel(self, job_id: int) -> None:
        self._log("cancel", job_id)
        job = self._get(job_id)
        if not job.state.finished:
            self.finish(job_id, JobState.CANCELLED)

    def renew(self, job_id: int, marker: str) -> int:
        self._log("renew", job_id, marker)
        job = self._get(job_id)
        if job.state is not JobState.PENDING:
            raise SlurmError(f"cannot renew job {job_id}: it is not pending")
        copy, self._next_id = self._next_id, self._next_id + 1
        self._jobs[copy] = replace(
            job,
            job_id=copy,
            submit_s=float(self.clock()),
            gres="",
            required_nodes="",
            held=True,
            priority=0,
            reason="JobHeldUser",
            admin_comment=marker,
            restart_count=0,
        )
        self.renewed[copy] = job_id
        self.finish(job_id, JobState.CANCELLED)
        return copy

    def accounting_enabled(self) -> bool:
        self._check_up("scontrol show config")
        return self.accounting

    def accounting_job(self, job_id: int) -> AccountingRecord | None:
        self._check_dbd("sacct")
        return self.records.get(job_id)

    def set_accounting_comment(self, job_id: int, text: str) -> None:
        self._log("set_accounting_comment", job_id, text)
        self._check_dbd("sacctmgr modify job")
        record = self.records.get(job_id)
        if record is None:
            raise SlurmError(f"sacctmgr changed no record of job {job_id} (not in the database yet?)")
        self.records[job_id] = replace(record, admin_comment=text)

    def slurm_release(self) -> str | None:
        return self.slurm_version

    def set_accounting_energy(self, job_id: int, energy_j: int) -> None:
        self._log("set_accounting_energy", job_id, energy_j)
        self._check_dbd("sacctmgr modify job")
        record = self.records.get(job_id)
        if record is None:
            raise SlurmError(f"sacctmgr changed no record of job {job_id} (not in the database yet?)")
        self.records[job_id] = replace(record, energy_j=energy_j)

    # ------------------------------------------------------------------ what Slurm itself does
    def flush_accounting(self) -> None:
        """The news of the :attr:`unrecorded` jobs reaches the database."""
        waiting, self.unrecorded = self.unrecorded, set()
        for job_id in waiting:
            if job_id in self._jobs:
                self._record(self._jobs[job_id])

    def submit(
        self,
        script: str | Path = "job.sh",
        *,
        partition: str | None = None,
        name: str | None = None,
        comment: str = "",
        user: str = "user",
        time_limit_s: float | None = None,
        gres: str = "",
    ) -> int:
        """A new pending job (held when in the managed partition); returns its id."""
        self._check_up("sbatch")
        job_id, self._next_id = self._next_id, self._next_id + 1
        part = partition or self.managed_partition
        held = part == self.managed_partition
        self._jobs[job_id] = SlurmJob(
            job_id=job_id,
            name=name or Path(script).name,
            user=user,
            state=JobState.PENDING,
            partition=part,
            submit_s=float(self.clock()),
            start_s=None,
            end_s=None,
            time_limit_s=time_limit_s,
            comment=comment,
            admin_comment="",
            nodes="",
            required_nodes="",
            gres=",".join(str(entry) for entry in parse_gres(gres)),
            gpu_indices=(),
            gpu_uuids=(),
            held=held,
            reason="JobHeldUser" if held else "None",
            restart_count=0,
            priority=0 if held else 1,
            exit_code=None,
        )
        return job_id

    def start(self, job_id: int, gpu_indices: Sequence[int] | None = None, node: str | None = None) -> None:
        """Run a released pending job on ``node`` (its ReqNodeList, else the first node) with the given
        device indices (default: free devices matching its GRES); :class:`SlurmError` when it cannot."""
        job = self._get(job_id)
        if job.state is not JobState.PENDING or job.held:
            raise SlurmError(f"job {job_id} is {job.state.value}{' and held' if job.held else ''}")
        where = node or job.required_nodes or next(iter(self.devices))
        indices = tuple(gpu_indices) if gpu_indices is not None else self._fit(job, where)
        if indices is None:
            raise SlurmError(f"job {job_id}: no free devices for '{job.gres}' on {where}")
        known = self.uuids.get(where, ())
        uuids = tuple(known[i] for i in indices if i < len(known))
        self._put(
            job,
            state=JobState.RUNNING,
            start_s=float(self.clock()),
            nodes=where,
            gpu_indices=indices,
            gpu_uuids=uuids,
            reason="None",
        )

    def schedule(self) -> list[int]:
        """Start every released pending job whose GRES fits now, by job id; returns those started."""
        started = []
        for job in self.jobs():
            if job.state is JobState.PENDING and not job.held:
                where = job.required_nodes or next(iter(self.devices))
                if self._fit(job, where) is not None:
                    self.start(job.job_id, node=where)
                    started.append(job.job_id)
        return started

    def finish(self, job_id: int, state: JobState = JobState.COMPLETED, exit_code: int = 0) -> None:
        """End a job (running or pending) in ``state``."""
        job = self._get(job_id)
        self._put(job, state=state, end_s=float(self.clock()), exit_code=exit_code, held=False)

    def forget(self, job_id: int) -> None:
        """Drop a job, as slurmctld does ``MinJobAge`` after it ended."""
        self._jobs.pop(job_id, None)

    # ------------------------------------------------------------------ helpers
    def _fit(self, job: SlurmJob, node: str) -> tuple[int, ...] | None:
        types = self.devices.get(node, ())
        busy = {i for other in self._running(node) for i in other.gpu_indices}
        chosen: list[int] = []
        for entry in parse_gres(job.gres):
            free = [
                i
                for i, kind in enumerate(types)
                if i not in busy and i not in chosen and (entry.type is None or kind == entry.type)
            ]
            if len(free) < entry.count:
                return None
            chosen.extend(free[: entry.count])
        # A type asked before and cleared since still needs a free device of its type (none is given).
        for kind in self._asked.get(job.job_id, set()) - {entry.type for entry in parse_gres(job.gres)}:
            if not any(i not in busy and (kind is None or t == kind) for i, t in enumerate(types)):
                return None
        return tuple(chosen)

    def _running(self, node: str) -> list[SlurmJob]:
        return [j for j in self._jobs.values() if j.state is JobState.RUNNING and j.nodes == node]

    def _get(self, job_id: int) -> SlurmJob:
        self._check_up(f"scontrol show job {job_id}")
        try:
            return self._jobs[job_id]
        except KeyError:
            raise SlurmError(f"'scontrol show job {job_id}' failed: Invalid job id specified") from None

    def _put(self, job: SlurmJob, **changes: Any) -> None:
        self._jobs[job.job_id] = changed = replace(job, **changes)
        self._record(changed)

    def _record(self, job: SlurmJob) -> None:
        """What slurmctld tells slurmdbd of a job that started: its state and AdminComment."""
        if (
            self.accounting
            and job.job_id not in self.unrecorded
            and (job.job_id in self.records or job.start_s)
        ):
            self.records[job.job_id] = AccountingRecord(job.job_id, job.state, job.admin_comment)

    def _check_dbd(self, command: str) -> None:
        if not self.accounting:
            raise NoAccountingError(
                f"no accounting database: '{command}' failed: Slurm accounting storage is disabled"
            )
        if not self.dbd_up:
            raise SlurmError(f"'{command}' failed: Problem talking to the database: Connection refused")

    def _log(self, *call: Any) -> None:
        self.calls.append(call)

    def _check_up(self, command: str) -> None:
        if not self.up:
            raise SlurmError(f"slurm is not running: '{command}' failed: Unable to contact slurm controller")
