"""GPU clocks in the Slurm controller (off unless the config says ``[clocks] enabled = true``).

On a MIG GPU the SM clock is one setting for the whole GPU, shared by its slices. At every pass, for each GPU
of a node whose clocks are set, :class:`GpuClocks` chooses the level with the data-centre simulator's own rule
(:mod:`wattsched.cluster.clocks`), on the jobs running in the GPU's model at the pass's time: the tightest
slack ratio ``min_j (deadline_j − now) / (time job j still needs at the default clock)``
(:func:`wattsched.mig.clock.tightest_slack_ratio`) and the GPU's clock schedule
(:meth:`wattsched.cluster.clocks.ClockSchedule.level_for`): the slowest level that keeps every running job
on time, never slower than the energy-optimal level, the fastest one when some job cannot be on time.

A level that differs from the one applied is locked through the node's GPU backend
(``set_locked_clocks(index, sm_mhz, mem_mhz)``, the memory clock at ``clocks.mem_mhz`` or the GPU's default)
behind two guards: the backend may change the GPU (root for NVML) and the clock pair is one the GPU reports
as supported. A pair it does not support is logged once and the GPU left as it was. Each change is journaled
in the state file's ``actions`` table like the controller's Slurm actions (``pending`` before it is sent,
``done`` or ``failed`` after), under job id 0 (Slurm never gives a job that id), and logged as a decision.
The clocks are reset (unlocked) when the GPU has no running job and when the controller stops
(:meth:`GpuClocks.close`). A dry run changes nothing: it logs what it would lock.

The GPU's model follows the clock applied: it is built with :class:`AppliedLevel` as its clock governor and
told each change (:meth:`~wattsched.mig.simulator.MigSimulation.observe_clock_level`), so its predicted
completions run at the applied level's speed; :meth:`GpuClocks.work_s` gives the controller the same
speed-weighted time for a job's progress.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wattsched.cluster.clocks import ClockSchedule, clock_schedule
from wattsched.hardware.gpu import GpuBackend, GpuError, open_backend
from wattsched.mig.clock import tightest_slack_ratio
from wattsched.mig.simulator import MigSimulation
from wattsched.mig.view import JobState, ViewJob, build_view
from wattsched.slurm.config import ControllerConfig
from wattsched.slurm.state import Action, StateStore

if TYPE_CHECKING:
    from wattsched.slurm.controller import GpuModel

__all__ = ["CLOCK_ACTIONS", "CLOCK_JOB_ID", "AppliedClock", "AppliedLevel", "GpuClocks", "applied_clocks"]

log = logging.getLogger(__name__)

#: The journal's job id of GPU clock actions, and their kinds.
CLOCK_JOB_ID = 0
CLOCK_ACTIONS = ("lock_clocks", "reset_clocks")


class AppliedLevel:
    """The clock governor of a controller's GPU model: the levels of the GPU's clock schedule, and always
    the level last applied to the real GPU (the controller chooses the level; the model follows it)."""

    def __init__(self, schedule: ClockSchedule) -> None:
        self.schedule = schedule
        self.level = schedule.initial_level

    @property
    def speed(self) -> Sequence[float]:
        return self.schedule.speed

    @property
    def power_scale(self) -> Sequence[float]:
        return self.schedule.power_scale

    @property
    def initial_level(self) -> int:
        return self.schedule.initial_level

    def level_for(self, slack_ratio: float) -> int:
        return self.level


@dataclass(frozen=True)
class AppliedClock:
    """A GPU's clocks as the journal last recorded them: locked at ``sm_mhz``/``mem_mhz`` from ``since_s``
    (seconds since the epoch), or unlocked (both ``None``)."""

    sm_mhz: int | None
    mem_mhz: int | None
    since_s: float


def applied_clocks(store: StateStore) -> dict[tuple[str, int], AppliedClock]:
    """Each GPU's clocks by ``(node, GPU index)``, from the last clock action the journal marks done."""
    found: dict[tuple[str, int], AppliedClock] = {}
    for action in store.actions(CLOCK_JOB_ID):
        if action.kind not in CLOCK_ACTIONS or action.status != "done":
            continue
        key = (str(action.args["node"]), int(action.args["gpu"]))
        if action.kind == "lock_clocks":
            found[key] = AppliedClock(int(action.args["sm_mhz"]), int(action.args["mem_mhz"]), action.time_s)
        else:
            found[key] = AppliedClock(None, None, action.time_s)
    return found


#: What :class:`GpuClocks` knows of a GPU's clocks: locked at an SM clock (MHz), unlocked, or not known
#: (before the first pass: a crashed run may have left a lock).
_UNLOCKED = -1


class GpuClocks:
    """The clocks of the GPUs of the nodes ``config.clocks`` names (see the module docstring)."""

    def __init__(
        self,
        config: ControllerConfig,
        store: StateStore,
        *,
        dry_run: bool = False,
        backends: Mapping[str, GpuBackend] | None = None,
        log_decision: Callable[[float, str], None] | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.dry_run = dry_run
        self._log_decision = log_decision or (lambda _now, text: log.info("%s", text))
        managed = [node for node in config.nodes if config.clocks.manages(node.name)]
        given = dict(backends or {})
        self.backends: dict[str, GpuBackend] = {
            node.name: given[node.name] if node.name in given else open_backend(node.backend)
            for node in managed
        }
        self._opened = [name for name in self.backends if name not in given]
        if not dry_run:
            for name, backend in self.backends.items():
                if not backend.privileged():
                    raise GpuError(
                        f"clocks.enabled: changing the GPU clocks of node '{name}' needs root (NVML refuses "
                        "clock changes otherwise); run the controller as root or leave the node out of "
                        "clocks.nodes"
                    )
        self._governors: dict[str, AppliedLevel] = {}
        self._mem_mhz: dict[str, int] = {}
        for node in managed:
            for index, gpu in enumerate(node.gpus):
                schedule = clock_schedule(gpu)
                assert schedule is not None and gpu.clocks is not None  # the config refuses GPUs without
                self._governors[f"{node.name}/{index}"] = AppliedLevel(schedule)
                self._mem_mhz[f"{node.name}/{index}"] = config.clocks.mem_mhz or gpu.clocks.default_mem_mhz
        #: The SM clock applied to each GPU (MHz, or _UNLOCKED; absent: not known), and the one refused.
        self._applied: dict[str, int] = {}
        self._refused: dict[str, int] = {}
        #: Each GPU's speed changes (epoch seconds, speed from then on) since this controller started.
        self._speeds: dict[str, list[tuple[float, float]]] = {}

    # ------------------------------------------------------------------ the model
    def governor(self, node: str, index: int) -> AppliedLevel | None:
        """The clock governor of a GPU's model, ``None`` where its clocks are not set."""
        return self._governors.get(f"{node}/{index}")

    def work_s(self, name: str, from_s: float, to_s: float) -> float:
        """Seconds of work at the default clock that a job running on GPU ``name`` did from ``from_s`` to
        ``to_s`` (epoch seconds): the elapsed time weighted by the speed of the clock applied in between, the
        default clock's before the first change (exactly ``to_s − from_s`` where the clock never changed)."""
        changes = self._speeds.get(name)
        if not changes or to_s <= from_s:
            return to_s - from_s
        work, speed, at = 0.0, 1.0, from_s
        for changed_s, new_speed in changes:
            if changed_s >= to_s:
                break
            if changed_s > at:
                work += (changed_s - at) * speed
                at = changed_s
            speed = new_speed
        return work + (to_s - at) * speed

    # ------------------------------------------------------------------ each pass
    def follow(self, model: GpuModel, now_s: float, at_s: float) -> None:
        """Choose GPU ``model``'s clock for the jobs running in its model at ``at_s`` (model time; ``now_s``
        in epoch seconds) and apply it if it changed; unlock an idle GPU."""
        governor = self._governors.get(model.name)
        if governor is None:
            return
        choice = _choose(model.sim, governor, at_s)
        if choice is None:
            if _UNLOCKED not in (self._applied.get(model.name), self._refused.get(model.name)):
                self._reset(model, governor, now_s, at_s, "no job running")
            return
        level, ratio, running = choice
        sm_mhz = governor.schedule.sm_mhz[level]
        if sm_mhz in (self._applied.get(model.name), self._refused.get(model.name)):
            return
        mem_mhz = self._mem_mhz[model.name]
        why = f"{running} job(s) running, tightest slack ratio {ratio:.3f}"
        if not self._lock(model, sm_mhz, mem_mhz, now_s, why):
            self._refused[model.name] = sm_mhz
            return
        self._applied[model.name] = sm_mhz
        self._refused.pop(model.name, None)
        self._tell_model(model, governor, level, now_s, at_s)

    def _lock(self, model: GpuModel, sm_mhz: int, mem_mhz: int, now_s: float, why: str) -> bool:
        backend = self.backends[model.node]
        try:
            supported = backend.supported_clocks_mhz(model.index)
        except GpuError as exc:
            self._warn(now_s, f"{model.name}: cannot read the supported clocks ({exc}); clock left as it was")
            return False
        if sm_mhz not in supported.get(mem_mhz, ()):
            self._warn(
                now_s,
                f"{model.name}: SM {sm_mhz} MHz at memory {mem_mhz} MHz is not a clock pair this GPU "
                "supports; clock left as it was",
            )
            return False
        text = f"{model.name}: SM clock locked at {sm_mhz} MHz, memory {mem_mhz} MHz ({why})"
        if self.dry_run:
            log.info("dry run: would lock %s at SM %d MHz, memory %d MHz", model.name, sm_mhz, mem_mhz)
            self._log_decision(now_s, text)
            return True
        if not backend.privileged():
            self._warn(now_s, f"{model.name}: changing clocks needs root; clock left as it was")
            return False
        args = {"node": model.node, "gpu": model.index, "sm_mhz": sm_mhz, "mem_mhz": mem_mhz}
        if not self._send(
            "lock_clocks", args, now_s, lambda: backend.set_locked_clocks(model.index, sm_mhz, mem_mhz)
        ):
            return False
        self._log_decision(now_s, text)
        return True

    def _reset(self, model: GpuModel, governor: AppliedLevel, now_s: float, at_s: float, why: str) -> None:
        if self.dry_run:
            log.info("dry run: would reset the clocks of %s", model.name)
        elif not self._unlock(model, now_s):
            self._refused[model.name] = _UNLOCKED  # said once; tried again once the GPU has been busy
            return
        self._applied[model.name] = _UNLOCKED
        self._refused.pop(model.name, None)
        self._tell_model(model, governor, governor.initial_level, now_s, at_s)
        self._log_decision(now_s, f"{model.name}: clocks reset ({why})")

    def _unlock(self, model: GpuModel, now_s: float) -> bool:
        backend = self.backends[model.node]
        args = {"node": model.node, "gpu": model.index}
        return self._send("reset_clocks", args, now_s, lambda: backend.reset_clocks(model.index))

    def _send(self, kind: str, args: dict[str, object], now_s: float, change: Callable[[], None]) -> bool:
        """Journal a clock action, make the change, mark the action done (or failed)."""
        action = self.store.journal(CLOCK_JOB_ID, kind, args, now_s)
        try:
            change()
        except GpuError as exc:
            self.store.finish_action(action, "failed")
            self._warn(now_s, f"{args['node']}/{args['gpu']}: {kind.replace('_', ' ')} failed: {exc}")
            return False
        self.store.finish_action(action)
        return True

    def _tell_model(
        self, model: GpuModel, governor: AppliedLevel, level: int, now_s: float, at_s: float
    ) -> None:
        governor.level = level
        model.sim.observe_clock_level(level, at_s)
        self._speeds.setdefault(model.name, []).append((now_s, governor.speed[level]))

    def _warn(self, now_s: float, text: str) -> None:
        log.warning("%s", text)
        if not self.dry_run:
            self.store.log_decision(now_s, text)

    # ------------------------------------------------------------------ recovery and stop
    def recover(self, action: Action) -> bool:
        """Whether ``action`` (pending in the journal at start) is a clock action, which is then closed: what
        the GPU's clocks are is not known after a crash, so the first pass applies its choice (or unlocks an
        idle GPU) whatever was applied before."""
        if action.kind not in CLOCK_ACTIONS:
            return False
        self.store.finish_action(action.id, "superseded")
        log.info(
            "recovered %s of %s/%s (superseded by the first pass)",
            action.kind,
            action.args.get("node"),
            action.args.get("gpu"),
        )
        return True

    def close(self, now_s: float, gpus: Sequence[GpuModel]) -> None:
        """Unlock the clocks of every managed GPU not known to be unlocked (the controller stops), then close
        the backends opened here. A dry run changes nothing."""
        for model in gpus:
            if model.name not in self._governors or self._applied.get(model.name) == _UNLOCKED:
                continue
            if self.dry_run:
                log.info("dry run: would reset the clocks of %s", model.name)
                continue
            if self._unlock(model, now_s):
                self._applied[model.name] = _UNLOCKED
                self._log_decision(now_s, f"{model.name}: clocks reset (the controller stops)")
        for name in self._opened:
            self.backends[name].close()
        self._opened = []


def _choose(sim: MigSimulation, governor: AppliedLevel, at_s: float) -> tuple[int, float, int] | None:
    """``(level, tightest slack ratio, running jobs)`` for the jobs running in ``sim`` at ``at_s`` (their
    progress since the model's last instant at the applied level's speed), ``None`` when none runs."""
    snapshot = sim.snapshot()
    running = [job for job in snapshot.jobs if job.slice_index is not None]
    if not running:
        return None
    slices = sim.configuration.slices
    speed = governor.speed[sim.clock_level]
    now = max(at_s, snapshot.now_s)
    elapsed = now - snapshot.now_s
    jobs = []
    for job in running:
        assert job.slice_index is not None
        duration = job.durations_s[slices[job.slice_index].duration_index]
        remaining = max(job.remaining_fraction - elapsed * speed / duration, 0.0)
        jobs.append(ViewJob(job.deadline_s, job.durations_s, remaining, JobState.RUNNING, job.slice_index))
    view = build_view(now, [(s.compute, s.start, s.duration_index) for s in slices], jobs)
    ratio = tightest_slack_ratio(view, now)
    return governor.schedule.level_for(ratio), ratio, len(running)
