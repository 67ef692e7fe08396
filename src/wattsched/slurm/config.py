"""The controller's configuration file (TOML), validated into typed values before anything runs.

```toml
[slurm]
partition = "mig"                  # its jobs are managed; every other job is left alone
state = "/var/lib/wattsched/slurm.db"
poll_s = 2.0                       # seconds between two looks at Slurm
time_origin = "midnight"           # the models' time 0: local midnight of the first start's day (a
                                   # partitioner's hours are the time of day), or "start": the first start
metrics_file = "/var/lib/node_exporter/textfile/wattsched.prom"  # optional: Prometheus metrics, rewritten
                                   # at every pass (node_exporter's textfile collector reads *.prom)
api = "auto"                       # how Slurm is driven: "cli" (its commands), "rest" (slurmrestd on
                                   # rest_socket), "auto" (slurmrestd where it answers there, else commands)
rest_socket = "/run/slurmrestd/slurmrestd.socket"  # slurmrestd's unix socket (JSON web tokens)
[scheduling]
policy = "edf-ss-restricted"       # any registry policy (wattsched mig policies)
placement = "first-fit"            # any registry placement (wattsched cluster run's): each new job's GPU
preemption = "requeue"             # or "off"
signal = "USR1"                    # sent to a job before it is requeued
grace_s = 30                       # seconds between the signal and the requeue
overdue_s = 10                     # a job past its predicted end is expected this much later
[[nodes]]
name = "gpu01"
gpus = ["h100-80gb", "h100-80gb"]  # catalogue names or files, one per GPU, in NVML index order
configuration = 3                  # every GPU's configuration
partitioner = "static"             # or any registry partitioner (wattsched mig partitioners): the
                                   # controller then repartitions the node's GPUs live (docs/slurm.md)
partitioner_options = {}           # keyword arguments of the partitioner (day-night: day_configuration...)
backend = "nvml"                   # or fake:FILE (a fake GPU state file)
[repartition]                      # optional: how a live repartition is carried out
requeue = false                    # true: preemptible jobs on destroyed slices are requeued (false: waited
                                   # for; "auto": requeued if predicted to end after max_wait_s)
max_wait_s = 600                   # give up (and reopen the drained slices) after waiting this long
max_attempts = 10                  # tries of the MIG change before giving up (rolled back)
reload_command = ["/usr/local/sbin/mig-gres-reload", "{node}"]  # brings Slurm's GRES to the new slices
reload_timeout_s = 120
[power]                            # optional: node power states (wattsched slurm power-settings)
suspend_command = ["ipmitool", "-H", "{node}-bmc", "chassis", "power", "soft"]  # {node}: each node
resume_command = ["ipmitool", "-H", "{node}-bmc", "chassis", "power", "on"]
turn_on_j_per_gpu = 5400           # energy of turning a server on, per GPU (J)
turn_on_s = 60                     # boot time (s); shutdown_s: time to turn off (s)
host_idle_w = 0                    # the host's own idle power beside its GPUs (W)
[clocks]                           # optional: GPU clocks (docs/slurm.md, "GPU clocks")
enabled = false                    # lock each GPU's SM clock to the level its running jobs need
nodes = ["gpu01"]                  # the nodes whose clocks are set (default: every node)
mem_mhz = 3201                     # memory clock locked with it (default: each GPU's default)
```
Relative paths (``state``, a ``fake:`` file, a GPU file) are read from the config file's folder.
"""

from __future__ import annotations

import math
import signal as signals
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from wattsched.cluster.placement import PLACEMENTS
from wattsched.cluster.spec import P2_SLOT_S, P2_TURN_ON_J, ClusterOptions
from wattsched.errors import ConfigError, InputError, UnknownNameError, did_you_mean
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import Configuration, MigGpu
from wattsched.mig.policies import POLICIES

__all__ = [
    "STATIC_PARTITIONERS",
    "ClocksConfig",
    "ControllerConfig",
    "NodeConfig",
    "PowerConfig",
    "RepartitionConfig",
    "load_config",
]

#: Partitioners that never change a GPU's configuration (the controller then never repartitions).
STATIC_PARTITIONERS = frozenset({"static", "no-mig"})

_SECTIONS = {
    "slurm": {
        "partition",
        "state",
        "poll_s",
        "slurm_conf",
        "time_origin",
        "metrics_file",
        "api",
        "rest_socket",
    },
    "scheduling": {"policy", "placement", "preemption", "signal", "grace_s", "overdue_s"},
    "power": {
        "suspend_command",
        "resume_command",
        "command_timeout_s",
        "slot_s",
        "idle_slots",
        "turn_on_j_per_gpu",
        "turn_on_s",
        "shutdown_s",
        "host_idle_w",
    },
    "repartition": {"requeue", "max_wait_s", "max_attempts", "reload_command", "reload_timeout_s"},
    "clocks": {"enabled", "nodes", "mem_mhz"},
}
_NODE_KEYS = {
    "name",
    "gpus",
    "configuration",
    "partitioner",
    "partitioner_options",
    "backend",
    "gres_per_gpu",
}


@dataclass(frozen=True)
class NodeConfig:
    """One Slurm node of the managed partition and its MIG GPUs (in NVML index order)."""

    name: str
    gpus: tuple[MigGpu, ...]
    configurations: tuple[Configuration, ...]
    partitioner: str
    backend: str
    #: Keyword arguments of the partitioner's factory.
    partitioner_options: tuple[tuple[str, Any], ...] = ()
    #: Whether the node's GRES types name their GPU (``a100_3g.20gb_gpu1``: :func:`wattsched.slurm.gres
    #: .node_gres` with ``per_gpu``), so that a release names the GPU and not only the slice type.
    gres_per_gpu: bool = False

    @property
    def dynamic(self) -> bool:
        """Whether the node's partitioner may change its GPUs' configuration."""
        return self.partitioner not in STATIC_PARTITIONERS


@dataclass(frozen=True)
class RepartitionConfig:
    """How a live repartition is carried out (docs/slurm.md, "Dynamic MIG"): whether preemptible jobs on
    the slices it destroys are requeued (else waited for), how long to wait for them at most, how many tries
    of the MIG change before it is rolled back, and the command (``{node}`` replaced) that makes Slurm see
    the node's new GRES (empty: none is run; a sandbox's config names its own)."""

    #: ``True``: every preemptible job on a destroyed slice is requeued; ``"auto"``: only one the GPU's model
    #: predicts to end after ``max_wait_s`` of waiting (waiting for it would give the change up); ``False``:
    #: they are all waited for.
    requeue: bool | Literal["auto"] = False
    max_wait_s: float = 600.0
    max_attempts: int = 10
    reload_command: tuple[str, ...] = ()
    reload_timeout_s: float = 120.0


@dataclass(frozen=True)
class PowerConfig:
    """Node power states: the commands that turn a node off and on (``{node}`` replaced by its name;
    empty: the calls are journaled only) and the figures of the break-even wait
    (:mod:`wattsched.slurm.power`)."""

    suspend_command: tuple[str, ...] = ()
    resume_command: tuple[str, ...] = ()
    command_timeout_s: float = 60.0
    slot_s: float = P2_SLOT_S
    idle_slots: int | None = None
    turn_on_j_per_gpu: float = P2_TURN_ON_J
    turn_on_s: float = 60.0
    shutdown_s: float = 30.0
    host_idle_w: float = 0.0


@dataclass(frozen=True)
class ClocksConfig:
    """GPU clocks (off by default): on the nodes named, each GPU's SM clock is locked to the level its
    running jobs need (:mod:`wattsched.slurm.clocks`), with the memory clock at ``mem_mhz`` (``None``: each
    GPU's default memory clock)."""

    enabled: bool = False
    #: The nodes whose GPU clocks are set (every configured node unless the config names some).
    nodes: tuple[str, ...] = ()
    mem_mhz: int | None = None

    def manages(self, node: str) -> bool:
        """Whether the clocks of ``node``'s GPUs are set."""
        return self.enabled and node in self.nodes


@dataclass(frozen=True)
class ControllerConfig:
    partition: str
    state_path: Path
    poll_s: float
    policy: str
    preemption: bool
    signal: str
    grace_s: float
    overdue_s: float
    nodes: tuple[NodeConfig, ...]
    slurm_conf: str | None = None
    source: Path | None = None
    #: The GPU models' time 0 (kept in the state file at the first start): ``"midnight"`` (local midnight of
    #: that day: a partitioner's hours of the day are the wall clock's) or ``"start"`` (the first start).
    time_origin: Literal["midnight", "start"] = "midnight"
    power: PowerConfig = PowerConfig()
    repartition: RepartitionConfig = RepartitionConfig()
    clocks: ClocksConfig = ClocksConfig()
    #: The placement (:data:`~wattsched.cluster.placement.PLACEMENTS`) that picks each new job's GPU;
    #: default the data-centre simulator's.
    placement: str = ClusterOptions.placement
    #: Where the Prometheus metrics are written at every pass (``None``: not written).
    metrics_path: Path | None = None
    #: How Slurm is driven (:func:`wattsched.slurm.rest.open_client`): ``"cli"`` its commands, ``"rest"``
    #: slurmrestd on :attr:`rest_socket`, ``"auto"`` slurmrestd where it answers there, else the commands.
    api: Literal["auto", "cli", "rest"] = "auto"
    rest_socket: Path | None = None


def load_config(path: str | Path) -> ControllerConfig:
    """Read and check a controller config; every error is one line naming the file and the key."""
    where = str(path)
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("config file not found", path=where) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read config: {exc}", path=where) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"config is not valid TOML ({exc})", path=where) from None
    return parse_config(raw, base=Path(path).resolve().parent, where=where)


def parse_config(raw: dict[str, Any], *, base: Path, where: str) -> ControllerConfig:
    for key in raw:
        if key not in (*_SECTIONS, "nodes"):
            raise ConfigError(f"{where}: unknown section [{key}]{did_you_mean(key, [*_SECTIONS, 'nodes'])}")
    for section, keys in _SECTIONS.items():
        table = raw.get(section, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: [{section}] must be a table")
        for key in table:
            if key not in keys:
                raise ConfigError(f"{where}: unknown key {section}.{key}{did_you_mean(key, sorted(keys))}")
    slurm = raw.get("slurm", {})
    scheduling = raw.get("scheduling", {})
    partition = _text(slurm, "partition", where, section="slurm")
    state = Path(_text(slurm, "state", where, section="slurm"))
    policy = _text(scheduling, "policy", where, section="scheduling", default="edf-ss-restricted")
    if policy not in POLICIES.available():
        raise ConfigError(
            f"{where}: scheduling.policy: unknown policy '{policy}'; valid: {', '.join(POLICIES.available())}"
        )
    placement = _text(scheduling, "placement", where, section="scheduling", default=ClusterOptions.placement)
    try:
        PLACEMENTS.factory(placement)
    except UnknownNameError as exc:
        raise ConfigError(f"{where}: scheduling.placement: {exc}") from None
    metrics = slurm.get("metrics_file")
    metrics_path = None
    if metrics is not None:
        metrics_path = Path(_text(slurm, "metrics_file", where, section="slurm"))
        metrics_path = metrics_path if metrics_path.is_absolute() else base / metrics_path
        if metrics_path.suffix != ".prom":
            raise ConfigError(
                f"{where}: slurm.metrics_file must end in .prom (node_exporter's textfile collector reads "
                f"only those), got '{metrics}'"
            )
    time_origin = _text(slurm, "time_origin", where, section="slurm", default="midnight")
    if time_origin not in ("midnight", "start"):
        raise ConfigError(f"{where}: slurm.time_origin: expected 'midnight' or 'start', got '{time_origin}'")
    api = _text(slurm, "api", where, section="slurm", default="auto")
    if api not in ("auto", "cli", "rest"):
        raise ConfigError(f"{where}: slurm.api: expected 'auto', 'cli' or 'rest', got '{api}'")
    rest_socket = None
    if slurm.get("rest_socket") is not None:
        rest_socket = Path(_text(slurm, "rest_socket", where, section="slurm"))
        rest_socket = rest_socket if rest_socket.is_absolute() else base / rest_socket
    elif api == "rest":
        raise ConfigError(f"{where}: slurm.api = 'rest' needs slurm.rest_socket (slurmrestd's unix socket)")
    preemption = _text(scheduling, "preemption", where, section="scheduling", default="requeue")
    if preemption not in ("requeue", "off"):
        raise ConfigError(f"{where}: scheduling.preemption: expected 'requeue' or 'off', got '{preemption}'")
    signal = _text(scheduling, "signal", where, section="scheduling", default="USR1").upper()
    if not hasattr(signals, f"SIG{signal.removeprefix('SIG')}"):
        raise ConfigError(f"{where}: scheduling.signal: unknown signal '{signal}'")
    nodes_raw = raw.get("nodes")
    if not isinstance(nodes_raw, list) or not nodes_raw:
        raise ConfigError(f"{where}: give at least one [[nodes]] table")
    nodes = tuple(_node(node, i, base, where) for i, node in enumerate(nodes_raw))
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: a node is named twice in [[nodes]]")
    return ControllerConfig(
        partition=partition,
        state_path=state if state.is_absolute() else base / state,
        poll_s=_number(slurm, "poll_s", where, "slurm", default=2.0, low=0.05),
        policy=policy,
        preemption=preemption == "requeue",
        signal=signal.removeprefix("SIG"),
        grace_s=_number(scheduling, "grace_s", where, "scheduling", default=30.0, low=0.0),
        overdue_s=_number(scheduling, "overdue_s", where, "scheduling", default=10.0, low=1e-3),
        nodes=nodes,
        slurm_conf=slurm.get("slurm_conf"),
        source=Path(where),
        time_origin="start" if time_origin == "start" else "midnight",
        power=_power(raw.get("power", {}), where),
        clocks=_clocks(raw.get("clocks", {}), nodes, where),
        repartition=_repartition(raw.get("repartition", {}), where),
        placement=placement,
        metrics_path=metrics_path,
        api="rest" if api == "rest" else "cli" if api == "cli" else "auto",
        rest_socket=rest_socket,
    )


def _repartition(table: dict[str, Any], where: str) -> RepartitionConfig:
    requeue = table.get("requeue", False)
    if not isinstance(requeue, bool) and requeue != "auto":
        raise ConfigError(f'{where}: repartition.requeue must be true, false or "auto", got {requeue!r}')
    attempts = table.get("max_attempts", 10)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ConfigError(f"{where}: repartition.max_attempts must be an integer >= 1, got {attempts!r}")
    command = table.get("reload_command", [])
    if not isinstance(command, list) or not all(isinstance(part, str) and part for part in command):
        raise ConfigError(
            f"{where}: repartition.reload_command must be a list of non-empty strings (a command's words)"
        )
    return RepartitionConfig(
        requeue=requeue,
        max_wait_s=_number(table, "max_wait_s", where, "repartition", default=600.0, low=0.0),
        max_attempts=attempts,
        reload_command=tuple(command),
        reload_timeout_s=_number(table, "reload_timeout_s", where, "repartition", default=120.0, low=0.1),
    )


def _clocks(table: dict[str, Any], nodes: tuple[NodeConfig, ...], where: str) -> ClocksConfig:
    """``[clocks]``, refused where a managed GPU has no clock table in the catalogue (its levels come from
    there) or lacks the memory clock asked for."""
    enabled = table.get("enabled", False)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: clocks.enabled must be true or false, got {enabled!r}")
    known = [node.name for node in nodes]
    named = table.get("nodes", known)
    if not isinstance(named, list) or not all(isinstance(name, str) for name in named):
        raise ConfigError(f"{where}: clocks.nodes must be a list of node names")
    for name in named:
        if name not in known:
            raise ConfigError(
                f"{where}: clocks.nodes: no node '{name}' in [[nodes]]{did_you_mean(name, known)}"
            )
    mem_mhz = table.get("mem_mhz")
    if mem_mhz is not None and (isinstance(mem_mhz, bool) or not isinstance(mem_mhz, int) or mem_mhz <= 0):
        raise ConfigError(f"{where}: clocks.mem_mhz must be a whole number of MHz > 0, got {mem_mhz!r}")
    config = ClocksConfig(enabled, tuple(named), mem_mhz)
    for node in nodes:
        if not config.manages(node.name):
            continue
        for index, gpu in enumerate(node.gpus):
            if gpu.clocks is None:
                raise ConfigError(
                    f"{where}: clocks.enabled: node '{node.name}' GPU {index} ({gpu.name}) has no clock "
                    "table in the catalogue (clocks: unsupported); leave the node out of clocks.nodes"
                )
            if mem_mhz is not None and mem_mhz not in gpu.clocks.mem_mhz:
                raise ConfigError(
                    f"{where}: clocks.mem_mhz: {mem_mhz} MHz is not a memory clock of node '{node.name}' "
                    f"GPU {index} ({gpu.name}; it has {', '.join(map(str, gpu.clocks.mem_mhz))})"
                )
    return config


def _power(table: dict[str, Any], where: str) -> PowerConfig:
    commands = {}
    for key in ("suspend_command", "resume_command"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(part, str) and part for part in value):
            raise ConfigError(f"{where}: power.{key} must be a list of non-empty strings (a command's words)")
        commands[key] = tuple(value)
    idle_slots = table.get("idle_slots")
    if idle_slots is not None and (
        isinstance(idle_slots, bool) or not isinstance(idle_slots, int) or idle_slots < 0
    ):
        raise ConfigError(f"{where}: power.idle_slots must be an integer >= 0, got {idle_slots!r}")
    default = PowerConfig()
    return PowerConfig(
        suspend_command=commands["suspend_command"],
        resume_command=commands["resume_command"],
        command_timeout_s=_number(table, "command_timeout_s", where, "power", default=60.0, low=0.1),
        slot_s=_number(table, "slot_s", where, "power", default=default.slot_s, low=1e-3),
        idle_slots=idle_slots,
        turn_on_j_per_gpu=_number(
            table, "turn_on_j_per_gpu", where, "power", default=default.turn_on_j_per_gpu, low=0.0
        ),
        turn_on_s=_number(table, "turn_on_s", where, "power", default=60.0, low=0.0),
        shutdown_s=_number(table, "shutdown_s", where, "power", default=30.0, low=0.0),
        host_idle_w=_number(table, "host_idle_w", where, "power", default=0.0, low=0.0),
    )


def _node(raw: object, index: int, base: Path, where: str) -> NodeConfig:
    at = f"{where}: nodes[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{at} must be a table")
    for key in raw:
        if key not in _NODE_KEYS:
            raise ConfigError(f"{at}: unknown key '{key}'{did_you_mean(key, sorted(_NODE_KEYS))}")
    name = _text(raw, "name", at)
    gpus_raw = raw.get("gpus")
    if not isinstance(gpus_raw, list) or not gpus_raw or not all(isinstance(g, str) for g in gpus_raw):
        raise ConfigError(f"{at}: gpus must be a non-empty list of catalogue names or files")
    gpus = tuple(
        load_gpu(g if not g.endswith(".toml") or Path(g).is_absolute() else str(base / g)) for g in gpus_raw
    )
    configuration = raw.get("configuration", "no-mig")
    if isinstance(configuration, bool) or not isinstance(configuration, int | str):
        raise ConfigError(f"{at}: configuration must be a configuration id or 'no-mig'")
    try:
        configurations = tuple(gpu.configuration(configuration) for gpu in gpus)
    except (ConfigError, KeyError, ValueError) as exc:
        raise ConfigError(f"{at}: configuration {configuration!r}: {exc}") from None
    partitioner = _text(raw, "partitioner", at, default="static")
    from wattsched.mig.partition import PARTITIONERS  # registers the built-in partitioners

    if partitioner not in PARTITIONERS:
        valid = PARTITIONERS.available()
        raise ConfigError(
            f"{at}: unknown partitioner '{partitioner}'{did_you_mean(partitioner, valid)}; "
            f"valid: {', '.join(sorted(valid))}"
        )
    options = raw.get("partitioner_options", {})
    if not isinstance(options, dict):
        raise ConfigError(f"{at}: partitioner_options must be a table of the partitioner's arguments")
    try:
        PARTITIONERS.check_options(partitioner, options)
    except ConfigError as exc:
        raise ConfigError(f"{at}: partitioner_options: {exc}") from None
    if partitioner not in STATIC_PARTITIONERS:
        if any(not c.mig_enabled for c in configurations):
            raise ConfigError(
                f"{at}: partitioner '{partitioner}' repartitions MIG GPUs; configuration "
                f"{configuration!r} has MIG off (wattsched never changes MIG mode)"
            )
        for gpu in gpus:
            try:
                PARTITIONERS.make(partitioner, **options).reset(gpu, 0)
            except (ConfigError, TypeError, ValueError) as exc:
                raise ConfigError(f"{at}: partitioner '{partitioner}' on {gpu.name}: {exc}") from None
    backend = _text(raw, "backend", at, default="nvml")
    if backend.startswith("fake:"):
        file = Path(backend.removeprefix("fake:"))
        backend = f"fake:{file if file.is_absolute() else base / file}"
    elif backend != "nvml":
        raise ConfigError(f"{at}: backend must be 'nvml' or 'fake:FILE', got '{backend}'")
    per_gpu = raw.get("gres_per_gpu", False)
    if not isinstance(per_gpu, bool):
        raise ConfigError(f"{at}: gres_per_gpu must be true or false, got {per_gpu!r}")
    return NodeConfig(
        name, gpus, configurations, partitioner, backend, tuple(sorted(options.items())), per_gpu
    )


def _text(
    table: dict[str, Any], key: str, where: str, *, section: str | None = None, default: str | None = None
) -> str:
    value = table.get(key, default)
    name = f"{section}.{key}" if section else key
    if value is None:
        raise ConfigError(f"{where}: {name} is required")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {name} must be a non-empty string, got {value!r}")
    return value


def _number(
    table: dict[str, Any], key: str, where: str, section: str, *, default: float, low: float
) -> float:
    value = table.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < low
    ):
        raise ConfigError(f"{where}: {section}.{key} must be a number >= {low}, got {value!r}")
    return float(value)
