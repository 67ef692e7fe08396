"""GPU clocks in the Slurm controller, on an in-memory Slurm and a fake H200 state file: the clock chosen
is the data-centre simulator's (computed here through :mod:`wattsched.cluster.clocks` for the same jobs),
locked in the fake file, journaled, followed by the model, unlocked when idle and at stop; a dry run, an
unsupported clock and a GPU without a clock table change nothing. No real GPU is touched."""

from __future__ import annotations

import json
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.cluster.clocks import clock_schedule
from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu import GpuError
from wattsched.hardware.gpu.fake_state import FakeGpuState, FakeStateBackend, gres_type
from wattsched.mig.clock import tightest_slack_ratio
from wattsched.mig.view import JobState as ViewState
from wattsched.mig.view import ViewJob, build_view
from wattsched.slurm import client as client_module
from wattsched.slurm.client import FakeSlurmClient, JobState
from wattsched.slurm.clocks import CLOCK_JOB_ID
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.jobs import engine_job
from wattsched.slurm.state import StateStore
from wattsched.workload.job import JobKind, Scaling

H200 = load_gpu("h200-141gb")
SCHEDULE = clock_schedule(H200)
assert SCHEDULE is not None
CONFIG = """
[slurm]
partition = "mig"
state = "state.db"
[[nodes]]
name = "node0"
gpus = ["{gpu}"]
configuration = 3
backend = "fake:{file}"
{clocks}
"""


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class NoLowClocks(FakeStateBackend):
    """A fake H200 whose driver does not list the clocks below 1400 MHz."""

    def supported_clocks_mhz(self, index: int) -> dict[int, tuple[int, ...]]:
        return {
            mem: tuple(c for c in sm if c >= 1400) for mem, sm in super().supported_clocks_mhz(index).items()
        }


def _setup(
    tmp_path: Path,
    *,
    clocks: str = "[clocks]\nenabled = true",
    dry_run: bool = False,
    backend: type[FakeStateBackend] = FakeStateBackend,
) -> tuple[Controller, FakeSlurmClient, FakeGpuState, Clock]:
    clock = Clock()
    gpu_file = tmp_path / "gpu.json"
    fake = FakeGpuState.create(gpu_file, [("h200-141gb", 3)], clock=clock)
    path = tmp_path / "wattsched.toml"
    path.write_text(CONFIG.format(gpu="h200-141gb", file=gpu_file, clocks=clocks))
    config = load_config(path)
    instances = fake.instances(0)
    slurm = FakeSlurmClient(
        {"node0": [gres_type(fake.gpu(0), i.profile) for i in instances]},
        uuids={"node0": [i.uuid for i in instances]},
        clock=clock,
    )
    controller = Controller(
        config,
        slurm,
        StateStore(":memory:" if dry_run else config.state_path),
        dry_run=dry_run,
        clock=clock,
        meters={"node0": FakeGpuState(gpu_file, clock=clock)},
        gpu_backends={"node0": backend(gpu_file, clock=clock)},
    )
    return controller, slurm, fake, clock


def _expected_mhz(controller: Controller, job_id: int, work_s: float, deadline_s: float, now: float) -> int:
    """What the data-centre simulator's rule gives for one job running alone at ``now`` (epoch seconds),
    with all its work left: its duration on its slice from its annotation, the tightest slack ratio and the
    H200's clock schedule, through the simulator's own functions."""
    assert SCHEDULE is not None
    row = controller.store.job(job_id)
    assert row is not None and row.slice_index is not None
    slices = H200.configuration(3).slices
    job = engine_job("x", 0.0, deadline_s, JobKind.TRAINING, Scaling.LINEAR, work_s)
    duration = job.duration_for_size(slices[row.slice_index].compute)
    origin = controller.origin_s
    view = build_view(
        now - origin,
        [(s.compute, s.start, s.duration_index) for s in slices],
        [ViewJob(deadline_s - origin, job.durations_s, 1.0, ViewState.RUNNING, row.slice_index)],
    )
    ratio = tightest_slack_ratio(view, now - origin)
    assert ratio == pytest.approx((deadline_s - now) / duration)
    return SCHEDULE.sm_mhz[SCHEDULE.level_for(ratio)]


def _clock_actions(controller: Controller) -> list[tuple[str, str, dict[str, object]]]:
    return [(a.kind, a.status, a.args) for a in controller.store.actions(CLOCK_JOB_ID)]


def test_with_slack_the_clock_is_locked_lower_as_the_simulator_chooses_then_reset_when_idle(
    tmp_path: Path,
) -> None:
    assert SCHEDULE is not None
    controller, slurm, fake, clock = _setup(tmp_path)
    start = clock.now
    job = slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()  # released on a slice: the model runs it from now
    expected = _expected_mhz(controller, job, 100.0, start + 10_000.0, clock.now)
    # With this much slack the rule gives the energy-optimal level: 1335 MHz on the H200 (below 1980).
    assert expected == SCHEDULE.sm_mhz[SCHEDULE.optimum_level] == 1335
    assert fake.fact(0).locked_clocks_mhz == (expected, 3201)  # the default memory clock
    assert _clock_actions(controller) == [
        ("lock_clocks", "done", {"node": "node0", "gpu": 0, "sm_mhz": 1335, "mem_mhz": 3201})
    ]
    assert any("SM clock locked at 1335 MHz" in text for _, text in controller.store.decisions())
    # The model runs the job at the locked level: it ends its time at the default clock × τ(level) later.
    model = controller.gpus[0]
    level = SCHEDULE.sm_mhz.index(1335)
    assert model.sim.clock_level == level
    row = controller.store.job(job)
    assert row is not None and row.slice_index is not None
    duration = model.sim.duration_on(model.ranks[job], row.slice_index)
    (end,) = model.sim.predicted_completions().values()
    assert end == pytest.approx(start - controller.origin_s + duration * SCHEDULE.time_factor[level])
    # Slurm starts it; the clock stays (the rule never goes below the optimum); nothing is sent again.
    clock.now += 1.0
    slurm.schedule()
    controller.run_once()
    clock.now += 100.0
    controller.run_once()
    assert len(_clock_actions(controller)) == 1
    # It ends: the GPU is idle and its clocks are unlocked.
    clock.now += 10.0
    slurm.finish(job)
    controller.run_once()
    assert fake.fact(0).locked_clocks_mhz is None
    assert [(kind, status) for kind, status, _ in _clock_actions(controller)] == [
        ("lock_clocks", "done"),
        ("reset_clocks", "done"),
    ]
    assert model.sim.clock_level == SCHEDULE.initial_level
    controller.run_once()
    assert len(_clock_actions(controller)) == 2  # idle and unlocked: nothing more


def test_with_a_tight_deadline_the_clock_is_the_highest(tmp_path: Path) -> None:
    controller, slurm, fake, clock = _setup(tmp_path)
    job = slurm.submit(comment="wattsched: work=100s deadline=+150s")
    controller.run_once()
    expected = _expected_mhz(controller, job, 100.0, clock.now + 150.0, clock.now)
    assert expected == max(H200.clocks.sm_mhz) == 1980  # type: ignore[union-attr]
    assert fake.fact(0).locked_clocks_mhz == (1980, 3201)


def test_the_progress_of_a_job_follows_the_clock(tmp_path: Path) -> None:
    """The work a job did while the clock was locked counts at that level's speed (a requeue keeps it)."""
    assert SCHEDULE is not None
    controller, slurm, _fake, clock = _setup(tmp_path)
    job = slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    controller.run_once()
    locked_at = clock.now - 1.0
    # 50 s at 1335 MHz is 50 / τ(1335) s of work at the default clock.
    speed = SCHEDULE.speed[SCHEDULE.sm_mhz.index(1335)]
    assert controller.clocks.work_s("node0/0", locked_at, locked_at + 50.0) == pytest.approx(50.0 * speed)
    assert controller.clocks.work_s("node0/0", locked_at - 10.0, locked_at) == 10.0  # before: default clock
    assert controller.clocks.work_s("node0/1", locked_at, locked_at + 50.0) == 50.0  # never changed
    row = controller.store.job(job)
    assert row is not None and row.run_start_s is not None
    model = controller.gpus[0]
    duration = model.sim.duration_on(model.ranks[job], row.slice_index)  # type: ignore[arg-type]
    left = controller._remaining_at(model, row, row.run_start_s + 50.0)
    assert left == pytest.approx(1.0 - 50.0 * speed / duration)


def test_stopping_the_controller_resets_the_clocks(tmp_path: Path) -> None:
    controller, slurm, fake, _ = _setup(tmp_path)
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()
    assert fake.fact(0).locked_clocks_mhz == (1335, 3201)
    controller.close()
    assert fake.fact(0).locked_clocks_mhz is None
    assert [kind for kind, status, _ in _clock_actions(controller) if status == "done"] == [
        "lock_clocks",
        "reset_clocks",
    ]
    assert any("the controller stops" in text for _, text in controller.store.decisions())
    controller.close()
    assert len(_clock_actions(controller)) == 2  # already unlocked: nothing sent


def test_a_dry_run_leaves_the_gpu_untouched(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    controller, slurm, fake, _ = _setup(tmp_path, dry_run=True)
    FakeStateBackend(fake.path).set_locked_clocks(0, 1980, 3201)  # someone's lock: stays as it is
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    with caplog.at_level(logging.INFO, logger="wattsched.slurm"):
        controller.run_once()
        controller.close()
    assert fake.fact(0).locked_clocks_mhz == (1980, 3201)
    assert "dry run: would lock node0/0 at SM 1335 MHz" in caplog.text
    assert _clock_actions(controller) == []


def test_an_unsupported_clock_is_logged_once_and_the_gpu_left_as_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    controller, slurm, fake, clock = _setup(tmp_path, backend=NoLowClocks)
    FakeStateBackend(fake.path, clock=clock).set_locked_clocks(0, 1980, 3201)
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    with caplog.at_level(logging.WARNING, logger="wattsched.slurm"):
        controller.run_once()
        clock.now += 2.0
        controller.run_once()
    refused = [r for r in caplog.records if "not a clock pair this GPU supports" in r.getMessage()]
    assert len(refused) == 1 and "SM 1335 MHz at memory 3201 MHz" in refused[0].getMessage()
    assert fake.fact(0).locked_clocks_mhz == (1980, 3201)
    assert _clock_actions(controller) == []
    assert controller.gpus[0].sim.clock_level == SCHEDULE.initial_level  # type: ignore[union-attr]


def test_clocks_are_off_by_default_and_the_model_has_no_clock_levels(tmp_path: Path) -> None:
    controller, slurm, fake, _ = _setup(tmp_path, clocks="")
    assert not controller.config.clocks.enabled and not controller.config.clocks.manages("node0")
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()
    controller.close()
    assert fake.fact(0).locked_clocks_mhz is None and _clock_actions(controller) == []
    with pytest.raises(ValueError, match="no clock levels"):
        controller.gpus[0].sim.observe_clock_level(0, 0.0)


def test_a_pending_clock_action_at_start_is_closed_and_the_first_pass_decides(tmp_path: Path) -> None:
    controller, _, fake, _ = _setup(tmp_path)
    store = controller.store
    store.journal(
        CLOCK_JOB_ID, "lock_clocks", {"node": "node0", "gpu": 0, "sm_mhz": 990, "mem_mhz": 3201}, 0.0
    )
    controller.run_once()  # no job: the GPU is unlocked, whatever a crashed run left
    assert [(kind, status) for kind, status, _ in _clock_actions(controller)] == [
        ("lock_clocks", "superseded"),
        ("reset_clocks", "done"),
    ]
    assert fake.fact(0).locked_clocks_mhz is None


@pytest.mark.parametrize(
    ("gpu", "clocks", "message"),
    [
        (
            "a100-40gb",
            "[clocks]\nenabled = true",
            "GPU 0 (a100-40gb) has no clock table in the catalogue (clocks: unsupported)",
        ),
        ("h200-141gb", "[clocks]\nenabled = 1", "clocks.enabled must be true or false"),
        ("h200-141gb", '[clocks]\nenabled = true\nnodes = ["node1"]', "clocks.nodes: no node 'node1'"),
        ("h200-141gb", "[clocks]\nenabled = true\nmem_mhz = 1000", "1000 MHz is not a memory clock"),
        ("h200-141gb", "[clocks]\nenable = true", "unknown key clocks.enable"),
    ],
)
def test_a_bad_clocks_section_is_refused_in_one_line(
    tmp_path: Path, gpu: str, clocks: str, message: str
) -> None:
    path = tmp_path / "wattsched.toml"
    FakeGpuState.create(tmp_path / "gpu.json", [(gpu, 3)])
    path.write_text(CONFIG.format(gpu=gpu, file=tmp_path / "gpu.json", clocks=clocks))
    with pytest.raises(ConfigError, match="clocks") as caught:
        load_config(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_gpu_without_a_clock_table_may_stay_out_of_the_clocks(tmp_path: Path) -> None:
    path = tmp_path / "wattsched.toml"
    path.write_text(
        CONFIG.format(gpu="a100-40gb", file=tmp_path / "gpu.json", clocks="[clocks]\nenabled = false")
    )
    assert not load_config(path).clocks.manages("node0")
    path.write_text(
        CONFIG.format(
            gpu="a100-40gb", file=tmp_path / "gpu.json", clocks="[clocks]\nenabled = true\nnodes = []"
        )
    )
    assert not load_config(path).clocks.manages("node0")


def test_status_shows_each_gpus_clock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    controller, slurm, _, _ = _setup(tmp_path)
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()
    config = str(tmp_path / "wattsched.toml")
    assert main(["slurm", "status", "--config", config, "--json"]) == 0
    clock = json.loads(capsys.readouterr().out)["nodes"][0]["gpus"][0]["clock"]
    assert clock["managed"] is True and (clock["sm_mhz"], clock["mem_mhz"]) == (1335, 3201)
    assert main(["slurm", "status", "--config", config]) == 0
    assert "configuration 3, clock SM 1335 MHz, memory 3201 MHz (locked))" in capsys.readouterr().out
    controller.close()
    assert main(["slurm", "status", "--config", config, "--json"]) == 0
    clock = json.loads(capsys.readouterr().out)["nodes"][0]["gpus"][0]["clock"]
    assert clock["sm_mhz"] is None and clock["since_s"] is not None
    assert main(["slurm", "status", "--config", config]) == 0
    assert "clock unlocked" in capsys.readouterr().out


def test_a_slurm_job_state_is_untouched_by_the_clocks(tmp_path: Path) -> None:
    """Clock actions are the GPU's: they never reach Slurm."""
    controller, slurm, _, clock = _setup(tmp_path)
    job = slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()
    clock.now += 1.0
    slurm.schedule()
    controller.run_once()
    controller.close()
    assert slurm.job(job).state is JobState.RUNNING  # type: ignore[union-attr]
    assert slurm.calls and all(
        call[0] in ("set_gres", "release", "set_admin_comment") for call in slurm.calls
    )


def test_sigterm_stops_the_controller_and_its_clocks_are_reset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``wattsched slurm controller`` as a service: a pass locks the clock, SIGTERM stops it, the clock is
    unlocked on the way out."""
    state = FakeGpuState.create(tmp_path / "gpu.json", [("h200-141gb", 3)])
    instances = state.instances(0)
    slurm = FakeSlurmClient(
        {"node0": [gres_type(state.gpu(0), i.profile) for i in instances]},
        uuids={"node0": [i.uuid for i in instances]},
    )
    monkeypatch.setattr(client_module, "SlurmClient", lambda *args, **kwargs: slurm)
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    config = tmp_path / "wattsched.toml"
    config.write_text(CONFIG.format(gpu="h200-141gb", file="gpu.json", clocks="[clocks]\nenabled = true"))
    locked = []
    run = Controller.run

    def one_pass_then_sigterm(self: Controller, should_stop: Callable[[], bool], *args: object) -> None:
        self.run_once()
        locked.append(state.fact(0).locked_clocks_mhz)
        os.kill(os.getpid(), signal.SIGTERM)  # the controller's handler turns it into should_stop()
        run(self, should_stop)

    monkeypatch.setattr(Controller, "run", one_pass_then_sigterm)
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert main(["slurm", "controller", "--config", str(config)]) == 0
    finally:
        signal.signal(signal.SIGTERM, handlers[0])
        signal.signal(signal.SIGINT, handlers[1])
    assert locked == [(1335, 3201)]
    assert state.fact(0).locked_clocks_mhz is None


class Unprivileged(FakeStateBackend):
    """A fake GPU that refuses changes, as NVML does for a user who is not root."""

    def privileged(self) -> bool:
        return False


def test_clocks_without_the_right_to_change_them_are_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(GpuError, match="node 'node0' needs root") as caught:
        _setup(tmp_path, backend=Unprivileged)
    assert "\n" not in str(caught.value)
    controller, slurm, fake, _ = _setup(tmp_path, backend=Unprivileged, dry_run=True)  # a dry run may look
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()
    assert fake.fact(0).locked_clocks_mhz is None


def test_the_memory_clock_is_the_configured_one(tmp_path: Path) -> None:
    controller, slurm, fake, _ = _setup(tmp_path, clocks="[clocks]\nenabled = true\nmem_mhz = 2201")
    slurm.submit(comment="wattsched: work=100s deadline=+10000s")
    controller.run_once()
    assert fake.fact(0).locked_clocks_mhz == (1335, 2201)
