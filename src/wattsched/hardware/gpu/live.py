"""Drive a real MIG GPU from a repartitioning policy: the day runner's ``--live`` mode.

:class:`LiveRepartitioner` wraps any repartitioning policy (``wattsched.mig.partition``). The simulator still
runs the day (jobs, tardiness, energy, the 4 s blackout of docs/concepts/mig-model.md); each time the policy
changes the configuration, the wrapper turns the change into a plan (``mig_plan.plan_repartition``) and hands
it to an executor: :class:`DryRun` logs it (the default), :class:`ApplyOnGpu` carries it out on a GPU through
the guarded :func:`~wattsched.hardware.gpu.apply.apply_plan`. With ``speed_x`` set, decisions wait for
the wall clock (simulated seconds per real second), so the GPU is repartitioned at the pace of the day.
A change to ``no-mig`` (MIG disabled) is a MIG-mode change, which wattsched never makes: it is logged as
skipped and the GPU keeps its instances.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from wattsched.hardware.gpu.apply import apply_plan
from wattsched.hardware.gpu.backend import GpuBackend
from wattsched.hardware.mig import MigGpu
from wattsched.hardware.mig_plan import NO_MIG, GpuLayouts, Layout, PlanStep, layout_text, plan_repartition

__all__ = [
    "ApplyOnGpu",
    "DryRun",
    "LiveEvent",
    "LiveRepartitioner",
    "Partitioner",
    "PlanExecutor",
    "Snapshot",
]

log = logging.getLogger(__name__)


class Snapshot(Protocol):
    """What the wrapper reads of the simulator's snapshot (``wattsched.mig.SimSnapshot`` has it)."""

    @property
    def now_s(self) -> float: ...

    @property
    def configuration(self) -> int | str: ...


SnapshotT = TypeVar("SnapshotT", bound=Snapshot)
SnapshotT_contra = TypeVar("SnapshotT_contra", bound=Snapshot, contravariant=True)


class Partitioner(Protocol[SnapshotT_contra]):
    """The policy being wrapped: ``wattsched.mig.partition.RepartitionPolicy``, written out here because
    hardware/ sits below mig/ and does not import it."""

    name: str
    scheduler: str

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None: ...

    def initial_configuration(self) -> int | str: ...

    def decide(self, snapshot: SnapshotT_contra) -> int | str: ...


@dataclass(frozen=True)
class LiveEvent:
    """One repartition the policy decided: when, from which configuration to which, the steps, the outcome."""

    time_s: float
    source: int | str
    target: int | str
    steps: tuple[PlanStep, ...]
    outcome: str  # "logged", "applied" or "skipped: ..."

    def to_dict(self) -> dict[str, Any]:
        return {
            "time_s": self.time_s,
            "from": self.source,
            "to": self.target,
            "steps": [s.to_dict() for s in self.steps],
            "outcome": self.outcome,
        }


class PlanExecutor(Protocol):
    """Does something with each plan: log it, or apply it to a GPU. Returns the outcome."""

    def __call__(self, source: Layout, steps: tuple[PlanStep, ...]) -> str: ...


class DryRun:
    """Logs each plan and changes nothing."""

    def __call__(self, source: Layout, steps: tuple[PlanStep, ...]) -> str:
        log.info("dry run: %s", ", ".join(f"{s.op} {s.instance}" for s in steps) or "no step")
        return "logged"


@dataclass
class ApplyOnGpu:
    """Applies each plan to GPU ``index`` of ``backend`` (the guards of :func:`apply_plan` hold each time)."""

    backend: GpuBackend
    index: int = 0

    def __call__(self, source: Layout, steps: tuple[PlanStep, ...]) -> str:
        apply_plan(self.backend, self.index, source, steps)
        return "applied"


@dataclass
class LiveRepartitioner(Generic[SnapshotT]):
    """A repartitioning policy whose configuration changes also happen on a GPU (see the module docstring)."""

    inner: Partitioner[SnapshotT]
    gpu: GpuLayouts | None = None  # None: the catalogue GPU the day runs on (set by reset)
    executor: PlanExecutor = field(default_factory=DryRun)
    speed_x: float | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    events: list[LiveEvent] = field(default_factory=list)
    _started_s: float | None = None

    name: str = field(init=False)
    scheduler: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"live:{self.inner.name}"
        self.scheduler = str(self.inner.scheduler)  # jobs inside a configuration: the policy's own scheduler

    def reset(self, gpu: MigGpu, seed: int | None = None) -> None:
        """Reset the policy for a day on catalogue GPU ``gpu``; its layouts are used unless given."""
        self.inner.reset(gpu, seed)
        if self.gpu is None:
            self.gpu = GpuLayouts.from_catalogue(gpu)
        self.events.clear()
        self._started_s = None

    def initial_configuration(self) -> int | str:
        return self.inner.initial_configuration()

    def _layout(self, ident: int | str) -> Layout | None:
        assert self.gpu is not None, "reset() comes first"
        return None if ident == NO_MIG else self.gpu.layout(str(ident), "configuration")[1]

    def _wait_until(self, now_s: float) -> None:
        if self.speed_x is None:
            return
        if self._started_s is None:
            self._started_s = self.clock() - now_s / self.speed_x
        delay = self._started_s + now_s / self.speed_x - self.clock()
        if delay > 0:
            self.sleep(delay)

    def decide(self, snapshot: SnapshotT) -> int | str:
        choice = self.inner.decide(snapshot)
        current = snapshot.configuration
        if choice == current:
            return choice
        self._wait_until(float(snapshot.now_s))
        source, target = self._layout(current), self._layout(choice)
        if source is None or target is None:
            self.events.append(
                LiveEvent(
                    float(snapshot.now_s),
                    current,
                    choice,
                    (),
                    "skipped: no-mig is a MIG-mode change, which wattsched never makes",
                )
            )
            return choice
        assert self.gpu is not None
        steps = plan_repartition(self.gpu.geometry, source, target)
        outcome = self.executor(source, steps)
        log.info(
            "t=%.1f s: %s -> %s (%s -> %s): %s",
            snapshot.now_s,
            current,
            choice,
            layout_text(source),
            layout_text(target),
            outcome,
        )
        self.events.append(LiveEvent(float(snapshot.now_s), current, choice, steps, outcome))
        return choice
