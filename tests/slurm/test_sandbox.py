"""The Slurm sandbox: its fake MIG GPUs match Slurm's view, Prolog/Epilog mark slices busy and idle in the
fake GPU state file, the controller config it writes, and a second sandbox (through the shell script) next to
the first, stopped twice."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.cli import main as cli_main
from wattsched.errors import ConfigError
from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.hardware.gpu.fake_state import gres_type as fake_gres_type
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import JobState, SlurmClient, SlurmError
from wattsched.slurm.config import load_config
from wattsched.slurm.sandbox import Sandbox

from .conftest import require_slurm, sandbox_directory

REPO = Path(__file__).resolve().parents[2]


def test_fake_gpus_match_the_state_file_and_slurms_node(slurm_sandbox: Sandbox) -> None:
    state = FakeGpuState(slurm_sandbox.fake_gpu_state)
    instances = state.instances(0)
    assert sorted(slurm_sandbox.gpu_uuids) == sorted(i.uuid for i in instances)
    assert all(uuid.startswith("MIG-") for uuid in slurm_sandbox.gpu_uuids)
    by_uuid = {i.uuid: fake_gres_type("a100-40gb", i.profile) for i in instances}
    assert slurm_sandbox.gres_types == tuple(by_uuid[u] for u in slurm_sandbox.gpu_uuids)
    lines = (slurm_sandbox.conf_path.parent / "fake_gpus.conf").read_text().splitlines()
    assert [line.split("|")[5] for line in lines] == list(slurm_sandbox.gpu_uuids)
    assert all(line.endswith("|nvidia_gpu_env") for line in lines)
    (node,) = [n for n in slurm_sandbox.client().nodes() if n.name == slurm_sandbox.node]
    assert sorted(str(e) for e in node.gres) == sorted(f"gpu:{kind}:1" for kind in slurm_sandbox.gres_types)
    assert slurm_sandbox.env == {"SLURM_CONF": str(slurm_sandbox.conf_path)}


def test_prolog_and_epilog_mark_the_jobs_slice_busy_then_idle(
    slurm_sandbox: Sandbox, tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    client = slurm_sandbox.client()
    state = FakeGpuState(slurm_sandbox.fake_gpu_state)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsleep 2\n")
    script.chmod(0o755)
    job_id = client.submit(script, comment="wattsched: kind=training", output="/dev/null", workdir=tmp_path)
    client.set_gres(job_id, f"gpu:{slurm_sandbox.gres_types[0]}:1", node=slurm_sandbox.node)
    client.release(job_id)
    uuid = slurm_sandbox.gpu_uuids[0]

    def kind_of(target: str) -> str | None:
        found = {i.uuid: i.kind for i in state.instances(0)}[target]
        return None if found is None else found.value

    wait_for(lambda: kind_of(uuid) == "training", 20, "the Prolog to mark the slice busy")
    assert [kind_of(other) for other in slurm_sandbox.gpu_uuids[1:]] == [None, None]
    wait_for(lambda: client.job(job_id).state is JobState.COMPLETED, 20, "the job to end")  # type: ignore[union-attr]
    wait_for(lambda: kind_of(uuid) is None, 20, "the Epilog to mark the slice idle")
    log = (slurm_sandbox.directory / "log" / "prolog.log").read_text()
    assert f"job={job_id} gpus={uuid}" in log
    completions = (slurm_sandbox.directory / "log" / "jobcomp.txt").read_text()
    assert f"JobId={job_id} " in completions  # an ended job's lasting record


def test_a_job_runs_on_every_free_slice_at_once_whatever_the_hosts_cores(
    slurm_sandbox: Sandbox, tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    """The node declares a CPU per compute slice at least (7 for the A100), not the host's cores: three
    1-CPU jobs on the three slices run together even on a 2-core host (no job waits for a CPU)."""
    client = slurm_sandbox.client()
    (node,) = [n for n in client.nodes() if n.name == slurm_sandbox.node]
    assert node.cpus == max(os.cpu_count() or 1, 7) and node.available
    cpus = {line.split("|")[1] for line in (slurm_sandbox.conf_path.parent / "fake_gpus.conf").open()}
    assert cpus == {str(node.cpus)}
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsleep 60\n")
    script.chmod(0o755)
    jobs = []
    for kind in slurm_sandbox.gres_types:
        job_id = client.submit(script, output="/dev/null", workdir=tmp_path, extra=["--cpus-per-task=1"])
        client.set_gres(job_id, f"gpu:{kind}:1", node=slurm_sandbox.node)
        client.release(job_id)
        jobs.append(job_id)

    def states() -> set[JobState]:
        return {client.job(job_id).state for job_id in jobs}  # type: ignore[union-attr]

    try:
        assert len(jobs) == 3
        wait_for(lambda: states() == {JobState.RUNNING}, 20, "the 3 jobs to run at once")
    finally:
        for job_id in jobs:
            client.cancel(job_id)
    wait_for(lambda: all(state.finished for state in states()), 20, "the jobs to end")
    state = FakeGpuState(slurm_sandbox.fake_gpu_state)
    wait_for(lambda: not any(i.busy for i in state.instances(0)), 20, "the Epilogs to mark the slices idle")


def test_the_controller_config_names_the_sandbox(slurm_sandbox: Sandbox, tmp_path: Path) -> None:
    path = sandbox_module.write_controller_config(
        slurm_sandbox, tmp_path / "w.toml", {"policy": "edf-fs", "grace_s": 5}
    )
    raw = tomllib.loads(path.read_text())
    assert raw["slurm"] == {
        "partition": "mig",
        "state": str(slurm_sandbox.directory / "state.db"),
        "slurm_conf": str(slurm_sandbox.conf_path),
    }
    assert raw["scheduling"] == {"policy": "edf-fs", "grace_s": 5}
    assert raw["nodes"] == [
        {
            "name": slurm_sandbox.node,
            "gpus": ["a100-40gb"],
            "configuration": 3,
            "backend": f"fake:{slurm_sandbox.fake_gpu_state}",
        }
    ]


def _offline(directory: Path, gpu: str = "h200-141gb") -> Sandbox:
    """A sandbox's description with no daemon behind it (the config writer needs no more)."""
    return Sandbox(
        directory=directory,
        conf_path=directory / "etc" / "slurm.conf",
        node="box",
        partition="gpu",
        unmanaged_partition="debug",
        gpus=((gpu, 3),),
        gpu_uuids=(),
        gres_types=(),
        fake_gpu_state=directory / "fake_gpu.json",
        ports=(0, 0),
    )


GIVEN = """
[slurm]
partition = "gpu"
state = "/var/lib/wattsched/x.db"
poll_s = 0.5
time_origin = "start"
[scheduling]
grace_s = 5
[clocks]
enabled = true
nodes = [{clock_nodes}]
mem_mhz = 3201
[power]
suspend_command = ["poweroff", "{{node}}"]
host_idle_w = 20
[[nodes]]
name = "gpu01"
gpus = ["{gpu}"]
configuration = 3
partitioner = "day-night"
partitioner_options = {{ day_configuration = 3, night_configuration = 4 }}
backend = "nvml"
[[nodes]]
name = "gpu02"
gpus = ["a100-40gb"]
backend = "nvml"
[repartition]
max_wait_s = 30
reload_command = ["/usr/local/sbin/reload", "{{node}}"]
"""


def test_the_sandbox_keeps_poll_s_clocks_and_power_of_the_given_config(tmp_path: Path) -> None:
    given = tmp_path / "given.toml"
    given.write_text(GIVEN.format(clock_nodes='"gpu01"', gpu="h200-141gb"))
    partition, gpus, settings = sandbox_module._from_config(given)
    assert (partition, gpus) == ("gpu", [("h200-141gb", 3)])
    box = _offline(tmp_path)
    config = load_config(sandbox_module.write_controller_config(box, tmp_path / "w.toml", **settings))
    assert config.poll_s == 0.5 and config.grace_s == 5 and config.time_origin == "start"
    assert (config.clocks.enabled, config.clocks.nodes, config.clocks.mem_mhz) == (True, ("box",), 3201)
    assert config.power.suspend_command == ("poweroff", "{node}") and config.power.host_idle_w == 20
    # what must be the sandbox's own is the sandbox's
    (node,) = config.nodes
    assert (node.name, node.backend, node.partitioner) == ("box", f"fake:{box.fake_gpu_state}", "day-night")
    assert config.state_path == tmp_path / "state.db" and config.slurm_conf == str(box.conf_path)
    assert config.repartition.max_wait_s == 30
    assert config.repartition.reload_command[-2:] == ("reload", str(tmp_path))
    # clocks naming only another node of the given config: the sandbox's node is not managed
    given.write_text(GIVEN.format(clock_nodes='"gpu02"', gpu="h200-141gb"))
    settings = sandbox_module._from_config(given)[2]
    config = load_config(sandbox_module.write_controller_config(box, tmp_path / "w.toml", **settings))
    assert config.clocks.enabled and not config.clocks.manages("box")


def test_clocks_on_a_gpu_without_a_clock_table_are_the_controllers_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    given = tmp_path / "given.toml"
    given.write_text(GIVEN.format(clock_nodes='"gpu01"', gpu="a100-40gb"))
    box = _offline(tmp_path, "a100-40gb")
    written = tmp_path / "wattsched.toml"
    with pytest.raises(ConfigError) as refused:
        sandbox_module.write_controller_config(box, written, **sandbox_module._from_config(given)[2])
    assert cli_main(["slurm", "controller", "--config", str(written)]) == 2
    from_controller = capsys.readouterr().err.strip()
    assert from_controller.endswith(f": {refused.value}") and "\n" not in from_controller
    assert "node 'box' GPU 0 (a100-40gb) has no clock table" in str(refused.value)
    # the command line: one line, exit 2, and the sandbox it started is stopped again
    stopped: list[Path] = []
    monkeypatch.setattr(sandbox_module, "start", lambda *args, **kwargs: box)
    monkeypatch.setattr(sandbox_module, "stop", lambda directory, **kwargs: stopped.append(directory))
    # (--nodes 1: the given config's two [[nodes]] would otherwise start two nodes, not the box)
    assert sandbox_module.main(["start", str(tmp_path), "--config", str(given), "--nodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err == f"slurm sandbox: {refused.value}\n" and stopped == [tmp_path]


def test_a_second_sandbox_from_the_script_runs_beside_the_first_and_stops_twice(
    slurm_sandbox: Sandbox, tmp_path: Path
) -> None:
    require_slurm()
    directory = sandbox_directory("wattsched-slurm-second-")
    config = tmp_path / "config.toml"
    config.write_text(
        '[slurm]\npartition = "gpu"\nstate = "x.db"\npoll_s = 0.5\n[scheduling]\npolicy = "edf-fs"\n'
        "[power]\nhost_idle_w = 20\n"
        '[[nodes]]\nname = "n"\ngpus = ["a100-40gb", "a100-40gb"]\nconfiguration = 2\nbackend = "nvml"\n'
    )
    script = REPO / "scripts" / "slurm-sandbox.sh"
    env = dict(os.environ, PYTHON=sys.executable)
    try:
        started = subprocess.run(
            [str(script), "start", str(directory), str(config)], env=env, capture_output=True, text=True
        )
        assert started.returncode == 0, started.stderr
        assert f"export SLURM_CONF={directory}/etc/slurm.conf" in started.stdout
        second = SlurmClient(directory / "etc" / "slurm.conf")
        assert second.ping() and slurm_sandbox.client().ping()
        (node,) = second.nodes()
        assert node.partitions == ("gpu", "debug") and sum(e.count for e in node.gres) == 4  # 2 × (4g, 3g)
        written = tomllib.loads((directory / "wattsched.toml").read_text())
        assert written["slurm"]["partition"] == "gpu" and written["scheduling"] == {"policy": "edf-fs"}
        assert written["slurm"]["poll_s"] == 0.5 and written["power"] == {"host_idle_w": 20}
        assert written["nodes"][0]["gpus"] == ["a100-40gb", "a100-40gb"]
        pids = [int((directory / "run" / f"{name}.pid").read_text()) for name in sandbox_module.DAEMONS]
    finally:
        stopped = subprocess.run(
            [str(script), "stop", str(directory)], env=env, capture_output=True, text=True
        )
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not any(
        Path(f"/proc/{pid}/cmdline").exists() and Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids
    )
    assert sandbox_module.stop(directory) is False  # idempotent
    assert slurm_sandbox.client().ping()  # the first one is untouched
    shutil.rmtree(directory, ignore_errors=True)


def test_a_user_cannot_release_a_managed_job_but_can_release_an_unmanaged_one(slurm_sandbox: Sandbox) -> None:
    if shutil.which("runuser") is None:
        pytest.skip("runuser not found")
    env = dict(os.environ, **slurm_sandbox.env)

    def as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runuser", "-u", "nobody", "--", *args], env=env, capture_output=True, text=True
        )

    client = slurm_sandbox.client()
    ids = {}
    for partition in ("mig", "debug"):
        submitted = as_nobody(
            "sbatch",
            "--parsable",
            "-p",
            partition,
            "-o",
            "/dev/null",
            "-D",
            "/tmp",
            "--hold",
            "--wrap",
            "true",
        )
        assert submitted.returncode == 0, submitted.stderr
        ids[partition] = int(submitted.stdout.split(";")[0])
    assert client.job(ids["mig"]).admin_comment.startswith("wattsched: waiting")  # type: ignore[union-attr]
    assert as_nobody("scontrol", "release", str(ids["mig"])).returncode != 0  # the lua plugin refuses
    assert client.job(ids["mig"]).held  # type: ignore[union-attr]
    assert as_nobody("scontrol", "release", str(ids["debug"])).returncode == 0
    assert not client.job(ids["debug"]).held  # type: ignore[union-attr]
    client.cancel(ids["mig"])


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ('partitioner_options = "day"', r"nodes\[0\]\.partitioner_options must be a table"),
        ('gpus = "a100-40gb"', r"nodes\[0\]\.gpus must be a list"),
    ],
)
def test_a_given_config_of_the_wrong_shape_is_one_line(tmp_path: Path, node: str, message: str) -> None:
    given = tmp_path / "given.toml"
    given.write_text(f'[slurm]\npartition = "mig"\nstate = "x.db"\n[[nodes]]\nname = "n1"\n{node}\n')
    with pytest.raises(SlurmError, match=message):
        sandbox_module._from_config(given)
