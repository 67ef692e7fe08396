"""The shared fake MIG GPU: the counter integrates the power model, refusals are NVML's, no update is lost."""

from __future__ import annotations

import json
import multiprocessing
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wattsched.cluster.clocks import clock_schedule
from wattsched.errors import InputError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu import GpuBackend, GpuError
from wattsched.hardware.gpu.apply import apply_plan, current_layout
from wattsched.hardware.gpu.fake import FakeBackend
from wattsched.hardware.gpu.fake_state import (
    STATE_KEY,
    FakeGpuState,
    FakeStateBackend,
    gres_type,
    is_state_file,
    main,
)
from wattsched.hardware.mig_plan import GpuLayouts, layout_text, plan_repartition
from wattsched.workload.job import JobKind

MIG_UUID = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class Clock:
    def __init__(self, now_s: float = 1000.0) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def a100(tmp_path: Path, clock: Clock) -> FakeGpuState:
    """One A100-40GB at configuration 3: 4g.20gb@0, 2g.10gb@4, 1g.10gb@6."""
    return FakeGpuState.create(tmp_path / "gpus.json", [("a100-40gb", 3)], clock=clock)


def test_created_instances_are_the_configuration(a100: FakeGpuState, tmp_path: Path) -> None:
    instances = a100.instances(0)
    assert [(i.profile, i.start, i.size, i.compute) for i in instances] == [
        ("4g.20gb", 0, 4, 4),
        ("2g.10gb", 4, 2, 2),
        ("1g.10gb", 6, 2, 1),
    ]
    assert [i.gpu_instance_id for i in instances] == [1, 2, 3]
    assert all(MIG_UUID.match(i.uuid) for i in instances) and len({i.uuid for i in instances}) == 3
    assert not any(i.busy for i in instances)
    (gpu,) = a100.gpus()
    assert (gpu.catalogue, gpu.product, gpu.mig_mode) == ("a100-40gb", "NVIDIA A100 40GB", True)
    assert is_state_file(a100.path) and json.loads(a100.path.read_text())[STATE_KEY] == 1
    # UUIDs follow the seed: the same seed builds the same sandbox, another seed another one.
    again = FakeGpuState.create(tmp_path / "again.json", [("a100-40gb", 3)])
    other = FakeGpuState.create(tmp_path / "other.json", [("a100-40gb", 3)], seed=1)
    assert [i.uuid for i in again.instances(0)] == [i.uuid for i in instances]
    assert not {i.uuid for i in other.instances(0)} & {i.uuid for i in instances}


def test_counter_is_the_integral_of_the_power_model(a100: FakeGpuState, clock: Clock) -> None:
    big, _, small = a100.instances(0)
    # A100-40GB power by busy compute slices u (P1 Fig. 3): u=0 40 W, 1: 119, 4: 243.9, 5: 247.7.
    clock.now_s = 1010.0  # 10 s idle                         ->  400 J
    a100.set_busy(big.uuid, JobKind.INFERENCE)
    clock.now_s = 1040.0  # 30 s with 4g busy (u=4, 243.9 W)   -> 7317 J
    a100.set_busy(small.uuid, JobKind.TRAINING)
    clock.now_s = 1060.0  # 20 s with 4g + 1g (u=5, 247.7 W)   -> 4954 J
    a100.set_busy(big.uuid, None)
    clock.now_s = 1100.0  # 40 s with 1g (u=1, 119 W)          -> 4760 J
    assert a100.energy_mj(0) == (400 + 7317 + 4954 + 4760) * 1000
    assert a100.power_w(0) == 119.0
    assert a100.generation() == 3  # three changes; reads do not count


def test_a_server_turned_off_draws_nothing_and_pays_the_turn_on_energy(
    a100: FakeGpuState, clock: Clock
) -> None:
    assert a100.powered()
    clock.now_s = 1010.0  # 10 s idle at 40 W                  ->  400 J
    a100.set_powered(False)
    clock.now_s = 1100.0  # 90 s off                           ->    0 J
    assert not a100.powered() and a100.power_w(0) == 0.0 and a100.energy_mj(0) == 400_000
    a100.set_powered(True, turn_on_j_per_gpu=5400.5)  # booting   -> 5400.5 J
    a100.set_powered(True, turn_on_j_per_gpu=5400.0)  # already on: nothing more
    clock.now_s = 1110.0  # 10 s idle again                    ->  400 J
    assert a100.powered() and a100.energy_mj(0) == 400_000 + 5_400_500 + 400_000
    with pytest.raises(GpuError, match="turn-on energy must be a number of J >= 0"):
        a100.set_powered(True, turn_on_j_per_gpu=-1.0)


def test_counter_carries_fractions_of_a_millijoule(a100: FakeGpuState, clock: Clock) -> None:
    # 40 W for 1/3 s is 13 333.33 mJ: three reads must not drop the thirds.
    start_s = clock.now_s
    readings = []
    for step in range(1, 4):
        clock.now_s = start_s + step / 3
        readings.append(a100.energy_mj(0))
    assert readings == [13_333, 26_666, 40_000]
    clock.now_s = start_s  # a clock stepping back does not run the counter backwards
    assert a100.energy_mj(0) == 40_000


def test_per_kind_power_on_the_h200(tmp_path: Path, clock: Clock) -> None:
    state = FakeGpuState.create(tmp_path / "h200.json", [("h200-141gb", 3)], clock=clock)
    big = state.instances(0)[0]
    assert big.profile == "4g.71gb"
    state.set_busy(big.uuid, "training")
    clock.now_s += 10.0  # transformer-training at u = 4: 396.9 W
    assert state.power_w(0) == pytest.approx(396.9)
    state.set_busy(big.uuid, "inference")
    clock.now_s += 10.0  # transformer-inference at u = 4: 576.4 W
    assert state.energy_mj(0) == (3969 + 5764) * 1000


def test_a_locked_clock_scales_the_busy_power_above_idle_and_the_jobs_speed(
    tmp_path: Path, clock: Clock
) -> None:
    """On the H200 (which has a clock table) a locked SM clock puts the GPU at the nearest level: its busy
    power above idle times that level's power scale, its jobs at that level's speed, as in the simulator;
    idle power and an unlocked GPU are unchanged."""
    state = FakeGpuState.create(tmp_path / "h200.json", [("h200-141gb", 3)], clock=clock)
    schedule = clock_schedule(load_gpu("h200-141gb"))
    assert schedule is not None
    slow = len(schedule.sm_mhz) - 1  # the slowest level
    big = state.instances(0)[0]
    state.set_busy(big.uuid, "training")
    idle_w = load_gpu("h200-141gb").power.table().power_w[0]
    assert state.speed(0) == 1.0 and state.power_w(0) == pytest.approx(396.9)
    state.set_locked_clocks(0, (schedule.sm_mhz[slow] + 3, 2619))  # read back a little off the level
    assert state.speed(0) == schedule.speed[slow] < 1.0
    assert state.power_w(0) == pytest.approx(idle_w + (396.9 - idle_w) * schedule.power_scale[slow])
    before = state.energy_mj(0)
    clock.now_s += 10.0
    assert state.energy_mj(0) - before == pytest.approx(state.power_w(0) * 10_000.0, abs=1.0)
    state.set_busy(big.uuid, None)
    assert state.power_w(0) == pytest.approx(idle_w)  # idle power does not depend on the clock
    state.set_locked_clocks(0, None)
    assert state.speed(0) == 1.0


def test_refusals(a100: FakeGpuState) -> None:
    big, middle, small = a100.instances(0)
    a100.set_busy(big.uuid, "inference")
    with pytest.raises(GpuError, match="in use"):
        a100.destroy_instance(0, big.uuid)
    with pytest.raises(GpuError, match=r"overlaps 4g\.20gb@0"):
        a100.create_instance(0, "3g.20gb", 0)
    with pytest.raises(GpuError, match="cannot be placed at 5"):
        a100.create_instance(0, "2g.10gb", 5)
    with pytest.raises(GpuError, match=r"unknown profile '9g\.99gb'"):
        a100.create_instance(0, "9g.99gb", 0)
    with pytest.raises(GpuError, match="no MIG instance with UUID MIG-nope"):
        a100.destroy_instance(0, "MIG-nope")
    with pytest.raises(GpuError, match="no fake GPU with index 1"):
        a100.instances(1)
    with pytest.raises(GpuError, match="unknown job kind 'batch'"):
        a100.set_busy(small.uuid, "batch")
    # All or nothing: one unknown UUID leaves the known one idle.
    with pytest.raises(GpuError, match=r"MIG-nope.*nothing changed"):
        a100.set_busy([small.uuid, "MIG-nope"], "inference")
    assert not a100.instances(0)[2].busy
    # Freed placements can be taken again, by a new instance with a new UUID.
    a100.destroy_instance(0, middle.uuid)
    a100.destroy_instance(0, small.uuid)
    made = a100.create_instance(0, "3g.20gb", 4)
    assert (made.profile, made.start, made.gpu_instance_id) == ("3g.20gb", 4, 4)
    assert made.uuid not in {big.uuid, middle.uuid, small.uuid}
    assert [i.label for i in a100.instances(0)] == ["4g.20gb@0", "3g.20gb@4"]


def test_a_create_race_another_process_wins_takes_the_placement_first(a100: FakeGpuState) -> None:
    """With a race set for 1g.5gb, each create of a 1g.5gb finds an idle 1g.10gb just made at its placement
    (kept: the other process made it) and is refused as the placement taken; other profiles, and a taker
    that does not fit, are not raced; clearing the race ends it."""
    a100.set_create_race(0, "1g.5gb", "1g.10gb")
    middle = a100.instances(0)[1]
    a100.destroy_instance(0, middle.uuid)
    before = a100.generation()
    with pytest.raises(GpuError, match=r"1g\.5gb@4 overlaps 1g\.10gb@4 .*placement taken"):
        a100.create_instance(0, "1g.5gb", 4)
    assert [i.label for i in a100.instances(0)] == ["4g.20gb@0", "1g.10gb@4", "1g.10gb@6"]
    assert not a100.instances(0)[1].busy and a100.generation() == before + 1
    # The taker at 4 is there: a 1g.5gb at 5 races a 1g.10gb that cannot be placed at 5, so it is refused
    # by the taker at 4 alone, and nothing is added.
    with pytest.raises(GpuError, match=r"1g\.5gb@5 overlaps 1g\.10gb@4"):
        a100.create_instance(0, "1g.5gb", 5)
    assert len(a100.instances(0)) == 3
    taker = a100.instances(0)[1]
    a100.destroy_instance(0, taker.uuid)
    assert a100.create_instance(0, "2g.10gb", 4).label == "2g.10gb@4"  # not raced
    a100.destroy_instance(0, a100.instances(0)[1].uuid)
    a100.set_create_race(0, None)
    assert a100.create_instance(0, "1g.5gb", 4).label == "1g.5gb@4"
    assert [i.label for i in a100.instances(0)] == ["4g.20gb@0", "1g.5gb@4", "1g.10gb@6"]
    with pytest.raises(GpuError, match=r"unknown profile '9g\.99gb'"):
        a100.set_create_race(0, "1g.5gb", "9g.99gb")


def test_unreadable_files(tmp_path: Path, repo_data: Path) -> None:
    with pytest.raises(InputError, match="cannot open"):
        FakeGpuState(tmp_path / "missing.json").gpus()
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        FakeGpuState(bad).gpus()
    snapshot = repo_data / "hardware" / "h200" / "nvml_facts.json"
    assert not is_state_file(snapshot) and not is_state_file(bad)
    with pytest.raises(InputError, match="not a fake GPU state file"):
        FakeGpuState(snapshot).gpus()


def _toggle(path: str, instance_uuid: str, rounds: int) -> None:
    state = FakeGpuState(path)
    for number in range(rounds):
        state.set_busy(instance_uuid, "inference" if number % 2 else None)


def test_two_processes_lose_no_update(a100: FakeGpuState) -> None:
    big, _, small = a100.instances(0)
    rounds = 60  # ends busy (the last round is odd)
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_toggle, args=(str(a100.path), uuid, rounds))
        for uuid in (big.uuid, small.uuid)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    # Every change was written on top of the other process's: none was lost.
    assert a100.generation() == 2 * rounds
    assert [i.busy for i in a100.instances(0)] == [True, False, True]
    assert not list(a100.path.parent.glob(".gpus.json.*"))  # no temporary file left behind


def test_slurm_files(a100: FakeGpuState, tmp_path: Path) -> None:
    uuids = [i.uuid for i in a100.instances(0)]
    assert a100.fake_gpus_conf() == [
        f"a100_4g.20gb|2|0-1|(null)|/dev/fakegpu0|{uuids[0]}|nvidia_gpu_env",
        f"a100_2g.10gb|2|0-1|(null)|/dev/fakegpu1|{uuids[1]}|nvidia_gpu_env",
        f"a100_1g.10gb|2|0-1|(null)|/dev/fakegpu2|{uuids[2]}|nvidia_gpu_env",
    ]
    lines = a100.fake_gpus_conf(device_file="/tmp/sandbox/dev/nvidia{n}", cpu_count=8, cpu_range="0-3")
    assert lines[2] == f"a100_1g.10gb|8|0-3|(null)|/tmp/sandbox/dev/nvidia2|{uuids[2]}|nvidia_gpu_env"
    assert a100.gres_line() == "gpu:a100_4g.20gb:1,gpu:a100_2g.10gb:1,gpu:a100_1g.10gb:1"
    two = FakeGpuState.create(tmp_path / "two.json", [("a100-40gb", 4), ("h200-141gb", 3)])
    assert two.gres_line() == (
        "gpu:a100_4g.20gb:1,gpu:a100_1g.5gb:2,gpu:a100_1g.10gb:1,"
        "gpu:h200_4g.71gb:1,gpu:h200_2g.35gb:1,gpu:h200_1g.35gb:1"
    )
    assert [line.split("|")[4] for line in two.fake_gpus_conf()][-1] == "/dev/fakegpu6"
    assert gres_type("a100-40gb", "3g.20gb") == "a100_3g.20gb"
    assert gres_type(load_gpu("h200-141gb"), "1g.18gb+me") == "h200_1g.18gb_me"


def test_command_line(a100: FakeGpuState, capsys: pytest.CaptureFixture[str]) -> None:
    big, middle, _ = a100.instances(0)
    path = str(a100.path)
    assert main([path, "busy", f"{big.uuid},{middle.uuid}", "--kind", "training"]) == 0
    assert [i.kind for i in a100.instances(0)] == [JobKind.TRAINING, JobKind.TRAINING, None]
    assert main([path, "idle", big.uuid]) == 0
    assert main([path, "show"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [item["kind"] for item in shown["gpus"][0]["instances"]] == [None, "training", None]
    assert shown["gpus"][0]["power_w"] == 160.0  # u = 2
    assert main([path, "busy", "MIG-nope"]) == 2
    assert main([str(a100.path.parent / "missing.json"), "show"]) == 2
    error = capsys.readouterr().err
    assert len(error.splitlines()) == 2 and "MIG-nope" in error and "cannot open" in error
    with pytest.raises(SystemExit) as exited:
        main([path, "busy", big.uuid, "--kind", "batch"])
    assert exited.value.code == 2 and len(capsys.readouterr().err.splitlines()) == 1


def test_command_line_as_a_module(a100: FakeGpuState) -> None:
    small = a100.instances(0)[2]
    module = [sys.executable, "-m", "wattsched.hardware.gpu.fake_state", str(a100.path)]
    done = subprocess.run([*module, "busy", small.uuid], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert a100.instances(0)[2].kind is JobKind.INFERENCE
    refused = subprocess.run([*module, "idle", "MIG-x"], capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1


def test_backend_reads_the_live_file(a100: FakeGpuState, clock: Clock) -> None:
    backend = FakeStateBackend(a100.path, clock=clock)
    assert isinstance(backend, GpuBackend)
    assert backend.device_count() == 1 and backend.mig_mode(0) == (True, True)
    assert backend.identity(0).name == "NVIDIA A100 40GB"
    ids = {p.name: p.nvml_id for p in backend.profiles(0)}
    assert [(i.profile_id, i.start, i.size) for i in backend.gpu_instances(0)] == [
        (ids["4g.20gb"], 0, 4),
        (ids["2g.10gb"], 4, 2),
        (ids["1g.10gb"], 6, 2),
    ]
    assert backend.energy_j(0) == 0.0
    a100.set_busy(a100.instances(0)[0].uuid, "inference")  # another writer (the Prolog)
    clock.now_s += 2.0
    assert backend.power_w(0) == 243.9 and backend.energy_j(0) == pytest.approx(2 * 243.9)
    assert [p.gpu_instance_id for p in backend.processes(0)] == [1]
    with pytest.raises(GpuError, match="in use"):
        backend.destroy_gpu_instance(0, 1)
    backend.destroy_gpu_instance(0, 3)
    assert [i.label for i in a100.instances(0)] == ["4g.20gb@0", "2g.10gb@4"]  # the file changed
    made = backend.create_gpu_instance(0, ids["1g.5gb"], 6)
    assert (made.start, made.size) == (6, 1)
    assert backend.supported_clocks_mhz(0) == {}  # the A100 entry lists no clocks


def test_backend_clocks_and_limits_come_from_the_catalogue(tmp_path: Path) -> None:
    FakeGpuState.create(tmp_path / "h200.json", [("h200-141gb", 1)])
    backend = FakeStateBackend(tmp_path / "h200.json")
    assert backend.power_limits(0).enforced_w == 700.0
    assert backend.clocks(0).sm_now_mhz == 1980
    backend.set_locked_clocks(0, 1410, 3201)
    assert (backend.clocks(0).sm_now_mhz, backend.clocks(0).mem_now_mhz) == (1410, 3201)
    with pytest.raises(GpuError, match="not a supported clock pair"):
        backend.set_locked_clocks(0, 1411, 3201)
    backend.reset_clocks(0)
    assert backend.clocks(0).sm_now_mhz == 1980


def test_a_repartition_plan_applies_to_the_file(a100: FakeGpuState) -> None:
    backend = FakeStateBackend(a100.path)
    layouts = GpuLayouts.from_catalogue(load_gpu("a100-40gb"))
    target = dict(layouts.configurations)[2]  # 4g.20gb + 3g.20gb
    source, _ = current_layout(backend, 0)
    apply_plan(backend, 0, source, plan_repartition(layouts.geometry, source, target))
    assert layout_text(current_layout(backend, 0)[0]) == layout_text(target)
    assert [i.label for i in FakeGpuState(a100.path).instances(0)] == ["4g.20gb@0", "3g.20gb@4"]


def test_snapshot_files_still_open_as_snapshots(repo_data: Path) -> None:
    snapshot = repo_data / "hardware" / "h200" / "nvml_facts.json"
    assert isinstance(FakeBackend(snapshot), FakeBackend)
    with pytest.raises(InputError):
        FakeStateBackend(snapshot)
