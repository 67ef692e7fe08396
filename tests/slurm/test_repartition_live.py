"""Live repartitioning on a real Slurm (the sandbox: munge, slurmctld and slurmd on this host, fake MIG GPUs):
the controller, run as ``wattsched slurm controller``, changes a GPU from configuration 3 (4g.20gb@0 +
2g.10gb@4 + 1g.10gb@6) to 4 (4g.20gb@0 + 1g.5gb@4 + 1g.5gb@5 + 1g.10gb@6) while jobs run on the kept 4g and
on the destroyed 2g (waited for, or, preemptible, signalled and requeued); then a controller killed between
the MIG change and the GRES reload is restarted, and one killed in the wait phase and again while the reload
command hangs; the fake GPU refuses a destroy (a process on the slice) or a create (another process takes the
placement first): retried, and rolled back after ``max_attempts``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import JobState
from wattsched.slurm.gres_update import device_uuids

from .conftest import require_slurm, sandbox_directory

TARGET = ["4g.20gb@0", "1g.5gb@4", "1g.5gb@5", "1g.10gb@6"]
#: Configuration 3 by "day", 4 by "night": the day of the controller's clock ends this many seconds after
#: its first start, so the first decision epoch after that repartitions.
SWITCH_S = 3.0


@pytest.fixture
def box() -> Iterator[sandbox_module.Sandbox]:
    require_slurm()
    directory = sandbox_directory("wattsched-repart-")
    started = sandbox_module.start(directory, gpus=[("a100-40gb", 3)], spare_devices=True)
    try:
        yield started
    finally:
        sandbox_module.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def _config(box: sandbox_module.Sandbox, path: Path, repartition: dict[str, object]) -> Path:
    config = sandbox_module.write_controller_config(
        box,
        path,
        {"grace_s": 1},
        partitioner="day-night",
        partitioner_options={
            "day_configuration": 3,
            "night_configuration": 4,
            "day_start_h": 0.0,
            "day_end_h": SWITCH_S / 3600.0,
        },
        repartition={"max_attempts": 20, **repartition},
    )
    config.write_text(
        config.read_text().replace("[slurm]\n", '[slurm]\npoll_s = 0.5\ntime_origin = "start"\n')
    )
    return config


def _env(box: sandbox_module.Sandbox) -> dict[str, str]:
    return dict(os.environ, **box.env)


def _controller(box: sandbox_module.Sandbox, config: Path) -> subprocess.Popen[bytes]:
    log = open(box.directory / "controller.log", "ab")  # noqa: SIM115 - the child keeps it
    return subprocess.Popen(
        [sys.executable, "-m", "wattsched", "slurm", "controller", "--config", str(config)],
        stdout=log,
        stderr=log,
        env=_env(box),
    )


def _sbatch(box: sandbox_module.Sandbox, script: Path, comment: str) -> int:
    out = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--open-mode=append",
            f"--comment={comment}",
            "-o",
            f"{script}.%j.out",
            str(script),
        ],
        env=_env(box),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out.strip().split(";")[0])


def _script(tmp_path: Path, name: str, seconds: float) -> Path:
    path = tmp_path / f"{name}.sh"
    path.write_text(
        f'#!/bin/sh\necho "start $CUDA_VISIBLE_DEVICES $SLURM_RESTART_COUNT"\nsleep {seconds}\necho done\n'
    )
    path.chmod(0o755)
    return path


def _status(box: sandbox_module.Sandbox, config: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "wattsched", "slurm", "status", "--json", "--config", str(config)],
        env=_env(box),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out))


def _rows(box: sandbox_module.Sandbox, config: Path) -> dict[int, dict[str, object]]:
    out = subprocess.run(
        [sys.executable, "-m", "wattsched", "slurm", "jobs", "--json", "--config", str(config)],
        env=_env(box),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {row["job_id"]: row for row in json.loads(out)}


def _wait(predicate: Callable[[], object], timeout_s: float, what: str, box: sandbox_module.Sandbox) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    log = (box.directory / "controller.log").read_text(errors="replace")[-3000:]
    raise AssertionError(f"timed out waiting for {what}; controller log:\n{log}")


def _repartition(box: sandbox_module.Sandbox, config: Path) -> dict[str, object] | None:
    entries = _status(box, config)["repartitions"]
    assert isinstance(entries, list)
    return entries[-1] if entries else None


def _attempts(box: sandbox_module.Sandbox, config: Path) -> int:
    """The refused tries of the last repartition (0 before it starts)."""
    return int((_repartition(box, config) or {}).get("attempts") or 0)  # type: ignore[call-overload]


def _layout(box: sandbox_module.Sandbox) -> list[str]:
    return [i.label for i in FakeGpuState(box.fake_gpu_state).instances(0)]


def _node_gres(box: sandbox_module.Sandbox) -> str:
    out = subprocess.run(
        ["scontrol", "show", "node", box.node], env=_env(box), check=True, capture_output=True, text=True
    ).stdout
    return next(word for word in out.split() if word.startswith("Gres="))


def _checkpointing_script(tmp_path: Path, name: str) -> Path:
    """A preemptible job's script: its first run goes on (up to 60 s) until Slurm ends it, saying
    ``checkpoint`` at the checkpoint signal (USR1); a run after a requeue takes 2 s and ends."""
    path = tmp_path / f"{name}.sh"
    path.write_text(
        '#!/bin/sh\necho "start $CUDA_VISIBLE_DEVICES $SLURM_RESTART_COUNT"\n'
        'if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then sleep 2; echo done; exit 0; fi\n'
        "trap 'echo checkpoint' USR1\n"
        "n=0\nwhile [ $n -lt 120 ]; do sleep 0.5; n=$((n + 1)); done\necho done\n"
    )
    path.chmod(0o755)
    return path


def _start_jobs(
    box: sandbox_module.Sandbox, tmp_path: Path, preemptible: bool = False
) -> tuple[int, int, Path, Path]:
    """A long job on the 4g (kept), a shorter one on the 2g (destroyed), a tiny one on the 1g.10gb. With
    ``preemptible`` the short one is preemptible and runs :func:`_checkpointing_script`."""
    long_script = _script(tmp_path, "long", 22)
    long = _sbatch(box, long_script, "wattsched: work=40s deadline=+50s")
    if preemptible:
        short_script = _checkpointing_script(tmp_path, "short")
        short = _sbatch(box, short_script, "wattsched: work=6s deadline=+70s preemptible=yes")
    else:
        short_script = _script(tmp_path, "short", 9)
        short = _sbatch(box, short_script, "wattsched: work=6s deadline=+70s")
    _sbatch(box, _script(tmp_path, "tiny", 0.5), "wattsched: work=0.5s deadline=+60s")
    return long, short, long_script, short_script


class _Started(NamedTuple):
    """What :func:`_start_until_the_epoch` started: the controller (the caller stops it: :func:`_stop`), the
    jobs of :func:`_start_jobs` and the job that made the decision epoch."""

    controller: subprocess.Popen[bytes]
    long: int
    short: int
    long_script: Path
    trigger: int
    short_script: Path


def _start_until_the_epoch(
    box: sandbox_module.Sandbox, tmp_path: Path, config: Path, preemptible: bool = False
) -> _Started:
    """The jobs of :func:`_start_jobs` (``preemptible`` passed on) and a controller on ``config``; once the
    short job runs and the day has ended (:data:`SWITCH_S` after the controller's start), one more job: the
    decision epoch that starts the repartition. The controller is stopped here if the short job never runs."""
    client = box.client()
    long, short, long_script, short_script = _start_jobs(box, tmp_path, preemptible)
    controller = _controller(box, config)
    began = time.monotonic()
    try:
        _wait(lambda: client.job(short).state is JobState.RUNNING, 30, "the first jobs to run", box)  # type: ignore[union-attr]
        time.sleep(max(0.0, began + SWITCH_S + 1.5 - time.monotonic()))
        trigger = _sbatch(box, _script(tmp_path, "after", 1), "wattsched: work=1s deadline=+300s")
    except BaseException:
        _stop(controller)
        raise
    return _Started(controller, long, short, long_script, trigger, short_script)


def _start_idle_until_the_epoch(
    box: sandbox_module.Sandbox, tmp_path: Path, config: Path
) -> subprocess.Popen[bytes]:
    """A controller on ``config`` with no job, and once the day has ended one short job: the decision epoch
    that starts the repartition of the idle GPU. The caller stops the controller (:func:`_stop`)."""
    controller = _controller(box, config)
    began = time.monotonic()
    try:
        _wait(lambda: (box.directory / "state.db").exists(), 20, "the controller to start", box)
        time.sleep(max(0.0, began + SWITCH_S + 1.5 - time.monotonic()))
        _sbatch(box, _script(tmp_path, "epoch", 0.5), "wattsched: work=0.5s deadline=+300s")
    except BaseException:
        _stop(controller)
        raise
    return controller


def _stop(controller: subprocess.Popen[bytes]) -> None:
    controller.send_signal(signal.SIGTERM)
    controller.wait(20)


def test_a_live_repartition_keeps_the_kept_slice_running_and_new_jobs_use_the_new_slices(
    box: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    config = _config(box, tmp_path / "wattsched.toml", {"requeue": False})
    client = box.client()
    controller, long, short, long_script, trigger, _ = _start_until_the_epoch(box, tmp_path, config)
    try:
        rows = _rows(box, config)
        assert rows[long]["slice"] == "4g.20gb@0" and rows[short]["slice"] == "2g.10gb@4"
        _wait(lambda: _repartition(box, config) is not None, 20, "the repartition to start", box)
        # While the 2g runs its job, the GPU is not changed and the kept 4g keeps its job.
        time.sleep(1.0)
        entry = _repartition(box, config)
        assert (
            entry is not None
            and entry["phase"] == "wait"
            and _layout(box) == ["4g.20gb@0", "2g.10gb@4", "1g.10gb@6"]
        )
        _wait(
            lambda: (_repartition(box, config) or {}).get("phase") == "done",
            40,
            "the repartition to end",
            box,
        )
        assert client.job(long).state is JobState.RUNNING  # type: ignore[union-attr]
        assert _layout(box) == TARGET
        gres = _node_gres(box)
        assert "a100_1g.5gb:2" in gres and "a100_2g.10gb" not in gres and "a100_4g.20gb:1" in gres
        # New jobs land on the new slices.
        new = [
            _sbatch(box, _script(tmp_path, f"new{n}", 2), "wattsched: work=2s deadline=+200s")
            for n in range(3)
        ]
        _wait(
            lambda: all(client.job(i).state is JobState.COMPLETED for i in (long, trigger, *new)),  # type: ignore[union-attr]
            25,
            "every job to end",
            box,
        )
        _wait(
            # A job released on a slice the change held back and then moved to another slice type ends as
            # its renewed copy.
            lambda: all(r["state"] in ("done", "renewed") for r in _rows(box, config).values()),
            20,
            "the rows to end",
            box,
        )
    finally:
        _stop(controller)
    entry = _repartition(box, config)
    assert entry is not None and entry["waited"] == [short] and entry["requeued"] == []
    phases = entry["phase_s"]
    assert isinstance(phases, dict) and set(phases) == {"drain", "wait", "apply", "gres", "resume"}
    assert phases["wait"] > 1.0 and 0.0 < phases["apply"] < 2.0 and 0.1 < phases["gres"] < 10.0
    rows = _rows(box, config)
    assert rows[long]["preemptions"] == 0 and rows[long]["slice"] == "4g.20gb@0"
    out = Path(f"{long_script}.{long}.out").read_text().splitlines()
    assert [line for line in out if line.startswith("start")] == [out[0]] and out[
        -1
    ] == "done"  # ran once, whole
    assert client.job(long).restart_count == 0  # type: ignore[union-attr]
    landed = {rows[i]["slice"] for i in new}
    assert landed & {"1g.5gb@4", "1g.5gb@5"}, landed  # at least one on a slice the repartition made
    assert all(rows[i]["slice"] in TARGET for i in (trigger, *new))
    text = subprocess.run(
        [sys.executable, "-m", "wattsched", "slurm", "status", "--config", str(config)],
        env=_env(box),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert f"repartition {entry['id']} {box.node}/0: 3 -> 4 done" in text
    assert "a100-40gb: 1 repartition(s) done, slices out of service (apply + gres + resume)" in text


def _starts(script: Path, job_id: int) -> list[str]:
    """The ``start`` lines of a job's output (one per run: its MIG UUID and Slurm's restart count)."""
    return [
        line for line in Path(f"{script}.{job_id}.out").read_text().splitlines() if line.startswith("start")
    ]


def test_a_live_repartition_requeues_a_preemptible_job_on_the_destroyed_slice_and_goes_on(
    box: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    """With ``requeue = true`` the preemptible job on the 2g gets the checkpoint signal and Slurm requeues
    it (held): the repartition ends without waiting for its work and the job on the kept 4g runs once,
    whole. The requeued job's Slurm record still asks for the destroyed 2g's type, which Slurm 22.05 never
    drops (it would stay pending, BadConstraints): the controller replaces it by a copy (same script,
    environment and output file, ``SLURM_RESTART_COUNT`` 1), which resumes on a slice of the new layout."""
    config = _config(box, tmp_path / "wattsched.toml", {"requeue": True})
    client = box.client()
    old_uuids = {i.label: i.uuid for i in FakeGpuState(box.fake_gpu_state).instances(0)}
    started = _start_until_the_epoch(box, tmp_path, config, preemptible=True)
    controller, long, short = started.controller, started.long, started.short
    long_script, short_script = started.long_script, started.short_script

    def copy_of_short() -> int | None:
        renewed = _rows(box, config).get(short, {}).get("renewed_as")
        return int(renewed) if isinstance(renewed, int) else None

    def settled() -> bool:
        copy = copy_of_short()
        ended = [client.job(i) for i in (long, started.trigger, copy or 0)]
        return copy is not None and all(j is not None and j.state is JobState.COMPLETED for j in ended)

    try:
        rows = _rows(box, config)
        assert rows[long]["slice"] == "4g.20gb@0" and rows[short]["slice"] == "2g.10gb@4"
        _wait(
            lambda: (_repartition(box, config) or {}).get("phase") == "done",
            40,
            "the repartition to end",
            box,
        )
        entry = _repartition(box, config)
        assert entry is not None and entry["requeued"] == [short] and entry["waited"] == [short]
        # Ended without waiting for the requeued job's work: Slurm has not run it to its end.
        job = client.job(short)
        assert job is not None and job.state is not JobState.COMPLETED and job.restart_count == 1
        assert client.job(long).state is JobState.RUNNING  # type: ignore[union-attr]
        assert _layout(box) == TARGET
        gres = _node_gres(box)
        assert "a100_1g.5gb:2" in gres and "a100_2g.10gb" not in gres and "a100_4g.20gb:1" in gres
        _wait(settled, 60, "the jobs to end (the requeued one as its copy)", box)
    finally:
        _stop(controller)
    copy = copy_of_short()
    assert copy is not None and copy > started.trigger
    original = client.job(short)
    assert original is not None and original.state is JobState.CANCELLED and original.restart_count == 1
    # The first run of the short job: on the 2g, checkpointed at the signal; its copy's run appended to the
    # same output file, on a slice of the new layout, told it is a restart; the controller counts one
    # preemption, and the copy goes on with the original's deadline.
    out = Path(f"{short_script}.{short}.out").read_text().splitlines()
    starts = _starts(short_script, short)
    assert starts[0].split() == ["start", old_uuids["2g.10gb@4"]]  # no restart count on a first run
    assert "checkpoint" in out and out.index("checkpoint") > out.index(starts[0])
    assert len(starts) == 2 and out[-1] == "done"
    _, uuid, restarts = starts[1].split()
    new_labels = {i.uuid: i.label for i in FakeGpuState(box.fake_gpu_state).instances(0)}
    assert restarts == "1" and new_labels.get(uuid) in TARGET[1:], starts[1]
    rows = _rows(box, config)
    assert rows[short]["state"] == "renewed" and rows[short]["preemptions"] == 1
    assert rows[copy]["state"] == "done" and rows[copy]["preemptions"] == 1
    assert rows[copy]["slice"] == new_labels[uuid] and rows[copy]["deadline_s"] == rows[short]["deadline_s"]
    # The kept 4g's job: one run, whole, never signalled.
    assert _starts(long_script, long) == [f"start {old_uuids['4g.20gb@0']} "]
    assert Path(f"{long_script}.{long}.out").read_text().splitlines()[-1] == "done"
    assert client.job(long).restart_count == 0 and rows[long]["preemptions"] == 0  # type: ignore[union-attr]
    assert rows[long]["slice"] == "4g.20gb@0"
    # The decision log names the requeued job and its copy.
    entry = _repartition(box, config)
    assert entry is not None and entry["phase"] == "done"
    logged = _status(box, config)["decisions"]
    assert isinstance(logged, list)
    decisions = [str(d["text"]) for d in logged]
    assert any(f"job {short} preempted" in t and f"for repartition {entry['id']}" in t for t in decisions)
    assert any(f"repartition {entry['id']} " in t and f"requeued [{short}]" in t for t in decisions)
    assert any(f"job {short} renewed as job {copy}" in t for t in decisions)


def test_a_controller_killed_between_the_mig_change_and_the_gres_reload_finishes_on_restart(
    box: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    """The reload command kills the controller the first time it runs (after the GPU was changed)."""
    marker = tmp_path / "killed-once"
    reload = tmp_path / "reload.sh"
    own = " ".join([sys.executable, "-m", "wattsched.slurm.sandbox", "reload", str(box.directory)])
    reload.write_text(
        f"#!/bin/sh\nif [ ! -e {marker} ]; then touch {marker}; kill -9 $PPID; exit 1; fi\nexec {own}\n"
    )
    reload.chmod(0o755)
    config = _config(box, tmp_path / "wattsched.toml", {"requeue": True, "reload_command": [str(reload)]})
    client = box.client()
    controller, long, _, _, _, _ = _start_until_the_epoch(box, tmp_path, config)
    try:
        controller.wait(60)  # killed by its reload command
        assert controller.returncode == -signal.SIGKILL
        entry = _repartition(box, config)
        assert entry is not None and entry["phase"] == "gres"
        assert _layout(box) == TARGET  # the MIG change is whole: no half-made instance
        assert "a100_2g.10gb" in _node_gres(box)  # Slurm not told yet
        controller = _controller(box, config)
        _wait(
            lambda: (_repartition(box, config) or {}).get("phase") == "done",
            30,
            "the repartition to end",
            box,
        )
        assert "a100_1g.5gb:2" in _node_gres(box) and _layout(box) == TARGET
        assert client.job(long).state is JobState.RUNNING  # type: ignore[union-attr]
    finally:
        _stop(controller)


OLD = ["4g.20gb@0", "2g.10gb@4", "1g.10gb@6"]
#: The layout a try leaves while another process wins the race for 1g.5gb@4: its 1g.10gb there.
RACED = ["4g.20gb@0", "1g.10gb@4", "1g.10gb@6"]


def _refusals(box: sandbox_module.Sandbox) -> list[str]:
    """The controller's log lines of refused MIG changes."""
    log = (box.directory / "controller.log").read_text(errors="replace").splitlines()
    return [line for line in log if "MIG change refused" in line]


def _placement_taken(lines: list[str], max_attempts: int) -> None:
    """One line per try, numbered, each refused by a 1g.10gb another process had just made at 4, a new one
    at each try (the try before's plan destroyed the last one, idle, as any instance the target lacks)."""
    takers = []
    for number, line in enumerate(lines, start=1):
        assert f"(try {number} of {max_attempts})" in line and "1g.5gb@4 overlaps 1g.10gb@4" in line, line
        assert "placement taken" in line
        takers.append(line.split("1g.10gb@4 (")[1].split(")")[0])
    assert len(set(takers)) == len(takers)


def _refused_until_freed(
    box: sandbox_module.Sandbox,
    tmp_path: Path,
    config: Path,
    refused_layout: list[str],
    free: Callable[[], None],
) -> list[str]:
    """Start the controller on an idle GPU whose change the fake GPU refuses; after two refused tries the
    layout is ``refused_layout`` (whole); ``free()`` ends the refusal and the change is made. Returns the
    refusal lines, one per try."""
    controller = _start_idle_until_the_epoch(box, tmp_path, config)
    try:
        _wait(lambda: _attempts(box, config) >= 2, 30, "two refusals", box)
        assert _layout(box) == refused_layout
        free()
        _wait(
            lambda: (_repartition(box, config) or {}).get("phase") == "done",
            30,
            "the repartition to end",
            box,
        )
        assert _layout(box) == TARGET and "a100_1g.5gb:2" in _node_gres(box)
    finally:
        _stop(controller)
    refused = _refusals(box)
    assert len(refused) == _attempts(box, config) >= 2
    return refused


def test_a_destroy_the_fake_gpu_refuses_is_logged_in_one_line_and_retried(
    box: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    """A process outside Slurm holds the 2g (the fake GPU marks it busy): the MIG change is refused, the
    layout stays whole, the controller tries again at every pass and goes on once the process is gone."""
    config = _config(box, tmp_path / "wattsched.toml", {})
    state = FakeGpuState(box.fake_gpu_state)
    doomed = next(i.uuid for i in state.instances(0) if i.label == "2g.10gb@4")
    state.set_busy(doomed, "inference")
    # OLD after the refusals: nothing half-done.
    refused = _refused_until_freed(box, tmp_path, config, OLD, lambda: state.set_busy(doomed, None))
    assert all("2g.10gb@4" in line and "nothing changed" in line for line in refused)


def test_a_create_refused_because_the_placement_is_taken_is_retried_until_it_is_free(
    box: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    """Another process takes the placement of each 1g.5gb the controller creates (the fake GPU's create
    race): every try is refused in one line and leaves a whole layout; once the race ends, the next try
    makes the change."""
    config = _config(box, tmp_path / "wattsched.toml", {})
    state = FakeGpuState(box.fake_gpu_state)
    kept = {i.label: i.uuid for i in state.instances(0) if i.label != "2g.10gb@4"}
    state.set_create_race(0, "1g.5gb", "1g.10gb")
    # RACED after the refusals, a whole layout: the 2g destroyed, the other process's 1g.10gb in place.
    refused = _refused_until_freed(box, tmp_path, config, RACED, lambda: state.set_create_race(0, None))
    _placement_taken(refused, 20)
    # The instances both layouts have were never touched.
    assert {i.label: i.uuid for i in state.instances(0) if i.label in kept} == kept


def test_a_create_refused_at_every_try_is_rolled_back_to_exactly_the_old_layout(
    box: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    """The race never ends: after ``max_attempts`` refused tries the GPU is brought back to the old layout
    (the 2g made again where the other process's instance was); Slurm's GRES are the old ones throughout."""
    config = _config(box, tmp_path / "wattsched.toml", {"max_attempts": 2})
    state = FakeGpuState(box.fake_gpu_state)
    kept = {i.label: i.uuid for i in state.instances(0) if i.label != "2g.10gb@4"}
    doomed = next(i.uuid for i in state.instances(0) if i.label == "2g.10gb@4")
    gres = _node_gres(box)
    state.set_create_race(0, "1g.5gb", "1g.10gb")
    controller = _start_idle_until_the_epoch(box, tmp_path, config)
    try:
        _wait(
            lambda: (_repartition(box, config) or {}).get("phase") == "rolled_back",
            30,
            "the roll back",
            box,
        )
    finally:
        _stop(controller)
    assert _layout(box) == OLD and _node_gres(box) == gres
    assert {i.label: i.uuid for i in state.instances(0) if i.label in kept} == kept
    # The 2g made again is a new device: Slurm's device list was brought to it (the reload command ran).
    remade = next(i.uuid for i in state.instances(0) if i.label == "2g.10gb@4")
    assert remade != doomed and remade in (device_uuids(box.conf_path) or [])
    entry = _repartition(box, config)
    assert entry is not None and entry["attempts"] == 2
    phases = entry["phase_s"]
    assert isinstance(phases, dict) and set(phases) == {"drain", "wait", "apply"}
    refused = _refusals(box)
    assert len(refused) == 2
    _placement_taken(refused, 2)


def test_a_controller_killed_in_the_wait_and_in_the_gres_phase_finishes_on_restart(
    box: sandbox_module.Sandbox, tmp_path: Path
) -> None:
    """SIGKILL while the 2g's job keeps the repartition in wait, restart; SIGKILL again while the first
    reload command hangs (the GPU changed, Slurm not told), restart: done, exactly the target layout, Slurm's
    GRES on it, and the job on the kept 4g ran once, whole."""
    hung = tmp_path / "hung.pid"
    reload = tmp_path / "reload.sh"
    own = " ".join([sys.executable, "-m", "wattsched.slurm.sandbox", "reload", str(box.directory)])
    reload.write_text(
        f"#!/bin/sh\nif [ ! -e {hung} ]; then echo $$ > {hung}; exec sleep 120; fi\nexec {own}\n"
    )
    reload.chmod(0o755)
    config = _config(
        box,
        tmp_path / "wattsched.toml",
        {"requeue": False, "reload_command": [str(reload)], "reload_timeout_s": 300},
    )
    client = box.client()
    controller, long, short, long_script, _, _ = _start_until_the_epoch(box, tmp_path, config)
    try:
        _wait(lambda: (_repartition(box, config) or {}).get("phase") == "wait", 20, "the wait phase", box)
        controller.send_signal(signal.SIGKILL)
        controller.wait(10)
        assert _layout(box) == ["4g.20gb@0", "2g.10gb@4", "1g.10gb@6"]
        controller = _controller(box, config)
        _wait(lambda: hung.exists(), 40, "the reload command to hang", box)
        entry = _repartition(box, config)
        assert entry is not None and entry["phase"] == "gres" and _layout(box) == TARGET
        assert "a100_2g.10gb" in _node_gres(box)  # Slurm not told yet
        controller.send_signal(signal.SIGKILL)
        controller.wait(10)
        os.kill(int(hung.read_text()), signal.SIGKILL)  # the hung reload, left behind by the dead controller
        controller = _controller(box, config)
        _wait(
            lambda: (_repartition(box, config) or {}).get("phase") == "done",
            30,
            "the repartition to end",
            box,
        )
        assert _layout(box) == TARGET
        gres = _node_gres(box)
        assert "a100_1g.5gb:2" in gres and "a100_2g.10gb" not in gres and "a100_4g.20gb:1" in gres
        assert client.job(long).state is JobState.RUNNING  # type: ignore[union-attr]
    finally:
        _stop(controller)
    entry = _repartition(box, config)
    assert entry is not None and entry["waited"] == [short] and entry["attempts"] == 0
    phases = entry["phase_s"]
    assert isinstance(phases, dict) and set(phases) == {"drain", "wait", "apply", "gres", "resume"}
    assert client.job(long).restart_count == 0  # type: ignore[union-attr]
    rows = _rows(box, config)
    assert rows[long]["preemptions"] == 0 and rows[long]["slice"] == "4g.20gb@0"
    out = Path(f"{long_script}.{long}.out").read_text().splitlines()
    assert len([line for line in out if line.startswith("start")]) == 1  # never restarted
