"""A many-node sandbox's files, without daemons: the slurm.conf lines of several nodes, each node's own
fake_gpus.conf, devices and state file, the controller config listing every node, and the command line's
one-line errors."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import SlurmError
from wattsched.slurm.config import load_config
from wattsched.slurm.gres_update import device_uuids, fake_gpus_path, write_fake_gres
from wattsched.slurm.sandbox import Sandbox
from wattsched.slurm.sandbox_nodes import (
    MINORS_PER_NODE,
    NodeSpec,
    SandboxNode,
    check_node_name,
    config_nodes,
    many_node_conf,
    node_conf_path,
    node_state_path,
    node_state_shell,
    uniform_nodes,
)

_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="making character devices needs root")


def _single_conf(top: Path) -> str:
    paths = sandbox_module._layout(top)
    return sandbox_module._slurm_conf(
        top, paths, "host", (7001, 7002), "gpu:a100_4g.20gb:1", "mig", "debug", 7, 10, ["SuspendTime=3"]
    )


def test_the_slurm_conf_of_three_nodes_gives_each_its_line_port_and_files(tmp_path: Path) -> None:
    nodes = [
        ("n1", 7101, 7, "gpu:a100_4g.20gb:1,gpu:a100_2g.10gb:1"),
        ("n2", 7102, 14, "gpu:x:2"),
        ("n3", 7103, 7, "gpu:y:1"),
    ]
    text = many_node_conf(_single_conf(tmp_path), tmp_path, "host", ("mig", "debug"), nodes)
    lines = text.splitlines()
    node_lines = [line for line in lines if line.startswith("NodeName=")]
    assert node_lines == [
        "NodeName=n1 Port=7101 NodeAddr=127.0.0.1 CPUs=7 RealMemory=1000 "
        "Gres=gpu:a100_4g.20gb:1,gpu:a100_2g.10gb:1 State=UNKNOWN",
        "NodeName=n2 Port=7102 NodeAddr=127.0.0.1 CPUs=14 RealMemory=1000 Gres=gpu:x:2 State=UNKNOWN",
        "NodeName=n3 Port=7103 NodeAddr=127.0.0.1 CPUs=7 RealMemory=1000 Gres=gpu:y:1 State=UNKNOWN",
    ]
    partitions = [line for line in lines if line.startswith("PartitionName=")]
    assert partitions == [
        "PartitionName=mig Nodes=n1,n2,n3 Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=debug Nodes=n1,n2,n3 MaxTime=INFINITE State=UP",
    ]
    assert lines.index(node_lines[-1]) < lines.index(partitions[0])  # nodes before the partitions using them
    settings = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    assert settings["SlurmdSpoolDir"] == f"{tmp_path}/spool/%n"
    assert settings["SlurmdPidFile"] == f"{tmp_path}/run/slurmd-%n.pid"
    assert settings["SlurmdLogFile"] == f"{tmp_path}/log/slurmd-%n.log"
    assert settings["SlurmctldHost"] == "host(127.0.0.1)" and settings["SuspendTime"] == "3"
    assert not any("host" in line for line in node_lines + partitions)
    # everything else is the one-node sandbox's
    single = [
        line for line in _single_conf(tmp_path).splitlines() if not line.startswith(("Node", "Partition"))
    ]
    changed = {"SlurmdSpoolDir", "SlurmdPidFile", "SlurmdLogFile"}
    assert [l for l in single if l.split("=")[0] not in changed] == [
        l for l in lines if not l.startswith(("Node", "Partition")) and l.split("=")[0] not in changed
    ]


def test_a_conf_without_the_hosts_node_line_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match="no NodeName=other line"):
        many_node_conf(_single_conf(tmp_path), tmp_path, "other", ("mig",), [("n1", 1, 1, "gpu:x:1")])


@_ROOT
def test_each_node_has_its_own_fake_gpus_devices_and_state(tmp_path: Path) -> None:
    paths = sandbox_module._layout(tmp_path)
    specs = [NodeSpec("n1", (("a100-40gb", 3),)), NodeSpec("n2", (("a100-40gb", 3), ("a100-40gb", 1)))]
    made = [
        sandbox_module._make_node(tmp_path, paths, spec, index, seed=index, spare_devices=False)
        for index, spec in enumerate(specs)
    ]
    (first, first_line), (second, second_line) = made
    assert first_line[0] == "n1" and first_line[2] == 7 and second_line[2] == 14  # a CPU per compute slice
    assert second_line[3] == "gpu:a100_4g.20gb:1,gpu:a100_2g.10gb:1,gpu:a100_1g.10gb:1,gpu:a100_7g.40gb:1"
    assert len(first.gpu_uuids) == 3 and len(second.gpu_uuids) == 4
    assert not set(first.gpu_uuids) & set(second.gpu_uuids)  # no MIG UUID on two nodes
    conf = paths["conf"]
    for node in (first, second):
        assert (
            node.conf_path
            == node_conf_path(conf, node.name)
            == conf.parent / "nodes" / node.name / "slurm.conf"
        )
        assert os.readlink(node.conf_path) == "../../slurm.conf"  # every slurmd reads the one slurm.conf
        assert (
            node.fake_gpu_state
            == node_state_path(tmp_path, node.name)
            == tmp_path / "fake_gpus" / f"{node.name}.json"
        )
        state = FakeGpuState(node.fake_gpu_state)
        assert sorted(node.gpu_uuids) == sorted(
            i.uuid for g in range(len(state.gpus())) for i in state.instances(g)
        )
        lines = fake_gpus_path(conf, node.name).read_text().splitlines()
        assert [line.split("|")[5] for line in lines] == list(node.gpu_uuids)
        assert device_uuids(conf, node.name) == list(node.gpu_uuids)
        assert node.log == tmp_path / "log" / f"slurmd-{node.name}.log"
    devices = {
        line.split("|")[4]
        for node in (first, second)
        for line in fake_gpus_path(conf, node.name).read_text().splitlines()
    }
    assert len(devices) == 7 and all(
        Path(d).parent.name in ("n1", "n2") for d in devices if d.startswith(str(tmp_path))
    )
    numbers = {os.stat(d).st_rdev for d in devices}
    assert len(numbers) == 7 and all(stat.S_ISCHR(os.stat(d).st_mode) for d in devices)
    assert min(os.minor(os.stat(d).st_rdev) for d in devices if "/n2/" in d or "-n2-" in d) == MINORS_PER_NODE
    # the one-node file beside slurm.conf is not a node's: a node without its own file falls back to it
    assert device_uuids(conf, "n3") is None


@_ROOT
def test_a_repartition_rewrites_only_that_nodes_files(tmp_path: Path) -> None:
    paths = sandbox_module._layout(tmp_path)
    specs = [NodeSpec("n1", (("a100-40gb", 3),)), NodeSpec("n2", (("a100-40gb", 3),))]
    made = [
        sandbox_module._make_node(tmp_path, paths, s, i, seed=i, spare_devices=True)
        for i, s in enumerate(specs)
    ]
    text = many_node_conf(
        _single_conf(tmp_path), tmp_path, "host", ("mig", "debug"), [line for _, line in made]
    )
    paths["conf"].write_text(text)
    before = fake_gpus_path(paths["conf"], "n1").read_text()
    state = FakeGpuState(node_state_path(tmp_path, "n2"))
    small = [i for i in state.instances(0) if i.profile == "1g.10gb"]
    assert small
    state.destroy_instance(0, small[0].uuid)
    spec = sandbox_module._write_node_gres(tmp_path, paths["conf"], "n2", paths)
    assert "a100_1g.10gb" not in spec and spec.endswith("gpu:spare:5")  # the device count kept: 7
    assert fake_gpus_path(paths["conf"], "n1").read_text() == before
    n2 = fake_gpus_path(paths["conf"], "n2").read_text().splitlines()
    assert len(n2) == 7 and small[0].uuid not in "".join(n2)
    assert all(os.minor(os.stat(line.split("|")[4]).st_rdev) >= MINORS_PER_NODE for line in n2)
    node_lines = {
        line.split()[0]: line
        for line in paths["conf"].read_text().splitlines()
        if line.startswith("NodeName=")
    }
    assert f"Gres={spec} " in node_lines["NodeName=n2"] and "a100_1g.10gb" in node_lines["NodeName=n1"]
    assert not os.path.islink(paths["conf"]) and os.path.islink(node_conf_path(paths["conf"], "n2"))
    with pytest.raises(SlurmError, match="no node 'n9' in this sandbox; its nodes: n1, n2"):
        sandbox_module._known_node(paths["conf"], "n9")
    assert write_fake_gres  # the one-node rewrite is the same function, without a node's minors


def _offline_many(directory: Path, specs: list[NodeSpec]) -> Sandbox:
    members = tuple(
        SandboxNode(
            spec=spec,
            conf_path=node_conf_path(directory / "etc" / "slurm.conf", spec.name),
            port=0,
            gpu_uuids=(),
            gres_types=(),
            fake_gpu_state=node_state_path(directory, spec.name),
            log=directory / "log" / f"slurmd-{spec.name}.log",
        )
        for spec in specs
    )
    return Sandbox(
        directory=directory,
        conf_path=directory / "etc" / "slurm.conf",
        node=specs[0].name,
        partition="mig",
        unmanaged_partition="debug",
        gpus=specs[0].gpus,
        gpu_uuids=(),
        gres_types=(),
        fake_gpu_state=members[0].fake_gpu_state,
        ports=(0, 0),
        nodes=members,
    )


def test_the_controller_config_lists_every_node_with_its_backend_and_partitioner(tmp_path: Path) -> None:
    specs = [
        NodeSpec("gpu01", (("a100-40gb", 3),)),
        NodeSpec("gpu02", (("a100-40gb", 2), ("a100-40gb", 2)), "day-night", (("night_configuration", 4),)),
    ]
    box = _offline_many(tmp_path, specs)
    path = sandbox_module.write_controller_config(box, tmp_path / "w.toml", {"policy": "edf-fs"}, poll_s=0.5)
    raw = tomllib.loads(path.read_text())
    assert raw["nodes"] == [
        {
            "name": "gpu01",
            "gpus": ["a100-40gb"],
            "configuration": 3,
            "backend": f"fake:{tmp_path}/fake_gpus/gpu01.json",
        },
        {
            "name": "gpu02",
            "gpus": ["a100-40gb", "a100-40gb"],
            "configuration": 2,
            "backend": f"fake:{tmp_path}/fake_gpus/gpu02.json",
            "partitioner": "day-night",
            "partitioner_options": {"night_configuration": 4},
        },
    ]
    assert raw["repartition"]["reload_command"][-3:] == ["reload", str(tmp_path), "{node}"]
    config = load_config(path)
    assert [n.backend for n in config.nodes] == [
        f"fake:{tmp_path}/fake_gpus/gpu01.json",
        f"fake:{tmp_path}/fake_gpus/gpu02.json",
    ]
    assert [n.dynamic for n in config.nodes] == [False, True]
    # the node power commands are the sandbox's own, charging the config's turn-on energy
    assert config.power.suspend_command[-3:] == ("power-off", str(tmp_path), "{node}")
    assert config.power.resume_command[-5:] == (
        "power-on",
        str(tmp_path),
        "{node}",
        "--turn-on-j-per-gpu",
        "5400.0",
    )
    given = {"turn_on_j_per_gpu": 100, "suspend_command": ["true"]}
    power = load_config(sandbox_module.write_controller_config(box, tmp_path / "p.toml", power=given)).power
    assert power.suspend_command == ("true",) and power.resume_command[-1] == "100"
    # a client of the sandbox maps each node's devices to its own UUIDs
    assert box.client().gpu_uuids == {"gpu01": (), "gpu02": ()}


def test_nodes_from_the_command_line(tmp_path: Path) -> None:
    given = tmp_path / "given.toml"
    given.write_text(
        '[slurm]\npartition = "mig"\nstate = "x.db"\n[clocks]\nenabled = true\nnodes = ["b"]\n'
        '[[nodes]]\nname = "a"\ngpus = ["h100-80gb"]\nconfiguration = 2\npartitioner = "day-night"\n'
        '[[nodes]]\nname = "b"\ngpus = ["a100-40gb", "a100-40gb"]\n'
    )
    specs = config_nodes(given)
    assert specs == (
        NodeSpec("a", (("h100-80gb", 2),), "day-night"),
        NodeSpec("b", (("a100-40gb", 3), ("a100-40gb", 3))),
    )
    assert sandbox_module._sandbox_nodes(given, None, None) == specs
    copies = sandbox_module._sandbox_nodes(given, "3", [("a100-40gb", 1)])
    assert [s.name for s in copies] == ["node1", "node2", "node3"]
    assert {(s.gpus, s.partitioner) for s in copies} == {((("a100-40gb", 1),), "day-night")}
    assert sandbox_module._sandbox_nodes(given, "1", None) == ()  # one node: the host's, as without --nodes
    assert sandbox_module._sandbox_nodes(None, None, None) == ()
    assert [s.name for s in sandbox_module._sandbox_nodes(None, "2", None)] == ["node1", "node2"]
    settings = sandbox_module._from_config(given)[2]
    sandbox_module._many_settings(given, settings, specs)
    assert "partitioner" not in settings and settings["clocks"]["nodes"] == ["b"]
    assert uniform_nodes(2, specs[1])[1] == NodeSpec("node2", specs[1].gpus)
    assert node_state_shell(Path("/tmp/a b")) == "'/tmp/a b/fake_gpus'/\"$SLURMD_NODENAME\".json"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "0"], "--nodes must be a whole number >= 1, got 0"),
        (["--nodes", "two"], "--nodes must be a whole number >= 1, got 'two'"),
        (["--config", "{bad}"], "node name 'gpu[1-2]' is not one the sandbox gives Slurm"),
        (["--config", "{default}"], "node name 'default' is not one the sandbox gives Slurm"),
        (
            ["--nodes", "2", "--suspend-time", "0"],
            "--suspend-time must be a whole number of seconds >= 1, got 0",
        ),
        (["--suspend-time", "5"], "--suspend-time needs a many-node sandbox"),
    ],
)
def test_bad_nodes_are_one_line_and_exit_2(
    tmp_path: Path,
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[object] = []
    monkeypatch.setattr(sandbox_module, "start", lambda *args, **kwargs: started.append(kwargs))
    for name, node in (("bad", "gpu[1-2]"), ("default", "default")):
        (tmp_path / f"{name}.toml").write_text(
            '[slurm]\npartition = "mig"\nstate = "x.db"\n[[nodes]]\nname = "ok"\n'
            f'[[nodes]]\nname = "{node}"\n'
        )
    argv = [part.format(bad=tmp_path / "bad.toml", default=tmp_path / "default.toml") for part in argv]
    assert sandbox_module.main(["start", str(tmp_path / "box"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("slurm sandbox: ") and message in err and err.count("\n") == 1
    assert started == []  # nothing was started


@pytest.mark.parametrize("name", ["gpu01", "n", "node-1", "a_b"])
def test_names_slurm_takes(name: str) -> None:
    assert check_node_name(name) == name


@pytest.mark.parametrize("name", ["", "1gpu", "a,b", "a b", "n[1-2]", "ALL", "x" * 64, "a.b"])
def test_names_the_sandbox_refuses(name: str) -> None:
    with pytest.raises(SlurmError, match="is not one the sandbox gives Slurm"):
        check_node_name(name)


def test_turning_a_node_off_or_on_that_is_not_a_sandbox_node_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = sandbox_module._layout(tmp_path)
    paths["conf"].write_text(_single_conf(tmp_path))
    for action in ("power-off", "power-on"):
        assert sandbox_module.main([action, str(tmp_path), "n[1-2]"]) == 2
        err = capsys.readouterr().err
        assert err == "slurm sandbox: no node 'n1' in this sandbox; its nodes: host\n"
        assert sandbox_module.main([action, str(tmp_path), "host"]) == 2
        assert "is not a node of a many-node sandbox" in capsys.readouterr().err


def test_power_saving_lines_name_the_sandboxs_programs(tmp_path: Path) -> None:
    lines = sandbox_module._power_saving(tmp_path, 7, (NodeSpec("a"), NodeSpec("b")))
    assert lines == [
        "SuspendTime=7",
        "SuspendTimeout=5",
        "ResumeTimeout=30",
        f"SuspendProgram={tmp_path}/etc/suspend.sh",
        f"ResumeProgram={tmp_path}/etc/resume.sh",
    ]
    assert sandbox_module._power_saving(tmp_path, None, ()) == []
