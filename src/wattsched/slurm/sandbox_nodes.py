"""The nodes of a many-node Slurm sandbox: what each is given, where its files are, and its slurm.conf lines.

A many-node sandbox (:func:`wattsched.slurm.sandbox.start` with ``nodes``) runs one slurmd per node on one
host (Debian's ``slurmd -N NODE``), each on its own port, with its own fake GPUs::

    DIR/etc/slurm.conf                      every node's line (Port=); spool DIR/spool/<node>
    DIR/etc/nodes/<node>/slurm.conf         a link to DIR/etc/slurm.conf: the node's slurmd's SLURM_CONF
    DIR/etc/nodes/<node>/fake_gpus.conf     the node's fake GPUs (Slurm reads it beside its SLURM_CONF)
    DIR/fake_gpus/<node>.json               the node's fake GPU state (its controller backend)
    DIR/dev/<node>/fakegpu<N>               its character devices, minors apart from every other node's
    DIR/run/slurmd-<node>.pid, DIR/log/slurmd-<node>.log

The node's Prolog and Epilog find its state file by ``$SLURMD_NODENAME``. ``DIR/etc/suspend.sh`` and
``resume.sh`` are Slurm's SuspendProgram and ResumeProgram for the nodes (``power-off`` / ``power-on``: the
node's slurmd ended or started, its fake GPUs off or on). Node names are the controller
config's (``[[nodes]] name``), or ``node1`` … ``nodeN`` for ``N`` copies of one node (:func:`uniform_nodes`).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wattsched.slurm.client import SlurmError
from wattsched.slurm.gres_update import NODE_FOLDER

__all__ = [
    "MINORS_PER_NODE",
    "NodeSpec",
    "SandboxNode",
    "check_node_name",
    "config_nodes",
    "many_node_conf",
    "node_conf_path",
    "node_state_path",
    "node_state_shell",
    "uniform_nodes",
]

#: Device minors set aside for each node (its first is ``index × MINORS_PER_NODE``): more than the GPU
#: devices of 16 GPUs of 7 compute slices each.
MINORS_PER_NODE = 128
# A name Slurm takes as one node in every setting (no hostlist brackets, commas or spaces) and that is safe
# as a file name; DEFAULT and ALL mean something else to Slurm.
_NODE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
_RESERVED = frozenset({"default", "all"})
_STATE_FOLDER = "fake_gpus"
# slurm.conf settings a many-node sandbox gives each slurmd (``%n``: the node's name), relative to DIR.
_PER_NODE = {
    "SlurmdSpoolDir": "spool/%n",
    "SlurmdPidFile": "run/slurmd-%n.pid",
    "SlurmdLogFile": "log/slurmd-%n.log",
}


@dataclass(frozen=True)
class NodeSpec:
    """One node to start: its Slurm name, its fake GPUs ``(catalogue name, configuration id)`` in index order,
    and the partitioner its controller config gives it (``static``: none)."""

    name: str
    gpus: tuple[tuple[str, int | str], ...] = (("a100-40gb", 3),)
    partitioner: str = "static"
    partitioner_options: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class SandboxNode:
    """One running node of a many-node sandbox: its slurmd's ``SLURM_CONF``, port, devices and GPU state."""

    spec: NodeSpec
    #: The node's ``SLURM_CONF`` (a link to the sandbox's slurm.conf beside the node's fake_gpus.conf).
    conf_path: Path
    port: int
    #: The node's GPU devices in Slurm's index order: MIG UUIDs and their GRES types.
    gpu_uuids: tuple[str, ...]
    gres_types: tuple[str, ...]
    fake_gpu_state: Path
    log: Path

    @property
    def name(self) -> str:
        return self.spec.name


def check_node_name(name: str) -> str:
    """``name`` if Slurm and the sandbox's files take it as a node name, else a one-line
    :class:`SlurmError`."""
    if not _NODE_NAME.match(name) or name.lower() in _RESERVED:
        raise SlurmError(
            f"node name {name!r} is not one the sandbox gives Slurm: a letter, then up to 62 letters, "
            "digits, '-' or '_' (not DEFAULT or ALL)"
        )
    return name


def uniform_nodes(count: int, first: NodeSpec) -> tuple[NodeSpec, ...]:
    """``count`` copies of ``first`` (its GPUs and partitioner) named ``node1`` … ``node<count>``."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise SlurmError(f"--nodes must be a whole number >= 1, got {count!r}")
    return tuple(
        NodeSpec(f"node{k}", first.gpus, first.partitioner, first.partitioner_options)
        for k in range(1, count + 1)
    )


def config_nodes(path: Path) -> tuple[NodeSpec, ...]:
    """Every ``[[nodes]]`` entry of a controller config as a node to start (GPUs default ``a100-40gb``,
    configuration 3, as for the one-node sandbox); a one-line :class:`SlurmError` for a table of the wrong
    shape (names are checked when the nodes start: a one-node sandbox is named after the host)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SlurmError(f"{path}: cannot read the controller config ({exc})") from None
    entries = raw.get("nodes") or [{}]
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise SlurmError(f"{path}: [[nodes]] must be a list of tables")
    specs = []
    for index, entry in enumerate(entries):
        at = f"{path}: nodes[{index}]"
        name, gpus = entry.get("name", f"node{index + 1}"), entry.get("gpus", ["a100-40gb"])
        options = entry.get("partitioner_options", {})
        if not isinstance(name, str):
            raise SlurmError(f"{at}.name must be a string")
        if not isinstance(gpus, list) or not all(isinstance(gpu, str) for gpu in gpus):
            raise SlurmError(f"{at}.gpus must be a list of GPU names")
        if not isinstance(options, dict):
            raise SlurmError(f"{at}.partitioner_options must be a table")
        ident = entry.get("configuration", 3)
        specs.append(
            NodeSpec(
                name,
                tuple((gpu, ident) for gpu in gpus),
                str(entry.get("partitioner", "static")),
                tuple(options.items()),
            )
        )
    if len({spec.name for spec in specs}) != len(specs):
        raise SlurmError(f"{path}: a node is named twice in [[nodes]]")
    return tuple(specs)


def node_conf_path(conf: Path, node: str) -> Path:
    """The ``SLURM_CONF`` of ``node``'s slurmd in the sandbox whose slurm.conf is ``conf``."""
    return conf.parent / NODE_FOLDER / node / "slurm.conf"


def node_state_path(top: Path, node: str) -> Path:
    """The fake GPU state file of ``node`` in the sandbox in ``top``."""
    return top / _STATE_FOLDER / f"{node}.json"


def node_state_shell(top: Path) -> str:
    """The state file of the node a Prolog or Epilog runs on, as a shell word (``$SLURMD_NODENAME``)."""
    return f'{shlex.quote(str(top / _STATE_FOLDER))}/"$SLURMD_NODENAME".json'


def many_node_conf(
    single: str,
    top: Path,
    host: str,
    partitions: Sequence[str],
    nodes: Sequence[tuple[str, int, int, str]],
) -> str:
    """The slurm.conf of a many-node sandbox, made from the one-node sandbox's ``single`` (written for node
    ``host``, the slurmctld host): each slurmd's spool, pid and log file per node (``%n``), and, instead of
    ``host``'s node line, one line per node ``(name, port, CPUs, Gres=)`` on 127.0.0.1 with its own
    ``Port=``; ``partitions`` (those of ``host``'s lines) hold every node."""
    names = ",".join(name for name, _, _, _ in nodes)
    template = ""
    lines = []
    for line in single.splitlines():
        key, _, _ = line.partition("=")
        if key in _PER_NODE:
            lines.append(f"{key}={top / _PER_NODE[key]}")
        elif line.startswith(f"NodeName={host} "):
            template = line
        elif any(line.startswith(f"PartitionName={name} Nodes={host} ") for name in partitions):
            lines.append(line.replace(f" Nodes={host} ", f" Nodes={names} ", 1))
        else:
            lines.append(line)
    if not template:
        raise SlurmError(f"no NodeName={host} line to make the nodes' lines from")
    node_lines = []
    for name, port, cpus, gres in nodes:
        line = template.replace(f"NodeName={host} ", f"NodeName={name} Port={port} ", 1)
        line = re.sub(r"\bCPUs=\d+", f"CPUs={cpus}", line)
        node_lines.append(re.sub(r"\bGres=\S+", f"Gres={gres}", line))
    first_partition = next(
        (
            n
            for n, line in enumerate(lines)
            if line.startswith("PartitionName=") and f" Nodes={names} " in line
        ),
        len(lines),
    )
    return "\n".join(lines[:first_partition] + node_lines + lines[first_partition:]) + "\n"
