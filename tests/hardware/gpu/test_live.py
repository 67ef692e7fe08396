"""The day runner's live mode: each repartition a policy decides is a plan, logged or applied on the fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_apply import facts_of

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.apply import apply_plan, current_layout
from wattsched.hardware.gpu.fake import FakeBackend
from wattsched.hardware.gpu.live import ApplyOnGpu, DryRun, LiveRepartitioner
from wattsched.hardware.mig_plan import GpuLayouts, plan_repartition, replay
from wattsched.mig.checks import check_partitioner
from wattsched.mig.partition import PARTITIONERS
from wattsched.mig.partition.runner import run_day
from wattsched.workload.generators import WorkloadSpec, generate_jobs


def a100_layouts() -> GpuLayouts:
    return GpuLayouts.from_catalogue(load_gpu("a100-40gb"))


@pytest.fixture
def fake_a100(repo_data: Path, tmp_path: Path) -> FakeBackend:
    path = tmp_path / "a100.json"
    path.write_text(json.dumps(facts_of(repo_data, a100=True)))
    return FakeBackend(path)


def day() -> list[Any]:
    return generate_jobs(WorkloadSpec(profile="alibaba-day"), 1)


def test_day_night_plans_replay_to_each_chosen_configuration(fake_a100: FakeBackend) -> None:
    gpu = a100_layouts()
    live = LiveRepartitioner(PARTITIONERS.make("day-night"), executor=DryRun())  # layouts from the day's GPU
    run = run_day(day(), live, horizon_s=86_400.0, gpu="a100-40gb", seed=1)
    repartitions = [d for d in run.decisions if d.repartitioned]
    assert len(live.events) == len(repartitions) == 2  # 2 -> 6 in the morning, 6 -> 2 at night
    layout = gpu.layout(str(run.initial_configuration), "")[1]
    for event, decision in zip(live.events, repartitions, strict=True):
        assert (event.time_s, event.target, event.outcome) == (
            decision.time_s,
            decision.configuration,
            "logged",
        )
        layout = replay(gpu.geometry, layout, event.steps)
        assert layout == gpu.layout(str(event.target), "")[1]
    # 2 = 4g@0 3g@4, 6 = 2g@0 2g@2 3g@4: the 3g.20gb at 4 is kept both ways.
    assert [s.to_dict()["profile"] for s in live.events[0].steps] == ["4g.20gb", "2g.10gb", "2g.10gb"]


def test_applied_on_the_fake_the_gpu_follows_the_policy(fake_a100: FakeBackend) -> None:
    gpu = a100_layouts()
    policy = PARTITIONERS.make("day-night")
    start = gpu.layout("2", "")[1]
    apply_plan(
        fake_a100, 0, (), plan_repartition(gpu.geometry, (), start)
    )  # the GPU starts in configuration 2
    live = LiveRepartitioner(policy, gpu, ApplyOnGpu(fake_a100, 0))
    run = run_day(day(), live, horizon_s=86_400.0, seed=1)
    assert run.initial_configuration == 2
    assert all(event.outcome == "applied" for event in live.events) and len(live.events) == 2
    final = [d.configuration for d in run.decisions if d.repartitioned][-1]
    assert current_layout(fake_a100, 0)[0] == gpu.layout(str(final), "")[1]


def test_pacing_waits_for_the_wall_clock() -> None:
    slept: list[float] = []
    now = [0.0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    live = LiveRepartitioner(
        PARTITIONERS.make("day-night"),
        a100_layouts(),
        DryRun(),
        speed_x=3600.0,
        clock=lambda: now[0],
        sleep=sleep,
    )
    run_day(day(), live, horizon_s=86_400.0, seed=1)
    # The first repartition is paced from its own time (start), the second waits for the hours in between.
    second = live.events[1].time_s - live.events[0].time_s
    assert sum(slept) == pytest.approx(second / 3600.0)


def test_no_mig_is_skipped() -> None:
    class Flip:
        name, scheduler = "flip", "edf-ss-restricted"

        def reset(self, gpu: Any, seed: int | None = None) -> None:
            pass

        def initial_configuration(self) -> int:
            return 3

        def decide(self, snapshot: Any) -> int | str:
            return "no-mig" if snapshot.now_s > 43_200 else 3

    live = LiveRepartitioner(Flip(), a100_layouts(), DryRun())
    live.decide(type("Snap", (), {"now_s": 50_000.0, "configuration": 3})())
    assert live.events[0].outcome.startswith("skipped: no-mig") and live.events[0].steps == ()


@pytest.mark.parametrize("name", ["day-night", "static", "no-mig"])
def test_live_dry_run_passes_the_shipped_partitioner_checker(name: str) -> None:
    # The live wrapper must not change what the policy decides: same checks as any partitioner, on two GPUs.
    check_partitioner(LiveRepartitioner(PARTITIONERS.make(name)), gpus=("a100-40gb", "h200-141gb"), days=1)
