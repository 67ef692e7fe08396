"""The shipped checkers run over every entry of every registry (a new plug-in is checked on arrival), and they
catch broken plug-ins."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from wattsched.hardware.catalogue import available
from wattsched.mig import POLICIES, Assignment, SchedulerView
from wattsched.mig.checks import CheckError, check_partitioner, check_policy
from wattsched.mig.partition import PARTITIONERS
from wattsched.mig.policies.edf_fs import EdfFastestSlice


@pytest.mark.parametrize("name", POLICIES.available())
def test_every_registered_policy_passes_its_checker_on_every_gpu(name: str) -> None:
    check_policy(name, gpus=available("gpu"), traces=2)


@pytest.mark.parametrize("name", [n for n in PARTITIONERS.available() if n != "dynamic"])
def test_every_registered_partitioner_passes_its_checker(name: str) -> None:
    gpus = ("a100-40gb", "h200-141gb")
    planner = name in ("lookahead", "rollout")  # simulate ahead at each decision: shorter days
    check_partitioner(PARTITIONERS.make(name), gpus=gpus, days=1, hours=2.0 if planner else 6.0)


class _IdlesASlice(EdfFastestSlice):
    name = "idles"

    def assign(self, view: SchedulerView) -> Assignment | None:
        decision = super().assign(view)
        if decision is None or len(decision) < 2:
            return decision
        return Assignment([-1, *decision[1:]])


class _WritesTheView(EdfFastestSlice):
    name = "writes"

    def assign(self, view: SchedulerView) -> Assignment | None:
        remaining: Any = view.remaining
        if remaining:
            remaining[0] = 0.5  # forbidden: the view is the engine's state
        return super().assign(view)


class _PlacesTwice(EdfFastestSlice):
    name = "twice"

    def assign(self, view: SchedulerView) -> Assignment | None:
        decision = super().assign(view)
        if decision is None or len(decision) < 2 or decision[0] < 0:
            return decision
        return Assignment([decision[0], decision[0], *decision[2:]])


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (_IdlesASlice(), "idles while"),
        (_WritesTheView(), "wrote its view"),
        (_PlacesTwice(), "two slices"),
    ],
)
def test_the_policy_checker_catches_broken_policies(policy: Any, message: str) -> None:
    with pytest.raises(CheckError, match=message):
        check_policy(policy, traces=1)


@dataclass
class _ChoosesANumberTheGpuLacks:
    scheduler: str = "edf-ss-restricted"
    name: str = "bad"

    def reset(self, gpu: Any, seed: int | None = None) -> None:
        del gpu, seed

    def initial_configuration(self) -> int:
        return 2

    def decide(self, snapshot: Any) -> int:
        return 99 if snapshot.now_s > 600 else 2


def test_the_partitioner_checker_catches_an_invalid_choice() -> None:
    with pytest.raises(CheckError, match="chose 99"):
        check_partitioner(_ChoosesANumberTheGpuLacks(), days=1, hours=1.0)


def test_a_hand_built_view_tests_a_policy_without_a_simulation() -> None:
    from wattsched.mig import JobState, ViewJob, build_view

    # Configuration 3 of the A100-40GB: 4g@0 (index 3), 2g@4 (index 1), 1g.10gb@6 (index 0). Durations are
    # (1g, 2g, 3g, 4g, 7g, full). Job 0 runs on the 4g slice; jobs 1 and 2 wait.
    slices: Sequence[tuple[int, int, int]] = [(4, 0, 3), (2, 4, 1), (1, 6, 0)]
    jobs = [
        ViewJob(500.0, (400, 200, 150, 100, 60, 60), 0.5, JobState.RUNNING, 0),
        ViewJob(300.0, (400, 200, 150, 100, 60, 60)),  # earlier deadline than job 0: EDF-FS preempts it
        ViewJob(900.0, (100, 100, 100, 100, 100, 100)),
    ]
    policy = POLICIES.make("edf-fs")
    view = build_view(0.0, slices, jobs, rank=policy)
    assert view.state(0) is JobState.RUNNING and view.state(1) is JobState.WAITING
    assert math.isinf(view.finish_s[1]) and view.finish_s[0] == 50.0
    # EDF order 1, 0, 2: job 1 takes the fastest free slice (4g), job 0 the 2g, job 2 the 1g (ties: smaller).
    assert policy.assign(view) == (1, 0, 2)
    restricted = POLICIES.make("edf-ss-restricted")
    # Restricted: job 0 keeps the 4g; job 1 meets its deadline on the 2g (200 s) and takes it (slowest
    # feasible); job 2 takes the 1g.
    assert restricted.assign(build_view(0.0, slices, jobs, rank=restricted)) == (0, 1, 2)
