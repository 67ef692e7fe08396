"""Each ended job's exact energy into Slurm's accounting database, written once.

A running job's AdminComment carries its energy so far (``wattsched_energy_j=<joules>``, renewed at every
pass), but Slurm refuses any change to a job once it has ended, so what slurmctld keeps is the energy at the
controller's last pass before the end. With slurmdbd the ended job's record can still be changed
(``sacctmgr modify job``): :class:`AccountingWriter` writes the controller's exact total there, the figure
of the job's state row, in the same format. From Slurm 25.11 on (:func:`energy_tres_writable`) it also sets
the record's ``energy`` TRES to it, in whole joules (``set TRES=energy=J``), which ``sacct`` shows as the
job's ``ConsumedEnergy`` (and ``energy=`` in its ``AllocTRES``); the AdminComment is written on every release.

Each write is journaled (kind :data:`KIND`) in the same transaction that marks the job ended, and marked
``done`` once it has landed: a write that fails (slurmdbd down, or the job's end not in the database yet —
written before it, the comment would be overwritten by the end slurmctld sends) is tried again on later
passes, less often after each failure (up to every :data:`MAX_RETRY_S` seconds), until it lands. Before each
write the record is read back: a record that already says it (a controller killed between the write and its
journal entry, or a comment landed and the TRES not yet) is not written again. Without slurmdbd nothing is
journaled, and the controller says once in its log, and in ``wattsched slurm status``, that final energies
stay in its state file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from wattsched.slurm.client import NoAccountingError, SlurmApi, SlurmError
from wattsched.slurm.state import Action, JobRow, StateStore

__all__ = [
    "ENERGY_TRES_SINCE",
    "KIND",
    "MAX_RETRY_S",
    "AccountingWriter",
    "accounting_status",
    "energy_comment",
    "energy_tres_writable",
    "status_line",
]

log = logging.getLogger(__name__)

#: The journal's kind for a final-energy write.
KIND = "accounting_comment"
#: The longest wait between two tries of a write that failed (s); the first retry comes after 1 s.
MAX_RETRY_S = 60.0
#: Failed tries of one write after which the controller warns (once) that it is still waiting.
WARN_AFTER_TRIES = 10
#: The first Slurm release whose ``sacctmgr modify job`` sets a TRES of an ended job's record.
ENERGY_TRES_SINCE = (25, 11)


def energy_tres_writable(release: str | None) -> bool:
    """Whether Slurm ``release`` (``major.minor``, as :func:`wattsched.slurm.client.release_of` gives it;
    ``None``: unknown) takes a job's final energy as its ``energy`` TRES (:data:`ENERGY_TRES_SINCE`)."""
    major, _, minor = (release or "").partition(".")
    if not (major.isdigit() and minor.isdigit()):
        return False
    return (int(major), int(minor)) >= ENERGY_TRES_SINCE


def energy_comment(energy_mj: int) -> str:
    """A job's AdminComment for its energy, while it runs and at its end: ``wattsched_energy_j=12.345``."""
    return f"wattsched_energy_j={energy_mj / 1000.0:.3f}"


@dataclass
class _Owed:
    """A write not landed yet: its journal entry, the job, the text and the energy TRES (J; ``None``: a
    journal entry of a release before the TRES), the tries so far and the next one."""

    action_id: int
    job_id: int
    text: str
    energy_j: int | None = None
    tries: int = 0
    next_s: float = 0.0


class AccountingWriter:
    """The final-energy writes of ended jobs (module docstring). ``log_decision`` records what the
    controller says about accounting among its decisions (``wattsched slurm status``)."""

    def __init__(
        self,
        slurm: SlurmApi,
        store: StateStore,
        *,
        dry_run: bool = False,
        log_decision: Callable[[float, str], None] | None = None,
    ) -> None:
        self.slurm = slurm
        self.store = store
        self.dry_run = dry_run
        self.log_decision = log_decision
        #: Whether the cluster keeps accounting: ``None`` until Slurm has answered.
        self.enabled: bool | None = None
        #: Whether its release takes the energy TRES too (:func:`energy_tres_writable`), once it answered.
        self.energy_tres = False
        self._owed: dict[int, _Owed] = {}

    @property
    def waiting(self) -> list[int]:
        """The jobs whose final energy has not landed yet, by job id."""
        return sorted(owed.job_id for owed in self._owed.values())

    def recover(self, action: Action) -> bool:
        """Take a pending write of the journal (the controller's restart); whether ``action`` is one."""
        if action.kind != KIND:
            return False
        energy = action.args.get("energy_j")
        self._owed[action.id] = _Owed(
            action.id, action.job_id, str(action.args["text"]), int(energy) if energy is not None else None
        )
        return True

    def owe(self, row: JobRow, now: float) -> None:
        """Journal the final-energy write of a job that just ended (inside the transaction that writes its
        ended row, so that a crash loses neither). A job that never ran has nothing to write."""
        if self.enabled is False or row.start_s is None:
            return
        text = energy_comment(row.energy_mj)
        energy_j = (row.energy_mj + 500) // 1000  # a TRES counts whole joules
        if self.dry_run:
            log.info("dry run: would write %s into the accounting record of job %d", text, row.job_id)
            return
        action = self.store.journal(row.job_id, KIND, {"text": text, "energy_j": energy_j}, now)
        self._owed[action] = _Owed(action, row.job_id, text, energy_j)

    def write(self, now: float) -> list[int]:
        """Try the writes that are due; returns the jobs whose write landed in this call."""
        if self.enabled is None and not self._probe(now):
            return []
        landed: list[int] = []
        for owed in sorted(self._owed.values(), key=lambda o: o.action_id):
            if not self.enabled:
                break
            if owed.next_s > now:
                continue
            try:
                record = self.slurm.accounting_job(owed.job_id)
            except NoAccountingError as exc:
                self._disable(now, str(exc))
                break
            except SlurmError as exc:  # slurmdbd does not answer: the other writes wait too
                self._retry(owed, now, str(exc))
                break
            if record is None or not record.state.finished:
                self._retry(owed, now, "its end is not in the accounting database yet")
                continue
            try:
                if record.admin_comment != owed.text:
                    self.slurm.set_accounting_comment(owed.job_id, owed.text)
                if self.energy_tres and owed.energy_j is not None and record.energy_j != owed.energy_j:
                    self.slurm.set_accounting_energy(owed.job_id, owed.energy_j)
            except NoAccountingError as exc:
                self._disable(now, str(exc))
                break
            except SlurmError as exc:
                self._retry(owed, now, str(exc))
                continue
            self.store.finish_action(owed.action_id, "done")
            del self._owed[owed.action_id]
            if owed.tries >= WARN_AFTER_TRIES:
                log.warning("job %d: final energy written into Slurm's accounting at last", owed.job_id)
            log.debug("job %d: %s written into its accounting record", owed.job_id, owed.text)
            landed.append(owed.job_id)
        return landed

    def _probe(self, now: float) -> bool:
        """Ask Slurm once whether it keeps accounting; whether it answered."""
        try:
            enabled = self.slurm.accounting_enabled()
            release = self.slurm.slurm_release() if enabled else None
        except SlurmError as exc:
            log.debug("accounting not checked yet: %s", exc)
            return False
        if enabled:
            self.enabled = True
            self.energy_tres = energy_tres_writable(release)
            if not self.dry_run:
                self.store.set_meta("accounting", "slurmdbd")
        else:
            self._disable(now, "AccountingStorageType is not accounting_storage/slurmdbd")
        return True

    def _disable(self, now: float, why: str) -> None:
        """No accounting database: say so once, and drop the writes owed (their energies are in the state
        file)."""
        self.enabled = False
        text = (
            f"Slurm keeps no accounting database here ({why}): final job energies stay in the controller's "
            f"state file {self.store.path} (wattsched slurm jobs)"
        )
        if self.log_decision is not None:
            self.log_decision(now, text)  # logs it too
        else:
            log.info("%s", text)
        if not self.dry_run:
            self.store.set_meta("accounting", "none")
        for owed in self._owed.values():
            self.store.finish_action(owed.action_id, "skipped")
        self._owed.clear()

    def _retry(self, owed: _Owed, now: float, why: str) -> None:
        owed.tries += 1
        owed.next_s = now + min(MAX_RETRY_S, 2.0 ** (owed.tries - 1))
        log.debug("job %d: final energy not written into Slurm's accounting yet: %s", owed.job_id, why)
        if owed.tries == WARN_AFTER_TRIES:
            log.warning(
                "job %d: final energy still not in Slurm's accounting after %d tries (%s); trying on",
                owed.job_id,
                owed.tries,
                why,
            )


def accounting_status(store: StateStore) -> dict[str, object]:
    """What ``wattsched slurm status`` says of accounting: whether Slurm keeps it (``slurmdbd``, ``none``,
    or ``None`` before the controller asked), and the final-energy writes done and waiting."""
    counts = store.action_counts(KIND)
    return {
        "slurm": store.meta("accounting"),
        "written": counts.get("done", 0),
        "waiting": counts.get("pending", 0),
    }


def status_line(status: dict[str, object]) -> str:
    """One line of ``wattsched slurm status`` from :func:`accounting_status`."""
    if status["slurm"] == "none":
        return "accounting: Slurm keeps none here; final job energies stay in this state file"
    if status["slurm"] is None:
        return "accounting: not checked yet (the controller asks Slurm at its first pass)"
    return (
        f"accounting: final job energies go into Slurm's accounting (sacct AdminComment; ConsumedEnergy "
        f"from Slurm 25.11 on): "
        f"{status['written']} written, {status['waiting']} waiting"
    )
