"""A many-node sandbox on a real Slurm: three slurmds on this host, each with its own fake MIG GPUs. Slurm
(``sinfo --json``) shows every node idle with its GRES, a job sent to each node runs there with that node's
MIG UUID (its Prolog marks the node's own fake GPU busy), the controller releases jobs to several nodes and
charges each the energy of its node's fake GPU, and ``stop`` leaves no slurmd or slurmstepd behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import JobState
from wattsched.slurm.config import load_config
from wattsched.slurm.gres_update import device_uuids
from wattsched.slurm.sandbox import NodeSpec, Sandbox
from wattsched.slurm.state import StateStore

from .conftest import require_slurm, sandbox_directory

SPECS = [
    NodeSpec("n1", (("a100-40gb", 3),)),
    NodeSpec("n2", (("a100-40gb", 3),)),
    NodeSpec("n3", (("a100-40gb", 1),)),
]


def _busy(box: Sandbox, node: str) -> set[str]:
    member = next(n for n in box.nodes if n.name == node)
    state = FakeGpuState(member.fake_gpu_state)
    return {i.uuid for g in range(len(state.gpus())) for i in state.instances(g) if i.busy}


def _jobs(box: Sandbox, config: Path) -> dict[int, dict[str, object]]:
    out = subprocess.run(
        [sys.executable, "-m", "wattsched", "slurm", "jobs", "--json", "--config", str(config)],
        env=dict(os.environ, **box.env),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {row["job_id"]: row for row in json.loads(out)}


def _sbatch(
    env: dict[str, str], script: Path, work: str, *extra: str, script_args: tuple[str, ...] = ()
) -> int:
    """Submit ``script`` (output beside it, ``.<job id>.out``) annotated with ``work`` and a loose deadline;
    its job id."""
    out = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--comment=wattsched: work={work} deadline=+3000s",
            *extra,
            *("-o", f"{script}.%j.out", str(script), *script_args),
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out.split(";")[0])


def _start_controller(config: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """``wattsched slurm controller`` on ``config`` in the background, its output appended to ``log_path``."""
    log = open(log_path, "ab")  # noqa: SIM115 - the child keeps it
    return subprocess.Popen(
        [sys.executable, "-m", "wattsched", "slurm", "controller", "--config", str(config)],
        stdout=log,
        stderr=log,
        env=env,
    )


def _runs(pid: int) -> bool:
    """Whether ``pid`` is a live process (an ended daemon not yet reaped has an empty command line)."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    try:
        return bool(cmdline.read_bytes())
    except OSError:
        return False


def _leftovers(directory: Path) -> list[int]:
    """Processes whose command line or environment names the sandbox's folder."""
    mark = str(directory).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark in (entry / "cmdline").read_bytes() or mark in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_three_nodes_run_jobs_each_on_its_own_fake_gpus(
    tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    require_slurm()
    directory = sandbox_directory("wattsched-nodes-")
    controller: subprocess.Popen[bytes] | None = None
    try:
        box = sandbox_module.start(directory, nodes=SPECS, cred_expire_s=5)
        client = box.client()
        # sinfo --json: every node, idle, with its own GRES
        shown = {node.name: node for node in client.nodes()}
        assert sorted(shown) == ["n1", "n2", "n3"]
        for member in box.nodes:
            node = shown[member.name]
            assert node.state == "idle" and node.available
            assert sorted(str(e) for e in node.gres) == sorted(f"gpu:{t}:1" for t in member.gres_types)
            assert node.partitions == ("mig", "debug")
        assert len({u for n in box.nodes for u in n.gpu_uuids}) == 3 + 3 + 1
        # a job sent to each node's first GRES runs there, on that node's MIG UUID
        script = tmp_path / "job.sh"
        script.write_text('#!/bin/sh\necho "start $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"\nsleep 3\n')
        script.chmod(0o755)
        sent = {}
        for member in box.nodes:
            sent[member.name] = client.submit(
                script,
                partition="debug",
                output=f"{script}.%j.out",
                workdir=tmp_path,
                extra=[f"--gres=gpu:{member.gres_types[0]}:1", f"--nodelist={member.name}"],
            )

        def states() -> set[JobState]:
            return {client.job(job_id).state for job_id in sent.values()}  # type: ignore[union-attr]

        wait_for(lambda: states() == {JobState.RUNNING}, 20, "a job to run on every node")
        for member in box.nodes:  # each node's Prolog marked its own fake GPU busy
            wait_for(lambda m=member: _busy(box, m.name) == {m.gpu_uuids[0]}, 10, f"{member.name}'s Prolog")
        wait_for(lambda: states() == {JobState.COMPLETED}, 20, "the jobs to end")
        for member in box.nodes:
            out = Path(f"{script}.{sent[member.name]}.out").read_text().split()
            assert out == ["start", member.name, member.gpu_uuids[0]]
        wait_for(lambda: not any(_busy(box, n) for n in ("n1", "n2", "n3")), 10, "the Epilogs")

        # the controller: jobs released to several nodes, each charged from its node's fake GPU
        config = sandbox_module.write_controller_config(box, tmp_path / "wattsched.toml", poll_s=0.5)
        ids = [
            int(
                subprocess.run(
                    [
                        "sbatch",
                        "--parsable",
                        f"--comment=wattsched: work=2s deadline=+{d}s",
                        "-o",
                        f"{script}.%j.out",
                        str(script),
                    ],
                    env=dict(os.environ, **box.env),
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.split(";")[0]
            )
            for d in (300, 600, 900, 1200)
        ]
        log = open(tmp_path / "controller.log", "ab")  # noqa: SIM115 - the child keeps it
        controller = subprocess.Popen(
            [sys.executable, "-m", "wattsched", "slurm", "controller", "--config", str(config)],
            stdout=log,
            stderr=log,
            env=dict(os.environ, **box.env),
        )
        wait_for(
            lambda: all(client.job(i).state is JobState.COMPLETED for i in ids),  # type: ignore[union-attr]
            60,
            "the controller's jobs to complete",
        )
        wait_for(
            lambda: all(r["state"] == "done" for r in _jobs(box, config).values()), 20, "every job seen ended"
        )
        rows = _jobs(box, config)
        used = set()
        for job_id in ids:
            row = rows[job_id]
            _, node, uuid = Path(f"{script}.{job_id}.out").read_text().split()
            member = next(n for n in box.nodes if n.name == node)
            assert row["node"] == node and uuid in member.gpu_uuids  # ran where the controller recorded it
            assert float(row["energy_j"]) > 0  # type: ignore[arg-type]
            used.add(node)
        assert len(used) >= 2
        for node in used:
            member = next(n for n in box.nodes if n.name == node)
            assert FakeGpuState(member.fake_gpu_state).energy_mj(0) > 0
    finally:
        if controller is not None:
            controller.send_signal(signal.SIGTERM)
            controller.wait(20)
        slurmds = [int(p.read_text()) for p in (directory / "run").glob("slurmd-*.pid")]
        sandbox_module.stop(directory)
    assert len(slurmds) == 3
    assert not any(_runs(pid) for pid in slurmds)
    assert _leftovers(directory) == []  # no slurmd, slurmstepd or daemon of the sandbox is left
    assert sandbox_module.stop(directory) is False
    shutil.rmtree(directory, ignore_errors=True)


def test_a_reload_brings_only_that_nodes_gres_to_its_fake_gpus() -> None:
    """A repartition of one node's fake GPU (an instance destroyed, then made again), reloaded for that node
    (the second time through the command line, as the controller's reload command runs it): that node offers
    its new GRES, the other keeps its own, both take jobs. One node's slurmd restarts alone."""
    require_slurm()
    directory = sandbox_directory("wattsched-nodes-reload-")
    try:
        box = sandbox_module.start(directory, nodes=[NodeSpec("r1"), NodeSpec("r2")], spare_devices=True)
        client = box.client()

        def gres() -> dict[str, list[str]]:
            nodes = client.nodes()
            assert all(node.available for node in nodes)
            return {node.name: sorted(str(entry) for entry in node.gres) for node in nodes}

        before = gres()
        assert before["r1"] == before["r2"] and "gpu:spare:4" in before["r2"]
        state = FakeGpuState(box.nodes[1].fake_gpu_state)
        small = next(i for i in state.instances(0) if i.profile == "1g.10gb")
        state.destroy_instance(0, small.uuid)
        times = sandbox_module.reload_gres(directory, action="restart", node="r2")
        assert times["total_s"] > 0
        after = gres()
        assert after["r1"] == before["r1"]
        assert "gpu:a100_1g.10gb:1" not in after["r2"] and "gpu:spare:5" in after["r2"]
        assert small.uuid not in (device_uuids(box.conf_path, "r2") or [])
        state.create_instance(0, "1g.10gb", 6)
        again = subprocess.run(
            [sys.executable, "-m", "wattsched.slurm.sandbox", "reload", str(directory), "r2"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert again.returncode == 0, again.stderr
        assert gres() == before
        # one node's slurmd restarted alone (the reconfigure action's step) comes back; the other is untouched
        pids = {n.name: int((directory / "run" / f"slurmd-{n.name}.pid").read_text()) for n in box.nodes}
        paths = sandbox_module._layout(directory)
        sandbox_module._restart_slurmd("r1", dict(os.environ, **box.env), paths, directory)
        assert int((directory / "run" / "slurmd-r1.pid").read_text()) != pids["r1"]
        assert int((directory / "run" / "slurmd-r2.pid").read_text()) == pids["r2"] and _runs(pids["r2"])
        deadline = time.monotonic() + 20
        while not all(n.available for n in client.nodes()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert gres() == before
    finally:
        sandbox_module.stop(directory)
    shutil.rmtree(directory, ignore_errors=True)


def test_slurm_turns_an_idle_node_off_and_on_again_for_a_job(
    tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    """Slurm's power saving on a many-node sandbox: the sandbox's SuspendProgram ends the idle node's slurmd
    and turns its fake GPU off (it draws nothing); a job sent to the node makes Slurm run the
    ResumeProgram, which turns the GPU on (charging the turn-on energy) and starts the slurmd; the job runs
    there. The other node (SuspendExcNodes) is left on."""
    require_slurm()
    directory = sandbox_directory("wattsched-nodes-power-")
    specs = [NodeSpec("p1"), NodeSpec("p2")]
    extra = [*sandbox_module._power_saving(directory, 2, specs), "SuspendExcNodes=p1"]  # --suspend-time 2
    try:
        box = sandbox_module.start(directory, nodes=specs, extra_conf=extra)
        client = box.client()
        state = FakeGpuState(box.nodes[1].fake_gpu_state)
        pid_file = directory / "run" / "slurmd-p2.pid"
        first = int(pid_file.read_text())

        def flags(name: str) -> tuple[str, ...]:
            return next(n for n in client.nodes() if n.name == name).state_flags

        wait_for(lambda: not state.powered(), 60, "Slurm to turn p2 off")
        assert not _runs(first) and not pid_file.exists()
        wait_for(lambda: "POWERED_DOWN" in flags("p2"), 30, "Slurm to show p2 powered down")
        off = state.energy_mj(0)
        time.sleep(0.5)
        assert state.energy_mj(0) == off  # an off GPU draws nothing
        assert "POWERED_DOWN" not in flags("p1")
        script = tmp_path / "job.sh"
        script.write_text('#!/bin/sh\necho "start $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"\n')
        script.chmod(0o755)
        job_id = client.submit(
            script,
            partition="debug",
            output=f"{script}.%j.out",
            workdir=tmp_path,
            extra=[f"--gres=gpu:{box.nodes[1].gres_types[0]}:1", "--nodelist=p2"],
        )
        wait_for(
            lambda: client.job(job_id).state is JobState.COMPLETED,  # type: ignore[union-attr]
            60,
            "the job to run on p2 once Slurm turned it on",
        )
        assert Path(f"{script}.{job_id}.out").read_text().split() == [
            "start",
            "p2",
            box.nodes[1].gpu_uuids[0],
        ]
        assert state.powered() and state.energy_mj(0) >= off + 5400 * 1000  # the turn-on energy charged
        assert _runs(int(pid_file.read_text()))
    finally:
        sandbox_module.stop(directory)
    shutil.rmtree(directory, ignore_errors=True)


def test_the_controller_waits_for_a_powered_down_node_it_places_a_job_on(
    tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    """Two nodes of one A100 with one 7g slice each; Slurm has turned idle p2 off. The controller places A on
    p1; B, with p1 full, goes to the first powered-down node (the data-centre simulator's fallback): the
    controller holds it, asks Slurm to power p2 up (Slurm runs the sandbox's ResumeProgram), and releases B
    only once p2 is up; B runs there while A still runs on p1."""
    require_slurm()
    directory = sandbox_directory("wattsched-nodes-boot-")
    specs = [NodeSpec("p1", (("a100-40gb", 1),)), NodeSpec("p2", (("a100-40gb", 1),))]
    extra = [*sandbox_module._power_saving(directory, 2, specs), "SuspendExcNodes=p1"]
    controller: subprocess.Popen[bytes] | None = None
    try:
        box = sandbox_module.start(directory, nodes=specs, extra_conf=extra)
        client = box.client()
        off = FakeGpuState(box.nodes[1].fake_gpu_state)
        wait_for(lambda: not off.powered(), 60, "Slurm to turn p2 off")
        wait_for(
            lambda: "POWERED_DOWN" in next(n for n in client.nodes() if n.name == "p2").state_flags,
            30,
            "Slurm to show p2 powered down",
        )
        config = sandbox_module.write_controller_config(box, tmp_path / "wattsched.toml", poll_s=0.5)
        script = tmp_path / "job.sh"
        script.write_text('#!/bin/sh\necho "start $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"\nsleep 6\n')
        script.chmod(0o755)
        env = dict(os.environ, **box.env)

        def submit(work_s: int) -> int:
            return _sbatch(env, script, f"{work_s}s")

        controller = _start_controller(config, env, tmp_path / "controller.log")
        a = submit(6)
        wait_for(lambda: client.job(a).state is JobState.RUNNING, 20, "A to run")  # type: ignore[union-attr]
        b = submit(6)
        wait_for(lambda: client.job(b).state is JobState.RUNNING, 60, "B to run on p2")  # type: ignore[union-attr]
        assert client.job(a).state is JobState.RUNNING  # type: ignore[union-attr]
        wait_for(
            lambda: {client.job(j).state for j in (a, b)} == {JobState.COMPLETED},  # type: ignore[union-attr]
            30,
            "A and B to end",
        )
        assert Path(f"{script}.{a}.out").read_text().split() == ["start", "p1", box.nodes[0].gpu_uuids[0]]
        assert Path(f"{script}.{b}.out").read_text().split() == ["start", "p2", box.nodes[1].gpu_uuids[0]]
        assert off.powered()
        text = (tmp_path / "controller.log").read_text()
        asked = text.index(f"node p2 is off: asked Slurm to turn it on for job {b}")
        up = text.index(f"node p2 is up: job {b} reaches p2/0")
        released = text.index(f"job {b} released on p2/0")
        assert asked < up < released
        assert text.count("asked Slurm to turn it on") == 1
    finally:
        if controller is not None:
            controller.send_signal(signal.SIGTERM)
            controller.wait(20)
        sandbox_module.stop(directory)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("per_gpu", [False, True], ids=["types-per-profile", "types-per-gpu"])
def test_a_two_gpu_job_runs_as_a_gang_on_one_slice_of_each_gpu_of_a_node(
    tmp_path: Path, wait_for: Callable[..., None], per_gpu: bool
) -> None:
    """Two nodes of two A100s in configuration 3 (4g, 2g, 1g.10gb). A (one GPU) goes to g1/0; G
    (``--gres=gpu:2``) reserves g2, whose GPUs are both idle, and the controller releases it with one request
    for the 1g.10gb type, two devices: Slurm starts it on the 1g.10gb of each of g2's GPUs (the sandbox's job
    sees both MIG UUIDs and runs until its work is done on both), and its energy is charged from both. With
    GRES types that name their GPU the request is one type of each GPU: Slurm 22.05's Prolog then sees the
    devices of the last type only, and the sandbox's Prolog adds the others from the job's record."""
    require_slurm()
    directory = sandbox_directory("wattsched-nodes-gang-")
    specs = [NodeSpec(name, (("a100-40gb", 3), ("a100-40gb", 3))) for name in ("g1", "g2")]
    controller: subprocess.Popen[bytes] | None = None
    try:
        box = sandbox_module.start(directory, nodes=specs, gres_per_gpu=per_gpu)
        client = box.client()
        config = sandbox_module.write_controller_config(box, tmp_path / "wattsched.toml", poll_s=0.5)
        script = tmp_path / "job.sh"
        states = " ".join(f'{n.name}) state="{n.fake_gpu_state}";;' for n in box.nodes)
        script.write_text(
            f'#!/bin/sh\ncase "$SLURMD_NODENAME" in {states} esac\n'
            f'exec {sys.executable} -m wattsched.slurm.sandbox_job --work "$1" --state "$state"\n'
        )
        script.chmod(0o755)
        env = dict(os.environ, **box.env)

        def submit(work: str, *extra: str) -> int:
            return _sbatch(env, script, work, *extra, script_args=(work,))

        controller = _start_controller(config, env, tmp_path / "controller.log")
        a = submit("4s")
        wait_for(lambda: client.job(a).state is JobState.RUNNING, 30, "A to run")  # type: ignore[union-attr]
        g = submit("2s", "--gres=gpu:2")
        wait_for(lambda: client.job(g).state is JobState.RUNNING, 30, "G to run")  # type: ignore[union-attr]
        wait_for(
            lambda: {client.job(j).state for j in (a, g)} == {JobState.COMPLETED},  # type: ignore[union-attr]
            60,
            "A and G to end",
        )
        wait_for(lambda: _jobs(box, config)[g]["state"] == "done", 20, "the controller to see G end")
        started = Path(f"{script}.{g}.out").read_text().split("\n")[0].split()
        assert started[2] == "slice=1g.10gb@6+1g.10gb@6"
        uuids = started[3].removeprefix("uuid=").split(",")
        g2 = FakeGpuState(box.nodes[1].fake_gpu_state)
        owner = {i.uuid: (gpu, str(i.label)) for gpu in (0, 1) for i in g2.instances(gpu)}
        assert sorted(owner[u] for u in uuids) == [(0, "1g.10gb@6"), (1, "1g.10gb@6")]
        rows = _jobs(box, config)
        assert rows[a]["node"] == "g1" and rows[g]["node"] == "g2"
        assert rows[g]["gpus"] == 2 and rows[g]["members"] == "0=2,1=2"
        assert rows[g]["energy_j"] > 0  # type: ignore[operator]
        # both of G's slices were busy while it ran: g2's two counters rose alike (G alone ran there)
        store = StateStore(load_config(config).state_path)
        rises = [r.counter_mj - r.first_mj for r in (store.reading("g2", 0), store.reading("g2", 1)) if r]
        assert len(rises) == 2 and abs(rises[0] - rises[1]) <= 0.02 * max(rises), rises
        text = (tmp_path / "controller.log").read_text()
        assert f"job {g} reserves g2/0, g2/1 (2 GPUs)" in text
        assert f"job {g} released on g2/0 slice 1g.10gb@6, g2/1 slice 1g.10gb@6 (gpu:" in text
        wanted = "gpu:a100_1g.10gb_gpu0:1,gpu:a100_1g.10gb_gpu1:1" if per_gpu else "gpu:a100_1g.10gb:2"
        assert f"({wanted})" in text
    finally:
        if controller is not None:
            controller.send_signal(signal.SIGTERM)
            controller.wait(20)
        sandbox_module.stop(directory)
    shutil.rmtree(directory, ignore_errors=True)
