"""A real single-host Slurm in one directory, with fake MIG GPUs: for the tests and for trying wattsched.

:func:`start` (as root) writes everything under ``DIR`` and starts three daemons there — five with the
accounting database (``accounting=True``: a private MariaDB and slurmdbd, :mod:`.sandbox_accounting`)::

    DIR/etc/slurm.conf          SLURM_CONF for every command (Sandbox.env)
    DIR/etc/fake_gpus.conf      one line per MIG instance of DIR/fake_gpu.json, with its MIG-… UUID
    DIR/etc/job_submit.lua      holds every job of the managed partition at submission
    DIR/etc/prolog.sh, epilog.sh mark the job's MIG instances busy / idle in DIR/fake_gpu.json
    DIR/fake_gpu.json           the fake GPUs' state (wattsched.hardware.gpu.fake_state)
    DIR/dev/fakegpu<N>          character devices for fake_gpus.conf (or /dev/wattsched-<id>-fakegpu<N>)
    DIR/munge/                  a private munged (own key and socket; a system munge is left alone)
    DIR/state, DIR/spool, DIR/log, DIR/run   slurmctld state, slurmd spool, logs, pid files
    DIR/db/, DIR/etc/slurmdbd.conf          with accounting: MariaDB's data and socket, slurmdbd's config
    DIR/rest/slurmrestd.socket, DIR/etc/jwt.key   with rest (26.05): slurmrestd's socket, the tokens' key

Ports are free loopback ports picked at start, so sandboxes and a system Slurm do not clash. Partitions:
the managed one (default ``mig``, Slurm's default partition) and ``debug`` which wattsched leaves alone.
``AuthInfo=cred_expire`` is short (10 s; it must outlast a job's launch and Prolog) so that a requeued job
is eligible again quickly (Slurm's default: 121 s); scheduling passes run every second. Ended jobs stay in
``squeue`` for ``MinJobAge`` (300 s) and are written to ``DIR/log/jobcomp.txt`` for good
(``JobCompType=jobcomp/filetxt``).

Slurm's Prolog and Epilog get the job's GPUs as ``CUDA_VISIBLE_DEVICES=MIG-…`` (from fake_gpus.conf's
unique ids, flag ``nvidia_gpu_env``) and ``SLURM_JOB_GPUS=<indices>``; the default scripts run
``wattsched slurm prolog|epilog --state DIR/fake_gpu.json``, which mark those instances busy (with the job's
kind from its annotation) and idle. :func:`stop` cancels the jobs, ends only the daemons
:func:`start` recorded in ``DIR/run``, removes devices it made outside ``DIR``, and may be called twice.
After a repartition of the fake GPUs, :func:`reload_gres` (``reload DIR``) brings slurm.conf's node line,
fake_gpus.conf and the daemons to the new instances.
``python -m wattsched.slurm.sandbox start DIR [--config FILE.toml] [--gpu NAME:CONFIG ...] [--no-accounting]``
/ ``stop DIR``: the command starts the accounting database where MariaDB and slurmdbd are installed (else it
says so in one line and starts without); :func:`start` only when asked (``accounting=None``: where
installed), which keeps the many sandboxes of the tests quick.

Given ``nodes`` (:class:`~wattsched.slurm.sandbox_nodes.NodeSpec`), :func:`start` runs one slurmd per node
instead, each with its own port, fake GPUs and state file (:mod:`wattsched.slurm.sandbox_nodes` has the
layout); :func:`stop` ends them all, :func:`reload_gres` reloads one node, and :func:`power_off` /
:func:`power_on` (Slurm's SuspendProgram / ResumeProgram there) turn one off and on.
``python -m wattsched.slurm.sandbox start DIR [--config FILE.toml] [--gpu NAME:CONFIG ...] [--nodes N]`` /
``stop DIR``: a config with several ``[[nodes]]`` starts them all, ``--nodes N`` N copies of its first.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import wattsched
from wattsched.cluster.spec import P2_TURN_ON_J
from wattsched.hardware.gpu.backend import GpuError
from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type, is_state_file
from wattsched.slurm import roots, sandbox_accounting
from wattsched.slurm.client import SlurmClient, SlurmError
from wattsched.slurm.gres_update import (
    NODE_FOLDER,
    fake_devices,
    fake_gpus_conf,
    fake_gpus_path,
    gres_spec,
    node_cpus,
    spare_count,
    write_fake_gres,
)
from wattsched.slurm.rest import RestClient
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

__all__ = [
    "ALL_DAEMONS",
    "DAEMONS",
    "NodeSpec",
    "Sandbox",
    "SandboxNode",
    "main",
    "power_off",
    "power_on",
    "reload_gres",
    "start",
    "stop",
    "write_controller_config",
]

#: The daemons a sandbox runs, in start order (stopped in reverse).
DAEMONS = ("munged", "slurmctld", "slurmd")
#: Every daemon a sandbox may run, with the accounting database's, in start order (stopped in reverse).
ALL_DAEMONS = ("munged", *sandbox_accounting.ACCOUNTING_DAEMONS, "slurmctld", "slurmd")

#: The user and group id slurmrestd runs as (``nobody``: it refuses root and SlurmUser).
_REST_ID = 65534

#: While a sandbox of another Slurm release than the host's is started or reloaded: the folder of the
#: wrappers that run that release's commands in its root filesystem (:mod:`wattsched.slurm.roots`).
_BIN = roots.COMMAND_DIR


@dataclass(frozen=True)
class Sandbox:
    """A running sandbox: where everything is, and the fake GPUs Slurm sees."""

    directory: Path
    conf_path: Path
    node: str
    partition: str
    unmanaged_partition: str
    #: ``(catalogue name, configuration id)`` of each fake GPU.
    gpus: tuple[tuple[str, int | str], ...]
    #: The node's GPU devices in Slurm's index order: MIG UUIDs and their GRES types.
    gpu_uuids: tuple[str, ...]
    gres_types: tuple[str, ...]
    fake_gpu_state: Path
    ports: tuple[int, int]
    logs: dict[str, Path] = field(default_factory=dict)
    #: The Slurm release the daemons run (``major.minor``), and where its commands are when it is not the
    #: host's (wrappers into its root filesystem; ``None``: the host's own commands).
    slurm: str | None = None
    bin_dir: Path | None = None
    #: Whether it keeps accounting (slurmdbd on ``dbd_port``, MariaDB in ``DIR/db``).
    accounting: bool = False
    dbd_port: int | None = None
    #: A many-node sandbox's nodes (the fields above then describe the first); empty for one node.
    nodes: tuple[SandboxNode, ...] = ()
    #: slurmrestd's unix socket (``DIR/rest/slurmrestd.socket``) where it was started (``rest=True``).
    rest_socket: Path | None = None

    @property
    def env(self) -> dict[str, str]:
        """What Slurm's commands need to talk to this sandbox (and, for another release than the host's,
        ``PATH`` with its commands first)."""
        env = {"SLURM_CONF": str(self.conf_path)}
        if self.bin_dir is not None:
            env["PATH"] = f"{self.bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        return env

    def client(self, timeout_s: float = 30.0) -> SlurmClient:
        """A client on this sandbox that knows each node's MIG UUIDs."""
        uuids = {node.name: node.gpu_uuids for node in self.nodes} or {self.node: self.gpu_uuids}
        return SlurmClient(self.conf_path, timeout_s=timeout_s, gpu_uuids=uuids, bin_dir=self.bin_dir)

    def rest_client(self, timeout_s: float = 30.0) -> RestClient:
        """A client through this sandbox's slurmrestd (started with ``rest=True``), its tokens from
        ``scontrol token``."""
        if self.rest_socket is None:
            raise SlurmError(f"the sandbox in {self.directory} runs no slurmrestd (start it with rest=True)")
        return RestClient(self.rest_socket, self.client(timeout_s), timeout_s=timeout_s)


def start(
    directory: str | Path,
    *,
    gpus: Sequence[tuple[str, int | str]] = (("a100-40gb", 3),),
    partition: str = "mig",
    unmanaged_partition: str = "debug",
    prolog: Sequence[str] | None = None,
    epilog: Sequence[str] | None = None,
    extra_conf: Sequence[str] = (),
    cred_expire_s: int = 10,
    timeout_s: float = 30.0,
    seed: int = 0,
    spare_devices: bool = False,
    slurm: str | None = None,
    accounting: bool | None = False,
    nodes: Sequence[NodeSpec] = (),
    rest: bool = False,
    gres_per_gpu: bool = False,
) -> Sandbox:
    """Start munged, slurmctld and slurmd in ``directory`` (created; a sandbox already running there is
    stopped first) and wait until the node takes jobs; :class:`SlurmError` with the daemons' last log lines
    when it does not within ``timeout_s``.

    ``accounting``: also a private MariaDB and slurmdbd, started before slurmctld, the cluster registered
    (``sacct`` and ``sacctmgr`` work on the sandbox); ``None``: where they are installed. :class:`SlurmError`
    when asked for and not installed.

    ``spare_devices``: the node is given as many GPU devices as its GPUs have compute slices, the ones with
    no MIG instance behind them of GRES type ``spare`` — a node to be repartitioned live keeps its device
    count (Slurm 22.05 kills the jobs of a node whose count changed; see :mod:`wattsched.slurm.gres_update`).

    ``prolog`` / ``epilog``: shell command lines run (in order, with Slurm's Prolog environment) instead of
    the default ones that mark the job's MIG instances busy / idle; a failing one fails the Prolog, which in
    Slurm drains the node and requeues the job. ``extra_conf``: lines appended to slurm.conf.

    ``slurm``: the Slurm release to run (``major.minor``; default the host's). Another release than the
    host's runs from its root filesystem (made once and cached: :mod:`wattsched.slurm.roots`), its commands
    as wrappers in ``DIR/bin`` (:attr:`Sandbox.bin_dir`, :attr:`Sandbox.env`).

    ``nodes``: one slurmd per node given (``gpus`` unused; a node is given spare devices where
    ``spare_devices`` or its partitioner repartitions), named as given, on this host
    (:mod:`wattsched.slurm.sandbox_nodes`); without, one node named after the host.

    ``rest``: also slurmrestd (a release that has it: 26.05) on the unix socket ``DIR/rest/slurmrestd.socket``
    (:attr:`Sandbox.rest_socket`, :meth:`Sandbox.rest_client`), with JSON web tokens: slurm.conf gets
    ``AuthAltTypes=auth/jwt`` and the key ``DIR/etc/jwt.key``; ``scontrol token`` gives a token.

    ``gres_per_gpu``: every node's GRES types name their GPU (``a100_1g.10gb_gpu1``), so that a request names
    a GPU (:func:`~wattsched.hardware.gpu.fake_state.gres_type`); the controller config written for the
    sandbox says so (``gres_per_gpu = true`` on each node).
    """
    host = roots.host_release()
    other = slurm is not None and slurm != host
    if other:
        if os.geteuid() != 0:
            raise SlurmError("the Slurm sandbox runs its daemons as root; run it as root")
        missing: list[str] = []
    else:
        _require_root_and_binaries()
        missing = sandbox_accounting.missing_binaries()
    if accounting is None:
        accounting = not missing
    elif accounting and missing:
        raise SlurmError(
            f"the sandbox's accounting needs {', '.join(missing)} (Debian: apt-get install slurmdbd "
            "mariadb-server); start it without (--no-accounting)"
        )
    top = Path(directory).resolve()
    stop(top)
    root = roots.prepare_root(slurm) if other and slurm is not None else None
    paths = _layout(top)
    # a many-node sandbox's node files, from one started in this folder before
    shutil.rmtree(paths["etc"] / NODE_FOLDER, ignore_errors=True)
    bin_dir = None
    if root is not None:
        namespace = roots.Namespace(root, top)
        namespace.start()
        bin_dir = namespace.bin_dir
    token = _BIN.set(bin_dir)
    rest_socket = None
    try:
        if rest:
            if _which("slurmrestd") is None:
                stop(top)  # the mount namespace of another release, if one was opened
                raise SlurmError(
                    f"Slurm {slurm or host} has no slurmrestd here (the sandbox's rest needs 26.05)"
                )
            extra_conf = [*extra_conf, *_jwt_settings(paths)]
        if nodes:
            if accounting:
                raise SlurmError("the sandbox keeps accounting with one node only, so far (--no-accounting)")
            sandbox = _start_many(
                top,
                paths,
                nodes,
                partition=partition,
                unmanaged_partition=unmanaged_partition,
                prolog=prolog,
                epilog=epilog,
                extra_conf=extra_conf,
                cred_expire_s=cred_expire_s,
                timeout_s=timeout_s,
                seed=seed,
                spare_devices=spare_devices,
                gres_per_gpu=gres_per_gpu,
            )
        else:
            sandbox = _start(
                top,
                paths,
                gpus,
                partition,
                unmanaged_partition,
                prolog,
                epilog,
                extra_conf,
                cred_expire_s,
                seed,
                spare_devices,
                accounting,
                timeout_s,
                gres_per_gpu=gres_per_gpu,
            )
        if rest:
            try:
                rest_socket = _start_rest(top, paths, timeout_s)
            except (SlurmError, OSError):
                stop(top)
                raise
    finally:
        _BIN.reset(token)
    logs = {**sandbox.logs, "slurmrestd": paths["log"] / "slurmrestd.log"} if rest else sandbox.logs
    sandbox = replace(sandbox, slurm=slurm or host, bin_dir=bin_dir, rest_socket=rest_socket, logs=logs)
    _wait_for_node(sandbox, timeout_s)
    return sandbox


def _start(
    top: Path,
    paths: dict[str, Path],
    gpus: Sequence[tuple[str, int | str]],
    partition: str,
    unmanaged_partition: str,
    prolog: Sequence[str] | None,
    epilog: Sequence[str] | None,
    extra_conf: Sequence[str],
    cred_expire_s: int,
    seed: int,
    spare_devices: bool,
    accounting: bool,
    timeout_s: float,
    *,
    gres_per_gpu: bool = False,
) -> Sandbox:
    node = socket.gethostname().split(".")[0]
    state = FakeGpuState.create(paths["state_file"], list(gpus), seed=seed, gres_per_gpu=gres_per_gpu)
    devices = fake_devices(state, top, spare_count(state) if spare_devices else None)
    uuids = tuple(uuid for uuid, _, _ in devices)
    types = tuple(kind for _, kind, _ in devices)
    ports = (_free_port(), _free_port())
    dbd_port = _free_port() if accounting else None
    cpus = node_cpus(state)
    _write_text(paths["fake_gpus"], fake_gpus_conf(devices, cpus))
    _write_hooks(paths, partition, prolog, epilog, shlex.quote(str(paths["state_file"])))
    gres = gres_spec(devices)
    accounting_conf = (
        []
        if dbd_port is None
        else _lines(sandbox_accounting.slurm_conf_settings(dbd_port, paths["socket"], _all_gres_types(state)))
    )
    _write_text(
        paths["conf"],
        _slurm_conf(
            top,
            paths,
            node,
            ports,
            gres,
            partition,
            unmanaged_partition,
            cpus,
            cred_expire_s,
            [*accounting_conf, *extra_conf],
        ),
    )
    env = dict(os.environ, SLURM_CONF=str(paths["conf"]))
    _start_munge(paths, env)
    if dbd_port is not None:
        try:
            _start_accounting(top, paths, node, dbd_port, env, timeout_s)
        except (SlurmError, OSError, subprocess.SubprocessError):
            stop(top)  # what did start (munged, maybe MariaDB) is ended again
            raise
    _start_daemon("slurmctld", ["slurmctld"], paths["run"] / "slurmctld.pid", env, paths)
    _start_daemon("slurmd", ["slurmd"], paths["run"] / "slurmd.pid", env, paths)
    sandbox = Sandbox(
        directory=top,
        conf_path=paths["conf"],
        node=node,
        partition=partition,
        unmanaged_partition=unmanaged_partition,
        gpus=tuple((name, ident) for name, ident in gpus),
        gpu_uuids=uuids,
        gres_types=types,
        fake_gpu_state=paths["state_file"],
        ports=ports,
        logs={
            name: paths["log"] / f"{name}.log" for name in (ALL_DAEMONS if dbd_port is not None else DAEMONS)
        },
        accounting=dbd_port is not None,
        dbd_port=dbd_port,
    )
    return sandbox


def stop(directory: str | Path, *, timeout_s: float = 15.0) -> bool:
    """Stop the sandbox in ``directory``: cancel its jobs, end the daemons recorded in ``DIR/run`` (only
    those, and only while their pid still runs that daemon for this directory), remove devices made outside
    it; a controller recorded in ``DIR/controller.pid`` (running on ``DIR/wattsched.toml``) is ended first.
    Returns whether anything was running; safe to call again or on a directory never started."""
    top = Path(directory).resolve()
    run = top / "run"
    conf = top / "etc" / "slurm.conf"
    was_running = False
    controller = _controller_pid(top)
    if controller is not None:  # first, so that it does not act on jobs being cancelled
        was_running = True
        _end(controller, timeout_s)
    (top / "controller.pid").unlink(missing_ok=True)
    was_running = _stop_rest(top, timeout_s) or was_running
    alive = {name: _recorded_pid(run / f"{name}.pid", name, top) for name in ALL_DAEMONS}
    if alive["slurmctld"] is not None:
        with contextlib.suppress(SlurmError):
            client = SlurmClient(conf, timeout_s=5.0, bin_dir=_bin_of(top))
            for job in client.jobs():
                if not job.state.finished:
                    with contextlib.suppress(SlurmError):
                        client.cancel(job.job_id)
    was_running = _stop_slurmds(top, timeout_s) or was_running  # a many-node sandbox's, before slurmctld
    for name in reversed(ALL_DAEMONS):  # slurmdbd after slurmctld, which sends it what it still holds
        pid = alive[name]
        if pid is not None:
            was_running = True
            _end(pid, timeout_s)
        (run / f"{name}.pid").unlink(missing_ok=True)
    for pid in _stepds(conf):  # a job step outliving its slurmd would keep its devices busy
        _end(pid, timeout_s)
    holder = roots.holder_pid(top)  # the mount namespace of another release's daemons: its mounts go with it
    if holder is not None:
        was_running = True
        _end(holder, timeout_s)
    (run / "namespace.pid").unlink(missing_ok=True)
    shutil.rmtree(top / "bin", ignore_errors=True)
    made = run / "devices.txt"
    if made.exists():
        for line in made.read_text(encoding="utf-8").split():
            if line.startswith("/dev/wattsched-"):
                Path(line).unlink(missing_ok=True)
        made.unlink()
    return was_running


#: What :func:`reload_gres` does to make Slurm take a node's new GRES: ``restart`` (drain the node, restart
#: slurmctld, ``scontrol reconfigure``, resume: what Slurm 22.05 accepts) or ``reconfigure`` (``scontrol
#: reconfigure`` and a slurmd restart, kept to compare).
RELOAD_ACTIONS = ("restart", "reconfigure")


def reload_gres(
    directory: str | Path, *, action: str = "restart", timeout_s: float = 30.0, node: str | None = None
) -> dict[str, float]:
    """Bring the sandbox's Slurm to the MIG instances ``DIR/fake_gpu.json`` holds now (after a
    repartition): rewrite ``fake_gpus.conf`` and the node line's ``Gres=``, then make the daemons take them
    (:data:`RELOAD_ACTIONS`) and wait until the node offers the new GRES and takes jobs. Returns the seconds
    of each step; :class:`SlurmError` when the node does not come back within ``timeout_s``. Jobs running on
    the node keep running (slurmstepd outlives the daemons). ``node``: the node of a many-node sandbox to
    reload (default: the first node of slurm.conf; a one-node sandbox reloads its node whatever is given)."""
    if action not in RELOAD_ACTIONS:
        raise SlurmError(f"unknown reload action '{action}'; valid: {', '.join(RELOAD_ACTIONS)}")
    top = Path(directory).resolve()
    paths = _layout(top)
    conf = paths["conf"]
    many = (conf.parent / NODE_FOLDER).is_dir()
    node = _known_node(conf, node) if many and node is not None else _conf_node(conf)  # one node: its own
    env = dict(os.environ, SLURM_CONF=str(conf))
    client = SlurmClient(conf, timeout_s=10.0, bin_dir=_bin_of(top))
    token = _BIN.set(_bin_of(top))
    try:
        return _reload(top, paths, conf, node, env, client, action, timeout_s)
    finally:
        _BIN.reset(token)


def _bin_of(top: Path) -> Path | None:
    """The wrappers of a sandbox that runs another Slurm release than the host's, else ``None``."""
    return top / "bin" if roots.holder_pid(top) is not None and (top / "bin").is_dir() else None


def _reload(
    top: Path,
    paths: dict[str, Path],
    conf: Path,
    node: str,
    env: dict[str, str],
    client: SlurmClient,
    action: str,
    timeout_s: float,
) -> dict[str, float]:
    times: dict[str, float] = {}
    began = time.monotonic()
    if action == "restart":
        client.run("scontrol", "update", f"nodename={node}", "state=drain", "reason=wattsched_repartition")
        times["drain_s"] = time.monotonic() - began
    mark = time.monotonic()
    spec = _write_node_gres(top, conf, node, paths)
    times["files_s"] = time.monotonic() - mark
    mark = time.monotonic()
    if action == "restart":
        _restart("slurmctld", ["slurmctld"], env, paths, top)
        _wait_ping(client, timeout_s)
        client.run("scontrol", "reconfigure")
        _resume_node(client, node)
    else:
        client.run("scontrol", "reconfigure")
        _restart_slurmd(node, env, paths, top)
    times["daemons_s"] = time.monotonic() - mark
    mark = time.monotonic()
    _wait_gres(client, node, spec, timeout_s, top)
    times["node_back_s"] = time.monotonic() - mark
    times["total_s"] = time.monotonic() - began
    return times


def _resume_node(client: SlurmClient, node: str) -> None:
    """Undo the reload's drain. Slurm refuses ``state=resume`` ("Invalid node state specified") for a node
    that is not drained (seen under load, the node re-registering after slurmctld's restart): then there is
    nothing to undo."""
    try:
        client.run("scontrol", "update", f"nodename={node}", "state=resume")
    except SlurmError as exc:
        if "Invalid node state" not in str(exc):
            raise
        shown = next((n for n in client.nodes() if n.name == node), None)
        if shown is not None and {"DRAIN", "DRAINED", "DRAINING"}.intersection(shown.state_flags):
            raise


def _start_accounting(
    top: Path, paths: dict[str, Path], node: str, port: int, env: dict[str, str], timeout_s: float
) -> None:
    """MariaDB, then slurmdbd on ``port`` (its config mode 600, as slurmdbd wants), then the cluster
    registered; :class:`SlurmError` naming the step that failed."""
    sandbox_accounting.start_database(top, env, max(timeout_s, 60.0))
    conf = sandbox_accounting.layout(top)["dbd_conf"]
    conf.unlink(missing_ok=True)
    descriptor = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(sandbox_accounting.dbd_conf(top, node, port, paths["socket"]))
    sandbox_accounting.start_dbd(top, env, max(timeout_s, 60.0))
    _wait_pid(paths["run"] / "slurmdbd.pid", "slurmdbd", paths["log"] / "slurmdbd.log")
    sandbox_accounting.register_cluster(_cluster_name(top), env)


def _all_gres_types(state: FakeGpuState) -> list[str]:
    """The GRES type of every MIG profile of the sandbox's GPUs (those a repartition may make too)."""
    gpus = [state.gpu(index) for index in range(len(state.gpus()))]
    per_gpu = state.gres_per_gpu()
    return sorted(
        {
            gres_type(gpu, profile.name, index if per_gpu else None)
            for index, gpu in enumerate(gpus)
            for profile in gpu.profiles
        }
    )


def _lines(settings: dict[str, object]) -> list[str]:
    return [f"{key}={value}" for key, value in settings.items()]


def _conf_node(conf: Path) -> str:
    for line in conf.read_text(encoding="utf-8").splitlines():
        if line.startswith("NodeName="):
            return line.split()[0].removeprefix("NodeName=")
    raise SlurmError(f"{conf}: no NodeName= line")


def _restart(name: str, args: list[str], env: dict[str, str], paths: dict[str, Path], top: Path) -> None:
    pid = _recorded_pid(paths["run"] / f"{name}.pid", name, top)
    if pid is not None:
        _end(pid, 15.0)
    (paths["run"] / f"{name}.pid").unlink(missing_ok=True)
    _start_daemon(name, args, paths["run"] / f"{name}.pid", env, paths)


def _wait_ping(client: SlurmClient, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not client.ping():
        if time.monotonic() > deadline:
            raise SlurmError(f"slurmctld did not answer within {timeout_s:g} s of its restart")
        time.sleep(0.05)


def _wait_gres(client: SlurmClient, node: str, spec: str, timeout_s: float, top: Path) -> None:
    deadline = time.monotonic() + timeout_s
    wanted = sorted(spec.split(","))
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            found = {n.name: n for n in client.nodes()}.get(node)
            if found is not None:
                have = sorted(str(entry) for entry in found.gres)
                if found.available and have == wanted:
                    return
                last = f"{found.state}+{'+'.join(found.state_flags)} with {','.join(have)}"
        except SlurmError as exc:
            last = str(exc)
        time.sleep(0.05)
    logs = "".join(_tail(top / "log" / f"{name}.log") for name in ("slurmctld", "slurmd"))
    raise SlurmError(f"node {node} did not come back with Gres={spec} within {timeout_s:g} s ({last}){logs}")


def write_controller_config(
    sandbox: Sandbox,
    path: str | Path,
    scheduling: dict[str, object] | None = None,
    *,
    partitioner: str = "static",
    partitioner_options: dict[str, object] | None = None,
    repartition: dict[str, object] | None = None,
    poll_s: object = None,
    time_origin: object = None,
    clocks: dict[str, object] | None = None,
    power: dict[str, object] | None = None,
) -> Path:
    """Write the controller's config for this sandbox (partition, state ``DIR/state.db``, its node, GPUs and
    configuration, backend ``fake:DIR/fake_gpu.json``); ``scheduling``, ``clocks`` and ``power`` become the
    ``[scheduling]``, ``[clocks]`` and ``[power]`` tables as given (``clocks`` naming no node but the
    sandbox's), ``poll_s`` and ``time_origin`` the ``[slurm]`` ones. With a partitioner other than static,
    ``[repartition]`` gets ``repartition`` and, unless it gives one, the sandbox's own ``reload_command``
    (``python -m wattsched.slurm.sandbox reload DIR``). The file written is checked as the controller checks
    it: a :class:`~wattsched.errors.ConfigError` is the controller's one-line error.

    A many-node sandbox's config lists every node with its own backend (``fake:DIR/fake_gpus/<node>.json``)
    and partitioner (the node's own where it has one, else ``partitioner``), and its reload command names
    the node (``reload DIR {node}``)."""
    from wattsched.slurm.config import load_config

    members = [
        (
            node.name,
            node.spec.gpus,
            node.fake_gpu_state,
            node.spec.partitioner,
            dict(node.spec.partitioner_options),
        )
        for node in sandbox.nodes
    ] or [(sandbox.node, sandbox.gpus, sandbox.fake_gpu_state, "static", {})]
    for name, gpus, _, _, _ in members:
        idents = {ident for _, ident in gpus}
        if len(idents) != 1:
            raise SlurmError(
                f"the controller config takes one configuration for every GPU of a node; node {name} has "
                f"{idents}"
            )
    dynamic = False
    if sandbox.nodes:
        power = _sandbox_power(sandbox.directory, power)
    lines = [
        "# written by wattsched.slurm.sandbox for the sandbox in this folder",
        "[slurm]",
        f"partition = {_toml(sandbox.partition)}",
        f"state = {_toml(str(sandbox.directory / 'state.db'))}",
        f"slurm_conf = {_toml(str(sandbox.conf_path))}",
    ]
    if sandbox.rest_socket is not None:
        lines += ['api = "rest"', f"rest_socket = {_toml(str(sandbox.rest_socket))}"]
    if poll_s is not None:
        lines.append(f"poll_s = {_toml(poll_s)}")
    if time_origin is not None:
        lines.append(f"time_origin = {_toml(time_origin)}")
    for name, table in (("scheduling", scheduling), ("clocks", clocks), ("power", power)):
        if table:
            lines.append(f"[{name}]")
            lines += [f"{key} = {_toml(value)}" for key, value in table.items()]
    for name, gpus, state_file, own, own_options in members:
        lines += [
            "[[nodes]]",
            f"name = {_toml(name)}",
            f"gpus = [{', '.join(_toml(gpu) for gpu, _ in gpus)}]",
            f"configuration = {_toml(gpus[0][1])}",
            f"backend = {_toml('fake:' + str(state_file))}",
        ]
        if is_state_file(state_file) and FakeGpuState(state_file).gres_per_gpu():
            lines.append("gres_per_gpu = true")
        chosen, options = (own, own_options) if own != "static" else (partitioner, partitioner_options)
        dynamic = dynamic or chosen != "static"
        if chosen != "static":
            lines.append(f"partitioner = {_toml(chosen)}")
        if options:
            inner = ", ".join(f"{key} = {_toml(value)}" for key, value in options.items())
            lines.append(f"partitioner_options = {{ {inner} }}")
    if dynamic or repartition:
        reload = [sys.executable, "-m", "wattsched.slurm.sandbox", "reload", str(sandbox.directory)]
        table = {"reload_command": reload + (["{node}"] if sandbox.nodes else []), **(repartition or {})}
        lines.append("[repartition]")
        lines += [f"{key} = {_toml(value)}" for key, value in table.items()]
    target = Path(path)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load_config(target)
    return target


# ---------------------------------------------------------------------- files
def _layout(top: Path) -> dict[str, Path]:
    paths = {name: top / name for name in ("etc", "state", "spool", "log", "run", "dev", "munge")}
    for folder in paths.values():
        folder.mkdir(parents=True, exist_ok=True)
    top.chmod(0o755)
    paths["munge"].chmod(0o755)  # munged wants its socket's folder open to all, and no one else writing
    (paths["munge"] / "key").mkdir(mode=0o700, exist_ok=True)
    etc = paths["etc"]
    paths |= {
        "conf": etc / "slurm.conf",
        "fake_gpus": etc / "fake_gpus.conf",
        "lua": etc / "job_submit.lua",
        "prolog": etc / "prolog.sh",
        "epilog": etc / "epilog.sh",
        "state_file": top / "fake_gpu.json",
        "socket": paths["munge"] / "munge.socket.2",
    }
    if len(str(paths["socket"])) > 100:
        raise SlurmError(f"sandbox directory path too long for a unix socket: {paths['socket']}")
    return paths


def _write_hooks(
    paths: dict[str, Path],
    partition: str,
    prolog: Sequence[str] | None,
    epilog: Sequence[str] | None,
    state: str,
) -> None:
    """The Prolog and Epilog (given, else the ones that mark the job's MIG instances busy / idle in the fake
    GPU state ``state``, a shell word) and the job_submit.lua that holds the managed partition's jobs."""
    hook = f"{shlex.quote(sys.executable)} -m wattsched slurm"
    default_prolog = [f"{hook} prolog --state {state} || true"]
    default_epilog = [f"{hook} epilog --state {state} || true"]
    _write_script(
        paths["prolog"], prolog if prolog is not None else default_prolog, paths["log"] / "prolog.log"
    )
    _write_script(
        paths["epilog"], epilog if epilog is not None else default_epilog, paths["log"] / "epilog.log"
    )
    _write_text(paths["lua"], _lua(partition))


def _lua(partition: str) -> str:
    text = resources.files("wattsched.slurm").joinpath("data/job_submit.lua").read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        if line.endswith("-- wattsched: managed partition"):
            line = f'local MANAGED_PARTITION = "{partition}" -- wattsched: managed partition'
        lines.append(line)
    return "\n".join(lines) + "\n"


def _write_script(path: Path, commands: Sequence[str], log_file: Path) -> None:
    package_root = Path(wattsched.__file__).resolve().parent.parent
    body = [
        "#!/bin/sh",
        "# written by wattsched.slurm.sandbox",
        'export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}"',
        f"export PYTHONPATH={shlex.quote(str(package_root))}${{PYTHONPATH:+:$PYTHONPATH}}",
        f"exec >>{shlex.quote(str(log_file))} 2>&1",
        'echo "$(date +%s.%N) $SLURM_SCRIPT_CONTEXT job=$SLURM_JOB_ID gpus=$CUDA_VISIBLE_DEVICES"',
        *[
            f"{command} || exit $?" if not command.rstrip().endswith("|| true") else command
            for command in commands
        ],
        "exit 0",
    ]
    _write_text(path, "\n".join(body) + "\n")
    path.chmod(0o755)


def _slurm_conf(
    top: Path,
    paths: dict[str, Path],
    node: str,
    ports: tuple[int, int],
    gres: str,
    partition: str,
    unmanaged: str,
    cpus: int,
    cred_expire_s: int,
    extra: Sequence[str],
) -> str:
    settings = {
        "ClusterName": _cluster_name(top),
        "SlurmctldHost": f"{node}(127.0.0.1)",
        "SlurmctldPort": ports[0],
        "SlurmdPort": ports[1],
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={paths['socket']},cred_expire={cred_expire_s}",
        "StateSaveLocation": paths["state"],
        "SlurmdSpoolDir": paths["spool"],
        "SlurmctldPidFile": paths["run"] / "slurmctld.pid",
        "SlurmdPidFile": paths["run"] / "slurmd.pid",
        "SlurmctldLogFile": paths["log"] / "slurmctld.log",
        "SlurmdLogFile": paths["log"] / "slurmd.log",
        "JobCompType": "jobcomp/filetxt",
        "JobCompLoc": paths["log"] / "jobcomp.txt",
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core",
        "MpiDefault": "none",
        # The node declares a CPU per compute slice at least (gres_update.node_cpus), more than a small host
        # has: slurmd takes the declared CPUs instead of draining the node.
        "SlurmdParameters": "config_overrides",
        "ReturnToService": 2,
        "GresTypes": "gpu",
        "JobSubmitPlugins": "lua",
        "Prolog": paths["prolog"],
        "Epilog": paths["epilog"],
        # Scheduling passes every second (defaults: 60 s main, 30 s backfill): a released job starts within
        # about a second, and a requeued one within a second of its credential expiring.
        "SchedulerParameters": "sched_interval=1,bf_interval=1",
        "MinJobAge": 300,
        "KillWait": 5,
        "InactiveLimit": 0,
    }
    lines = [f"# written by wattsched.slurm.sandbox; SLURM_CONF={paths['conf']}"]
    lines += [f"{key}={value}" for key, value in settings.items()]
    lines += list(extra)
    lines += [
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 Gres={gres} State=UNKNOWN",
        f"PartitionName={partition} Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        f"PartitionName={unmanaged} Nodes={node} MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def _cluster_name(top: Path) -> str:
    """The sandbox's ClusterName: one per directory, so that sandboxes side by side never mix."""
    return "ws" + hashlib.sha256(str(top).encode()).hexdigest()[:8]


def _toml(value: object) -> str:
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a TOML basic string is a JSON string for these values


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------- daemons
def _require_root_and_binaries() -> None:
    if os.geteuid() != 0:
        raise SlurmError("the Slurm sandbox runs its daemons as root; run it as root")
    missing = [name for name in (*DAEMONS, "sinfo", "squeue", "scontrol", "mungekey") if not _which(name)]
    if missing:
        raise SlurmError(
            f"Slurm or munge is not installed: {', '.join(missing)} not found "
            "(Debian: apt-get install slurmctld slurmd slurm-client munge)"
        )


def _which(name: str) -> str | None:
    return roots.command(name)


def _start_munge(paths: dict[str, Path], env: dict[str, str]) -> None:
    key = paths["munge"] / "key" / "munge.key"
    if not key.exists():
        _check([_need("mungekey"), "--create", f"--keyfile={key}"], env, "mungekey")
    munge = paths["munge"]
    args = [
        _need("munged"),
        f"--socket={paths['socket']}",
        f"--key-file={key}",
        f"--pid-file={paths['run'] / 'munged.pid'}",
        f"--log-file={paths['log'] / 'munged.log'}",
        f"--seed-file={munge / 'munged.seed'}",
    ]
    _check(args, env, "munged", paths["log"] / "munged.log")
    _wait_pid(paths["run"] / "munged.pid", "munged", paths["log"] / "munged.log")


def _start_daemon(
    name: str, args: list[str], pid_file: Path, env: dict[str, str], paths: dict[str, Path]
) -> None:
    _check([_need(args[0]), *args[1:]], env, name, paths["log"] / f"{name}.log")
    _wait_pid(pid_file, name, paths["log"] / f"{name}.log")


def _need(name: str) -> str:
    found = _which(name)
    if found is None:
        raise SlurmError(f"'{name}' not found")
    return found


def _check(args: list[str], env: dict[str, str], name: str, log_file: Path | None = None) -> None:
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        detail = " ".join((done.stderr or done.stdout).split())[-300:]
        raise SlurmError(f"could not start {name}: '{' '.join(args)}' failed: {detail}{_tail(log_file)}")


def _wait_pid(pid_file: Path, name: str, log_file: Path, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid = _read_pid(pid_file)
        if pid is not None and _alive(pid):
            return pid
        time.sleep(0.05)
    raise SlurmError(f"{name} did not start (no live pid in {pid_file}){_tail(log_file)}")


def _wait_for_node(sandbox: Sandbox, timeout_s: float) -> None:
    client = sandbox.client(timeout_s=5.0)
    deadline = time.monotonic() + timeout_s
    last = "slurmctld did not answer"
    wanted = [node.name for node in sandbox.nodes] or [sandbox.node]
    while time.monotonic() < deadline:
        try:
            nodes = {node.name: node for node in client.nodes()}
            waiting = [name for name in wanted if name not in nodes or not nodes[name].available]
            if not waiting:
                return
            node = nodes.get(waiting[0])
            last = f"node {waiting[0]} is {node.state}+{'+'.join(node.state_flags)}" if node else last
        except SlurmError as exc:
            last = str(exc)
        time.sleep(0.2)
    logs = "".join(_tail(path) for name, path in sandbox.logs.items() if name != "munged")
    raise SlurmError(f"the sandbox's nodes did not come up within {timeout_s:g} s ({last}){logs}")


def _tail(log_file: Path | None, count: int = 8) -> str:
    if log_file is None or not log_file.exists():
        return ""
    lines = log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-count:]
    return f"; last lines of {log_file}: " + " | ".join(line.strip() for line in lines)


def _read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def _recorded_pid(pid_file: Path, name: str, top: Path) -> int | None:
    """The recorded pid of ``name`` if that process still is this sandbox's ``name`` (a pid reused by an
    unrelated process is never signalled): its program is ``name`` and its command line or environment names
    ``top``."""
    pid = _read_pid(pid_file)
    if pid is None or not _alive(pid):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    if not cmdline or Path(cmdline[0].decode(errors="replace")).name != name:
        return None
    mark = str(top).encode()
    return pid if any(mark in part for part in cmdline) or mark in environ else None


def _controller_pid(top: Path) -> int | None:
    """The controller started on this sandbox (``DIR/controller.pid``), if it still runs with its config."""
    pid = _read_pid(top / "controller.pid")
    if pid is None or not _alive(pid):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if str(top / "wattsched.toml").encode() in cmdline else None


def _stepds(conf: Path) -> list[int]:
    """slurmstepd processes started by this sandbox's slurmds (their environment names its slurm.conf or, in
    a many-node sandbox, a node's link to it)."""
    mark = f"SLURM_CONF={conf}".encode()
    per_node = f"SLURM_CONF={conf.parent / NODE_FOLDER}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            program = (entry / "cmdline").read_bytes().split(b"\0")[0]
            if not program.startswith(b"slurmstepd"):
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
            if not any(item == mark or item.startswith(per_node) for item in environ):
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return found


def _end(pid: int, timeout_s: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---------------------------------------------------------------------- many nodes
def _start_many(
    top: Path,
    paths: dict[str, Path],
    nodes: Sequence[NodeSpec],
    *,
    partition: str,
    unmanaged_partition: str,
    prolog: Sequence[str] | None,
    epilog: Sequence[str] | None,
    extra_conf: Sequence[str],
    cred_expire_s: int,
    timeout_s: float,
    seed: int,
    spare_devices: bool,
    gres_per_gpu: bool = False,
) -> Sandbox:
    """:func:`start` with one slurmd per node of ``nodes`` (layout: :mod:`wattsched.slurm.sandbox_nodes`):
    the same daemons and scripts, every node's files written first, the slurmds started together."""
    names = [check_node_name(spec.name) for spec in nodes]
    if len(set(names)) != len(names):
        raise SlurmError(f"a node is named twice: {', '.join(names)}")
    host = socket.gethostname().split(".")[0]
    made = [
        _make_node(
            top, paths, spec, index, seed=seed + index, spare_devices=spare_devices, gres_per_gpu=gres_per_gpu
        )
        for index, spec in enumerate(nodes)
    ]
    members = [node for node, _ in made]
    lines = [line for _, line in made]
    _write_hooks(paths, partition, prolog, epilog, node_state_shell(top))
    _write_power_scripts(top, paths)
    ports = (_free_port(), _free_port())
    single = _slurm_conf(
        top,
        paths,
        host,
        ports,
        lines[0][3],
        partition,
        unmanaged_partition,
        lines[0][2],
        cred_expire_s,
        extra_conf,
    )
    _write_text(paths["conf"], many_node_conf(single, top, host, (partition, unmanaged_partition), lines))
    env = dict(os.environ, SLURM_CONF=str(paths["conf"]))
    _start_munge(paths, env)
    _start_daemon("slurmctld", ["slurmctld"], paths["run"] / "slurmctld.pid", env, paths)
    _start_slurmds(members, paths)
    first = members[0]
    logs = {name: paths["log"] / f"{name}.log" for name in DAEMONS if name != "slurmd"}
    sandbox = Sandbox(
        directory=top,
        conf_path=paths["conf"],
        node=first.name,
        partition=partition,
        unmanaged_partition=unmanaged_partition,
        gpus=first.spec.gpus,
        gpu_uuids=first.gpu_uuids,
        gres_types=first.gres_types,
        fake_gpu_state=first.fake_gpu_state,
        ports=ports,
        logs=logs | {f"slurmd-{node.name}": node.log for node in members},
        nodes=tuple(members),
    )
    return sandbox


def _make_node(
    top: Path,
    paths: dict[str, Path],
    spec: NodeSpec,
    index: int,
    *,
    seed: int,
    spare_devices: bool,
    gres_per_gpu: bool = False,
) -> tuple[SandboxNode, tuple[str, int, int, str]]:
    """A node's fake GPU state, devices, fake_gpus.conf and SLURM_CONF link, its port picked; with its
    slurm.conf line's ``(name, port, CPUs, Gres=)``."""
    state_path = node_state_path(top, spec.name)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state = FakeGpuState.create(state_path, list(spec.gpus), seed=seed, gres_per_gpu=gres_per_gpu)
    spare = spare_devices or spec.partitioner not in ("static", "no-mig")
    devices = fake_devices(
        state, top, spare_count(state) if spare else None, node=spec.name, first_minor=index * MINORS_PER_NODE
    )
    link = node_conf_path(paths["conf"], spec.name)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(Path("..") / ".." / paths["conf"].name)  # the same settings as every daemon's
    cpus = node_cpus(state)
    _write_text(fake_gpus_path(paths["conf"], spec.name), fake_gpus_conf(devices, cpus))
    node = SandboxNode(
        spec=spec,
        conf_path=link,
        port=_free_port(),
        gpu_uuids=tuple(uuid for uuid, _, _ in devices),
        gres_types=tuple(kind for _, kind, _ in devices),
        fake_gpu_state=state_path,
        log=paths["log"] / f"slurmd-{spec.name}.log",
    )
    return node, (spec.name, node.port, cpus, gres_spec(devices))


def _start_slurmds(members: Sequence[SandboxNode], paths: dict[str, Path]) -> None:
    """Start every node's slurmd at once (each daemonizes), then wait for each one's pid."""
    program = _need("slurmd")
    launched = [
        (
            node,
            subprocess.Popen(
                [program, "-N", node.name],
                env=dict(os.environ, SLURM_CONF=str(node.conf_path)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
        )
        for node in members
    ]
    for node, process in launched:
        output, _ = process.communicate(timeout=60)
        if process.returncode != 0:
            detail = " ".join(output.split())[-300:]
            raise SlurmError(f"could not start slurmd -N {node.name}: {detail}{_tail(node.log)}")
    for node in members:
        _wait_pid(paths["run"] / f"slurmd-{node.name}.pid", f"slurmd -N {node.name}", node.log)


def _jwt_settings(paths: dict[str, Path]) -> list[str]:
    """slurm.conf's lines for JSON web tokens, with a new key (``DIR/etc/jwt.key``, readable by root only)."""
    key = paths["etc"] / "jwt.key"
    key.unlink(missing_ok=True)
    descriptor = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(secrets.token_bytes(64))
    return ["AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={key}"]


def _start_rest(top: Path, paths: dict[str, Path], timeout_s: float) -> Path:
    """slurmrestd on ``DIR/rest/slurmrestd.socket``, taking JSON web tokens (:mod:`wattsched.slurm.rest`
    has why it runs as ``nobody`` with ``SLURM_JWT=daemon``); its pid in ``DIR/run/slurmrestd.pid``."""
    folder = top / "rest"
    folder.mkdir(exist_ok=True)
    os.chown(folder, _REST_ID, _REST_ID)  # slurmrestd binds its socket once it is nobody
    folder.chmod(0o755)
    path = folder / "slurmrestd.socket"
    path.unlink(missing_ok=True)
    env = dict(os.environ, SLURM_CONF=str(paths["conf"]), SLURM_JWT="daemon")
    log_file = paths["log"] / "slurmrestd.log"
    args = [
        _need("slurmrestd"),
        "-a",
        "rest_auth/jwt",
        "-u",
        str(_REST_ID),
        "-g",
        str(_REST_ID),
        f"unix:{path}",
    ]
    with open(log_file, "ab") as log:
        process = subprocess.Popen(
            args, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    (paths["run"] / "slurmrestd.pid").write_text(f"{process.pid}\n", encoding="utf-8")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        if path.is_socket():
            return path
        time.sleep(0.05)
    raise SlurmError(f"slurmrestd did not open {path}{_tail(log_file)}")


def _stop_rest(top: Path, timeout_s: float) -> bool:
    """End the sandbox's slurmrestd (when it runs) and remove its socket; whether it ran."""
    pid_file = top / "run" / "slurmrestd.pid"
    pid = _recorded_pid(pid_file, "slurmrestd", top)
    if pid is not None:
        _end(pid, timeout_s)
    pid_file.unlink(missing_ok=True)
    shutil.rmtree(top / "rest", ignore_errors=True)
    return pid is not None


def _stop_slurmds(top: Path, timeout_s: float) -> bool:
    """End a many-node sandbox's slurmds (``DIR/run/slurmd-<node>.pid``, each only while it still is this
    sandbox's slurmd), all signalled first; whether any ran."""
    alive = []
    for pid_file in sorted((top / "run").glob("slurmd-*.pid")):
        pid = _recorded_pid(pid_file, "slurmd", top)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            alive.append(pid)
        pid_file.unlink(missing_ok=True)
    for pid in alive:
        _end(pid, timeout_s)
    return bool(alive)


def _conf_nodes(conf: Path) -> list[str]:
    """The node names of slurm.conf's node lines, in order."""
    return [
        line.split()[0].removeprefix("NodeName=")
        for line in conf.read_text(encoding="utf-8").splitlines()
        if line.startswith("NodeName=")
    ]


def _known_node(conf: Path, node: str) -> str:
    names = _conf_nodes(conf)
    if node not in names:
        raise SlurmError(f"no node '{node}' in this sandbox; its nodes: {', '.join(names)}")
    return node


def _write_node_gres(top: Path, conf: Path, node: str, paths: dict[str, Path]) -> str:
    """The node's fake_gpus.conf and Gres= rewritten from its fake GPUs now (a many-node sandbox's node: its
    own files); the ``Gres=`` value."""
    if not node_conf_path(conf, node).exists():
        return write_fake_gres(top, conf, node, FakeGpuState(paths["state_file"]))
    minor = _conf_nodes(conf).index(node) * MINORS_PER_NODE
    return write_fake_gres(top, conf, node, FakeGpuState(node_state_path(top, node)), first_minor=minor)


def _restart_slurmd(
    node: str, env: dict[str, str], paths: dict[str, Path], top: Path, *, booted: bool = False
) -> None:
    """(Re)start a node's slurmd; ``booted``: it reports the node just booted (``slurmd -b``), which a node
    Slurm is resuming must (else slurmctld waits for a boot that never comes, the job stays CONFIGURING)."""
    link = node_conf_path(paths["conf"], node)
    if not link.exists():
        _restart("slurmd", ["slurmd"], env, paths, top)
        return
    pid_file = paths["run"] / f"slurmd-{node}.pid"
    pid = _recorded_pid(pid_file, "slurmd", top)
    if pid is not None:
        _end(pid, 15.0)
    pid_file.unlink(missing_ok=True)
    log = paths["log"] / f"slurmd-{node}.log"
    args = [_need("slurmd"), "-N", node, *(["-b"] if booted else [])]
    # stdin from /dev/null: started by Slurm's ResumeProgram, whose stdin is closed, slurmd would open its log
    # as fd 0 and lose it when it daemonizes (and fail the job it is resumed for)
    done = subprocess.run(
        args,
        env=dict(os.environ, SLURM_CONF=str(link)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        detail = " ".join((done.stderr or done.stdout).split())[-300:]
        raise SlurmError(f"could not start slurmd -N {node}: {detail}{_tail(log)}")
    _wait_pid(pid_file, f"slurmd -N {node}", log)


def power_off(directory: str | Path, node: str, *, timeout_s: float = 15.0) -> None:
    """Turn off ``node`` of the many-node sandbox in ``directory`` (Slurm's SuspendProgram there,
    ``DIR/etc/suspend.sh``): its slurmd is ended and its fake GPUs draw nothing until it is turned on."""
    top = Path(directory).resolve()
    paths = _layout(top)
    _known_node(paths["conf"], node)
    if not node_conf_path(paths["conf"], node).exists():
        raise SlurmError(f"node '{node}' is not a node of a many-node sandbox: it cannot be turned off")
    pid_file = paths["run"] / f"slurmd-{node}.pid"
    pid = _recorded_pid(pid_file, "slurmd", top)
    if pid is not None:
        _end(pid, timeout_s)
    pid_file.unlink(missing_ok=True)
    FakeGpuState(node_state_path(top, node)).set_powered(False)


def power_on(directory: str | Path, node: str, *, turn_on_j_per_gpu: float = P2_TURN_ON_J) -> None:
    """Turn on ``node`` of the many-node sandbox in ``directory`` (Slurm's ResumeProgram there,
    ``DIR/etc/resume.sh``): its fake GPUs are on again, each charged ``turn_on_j_per_gpu`` (the power
    model's turn-on energy, :mod:`wattsched.slurm.power`), and its slurmd is started (Slurm then sees the node
    register)."""
    top = Path(directory).resolve()
    paths = _layout(top)
    _known_node(paths["conf"], node)
    if not node_conf_path(paths["conf"], node).exists():
        raise SlurmError(f"node '{node}' is not a node of a many-node sandbox: it cannot be turned on")
    FakeGpuState(node_state_path(top, node)).set_powered(True, turn_on_j_per_gpu=turn_on_j_per_gpu)
    if _recorded_pid(paths["run"] / f"slurmd-{node}.pid", "slurmd", top) is None:
        _restart_slurmd(node, dict(os.environ, SLURM_CONF=str(paths["conf"])), paths, top, booted=True)


def _sandbox_power(top: Path, power: dict[str, object] | None) -> dict[str, object]:
    """A many-node sandbox's ``[power]``: unless ``power`` names them, the commands that turn a node off and
    on are the sandbox's own (``power-off`` / ``power-on DIR {node}``, charging ``turn_on_j_per_gpu``)."""
    table = dict(power or {})
    command = [sys.executable, "-m", "wattsched.slurm.sandbox"]
    turn_on = table.get("turn_on_j_per_gpu", P2_TURN_ON_J)
    table.setdefault("suspend_command", [*command, "power-off", str(top), "{node}"])
    table.setdefault(
        "resume_command", [*command, "power-on", str(top), "{node}", "--turn-on-j-per-gpu", str(turn_on)]
    )
    return table


def _write_power_scripts(top: Path, paths: dict[str, Path]) -> None:
    """``DIR/etc/suspend.sh`` and ``resume.sh``: Slurm's SuspendProgram and ResumeProgram for the sandbox's
    nodes (``power-off`` / ``power-on`` of the hostlist Slurm gives), logged to ``DIR/log/power.log``."""
    command = f"{shlex.quote(sys.executable)} -m wattsched.slurm.sandbox"
    for name, action in (("suspend", "power-off"), ("resume", "power-on")):
        _write_script(
            paths["etc"] / f"{name}.sh",
            [f'{command} {action} {shlex.quote(str(top))} "$1"'],
            paths["log"] / "power.log",
        )


# ---------------------------------------------------------------------- command line
def _gpu_spec(text: str) -> tuple[str, int | str]:
    name, _, ident = text.partition(":")
    if not name or not ident:
        raise argparse.ArgumentTypeError(f"expected NAME:CONFIGURATION (a100-40gb:3), got '{text}'")
    return name, int(ident) if ident.isdigit() else ident


def _from_config(path: Path) -> tuple[str, list[tuple[str, int | str]], dict[str, Any]]:
    """Partition and GPUs of the first node of a controller config, and what the sandbox's controller config
    keeps of it (:func:`write_controller_config`'s keyword arguments): ``[slurm] poll_s`` and
    ``time_origin``, the ``[scheduling]``, ``[clocks]`` and ``[power]`` tables, the first node's partitioner
    and its options, and ``[repartition]`` (its reload command is the sandbox's own). ``clocks.nodes``
    becomes the sandbox's one node where it names the first node, else none."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SlurmError(f"{path}: cannot read the controller config ({exc})") from None
    tables = {}
    for name in ("slurm", "scheduling", "clocks", "power", "repartition"):
        tables[name] = raw.get(name, {})
        if not isinstance(tables[name], dict):
            raise SlurmError(f"{path}: [{name}] must be a table")
    nodes = raw.get("nodes") or [{}]
    first = nodes[0] if isinstance(nodes, list) else None
    if not isinstance(first, dict):
        raise SlurmError(f"{path}: [[nodes]] must be a list of tables")
    for key, kind in (("gpus", list), ("partitioner_options", dict)):
        if key in first and not isinstance(first[key], kind):
            raise SlurmError(f"{path}: nodes[0].{key} must be a {'list' if kind is list else 'table'}")
    ident = first.get("configuration", 3)
    gpus = [(str(name), ident) for name in first.get("gpus", ["a100-40gb"])]
    clocks = dict(tables["clocks"])
    if isinstance(clocks.get("nodes"), list):
        if first.get("name") in clocks["nodes"]:
            del clocks["nodes"]  # every node: the sandbox's one
        else:
            clocks["nodes"] = []
    settings = {
        "scheduling": dict(tables["scheduling"]),
        "poll_s": tables["slurm"].get("poll_s"),
        "time_origin": tables["slurm"].get("time_origin"),
        "clocks": clocks,
        "power": dict(tables["power"]),
        "partitioner": first.get("partitioner", "static"),
        "partitioner_options": dict(first.get("partitioner_options", {})),
        "repartition": {k: v for k, v in tables["repartition"].items() if k != "reload_command"},
    }
    return str(tables["slurm"].get("partition", "mig")), gpus, settings


def _sandbox_nodes(
    config: Path | None, count: str | None, gpus: Sequence[tuple[str, int | str]] | None
) -> tuple[NodeSpec, ...]:
    """The nodes of a many-node sandbox from the command line: ``--nodes N`` (N > 1) copies of the config's
    first node, else every ``[[nodes]]`` entry of a config that has several; ``()``: one node named after
    the host, as without. ``--gpu`` gives every node its GPUs."""
    if count is not None and not count.isdigit():
        raise SlurmError(f"--nodes must be a whole number >= 1, got '{count}'")
    specs = config_nodes(config) if config is not None else (NodeSpec("node1"),)
    if count is not None:
        specs = uniform_nodes(int(count), specs[0])
    if len(specs) == 1:
        return ()
    for spec in specs:
        check_node_name(spec.name)
    if gpus:
        specs = tuple(NodeSpec(s.name, tuple(gpus), s.partitioner, s.partitioner_options) for s in specs)
    return specs


def _power_saving(directory: Path, suspend_time_s: int | None, specs: Sequence[NodeSpec]) -> list[str]:
    """slurm.conf's power-saving lines for ``--suspend-time`` (none without): a node idle that long is turned
    off by the sandbox's SuspendProgram and on again by its ResumeProgram when a job needs it."""
    if suspend_time_s is None:
        return []
    if suspend_time_s < 1:
        raise SlurmError(f"--suspend-time must be a whole number of seconds >= 1, got {suspend_time_s}")
    if not specs:
        raise SlurmError(
            "--suspend-time needs a many-node sandbox (--nodes N or a config with several nodes)"
        )
    etc = directory.resolve() / "etc"
    return [
        f"SuspendTime={suspend_time_s}",
        "SuspendTimeout=5",
        "ResumeTimeout=30",
        f"SuspendProgram={etc / 'suspend.sh'}",
        f"ResumeProgram={etc / 'resume.sh'}",
    ]


def _many_settings(config: Path | None, settings: dict[str, Any], specs: Sequence[NodeSpec]) -> None:
    """What a many-node sandbox's controller config keeps: each node's partitioner is its own (on its spec),
    and ``clocks.nodes`` names the sandbox's nodes the given config names (all copies of a first node it
    names)."""
    settings.pop("partitioner", None)
    settings.pop("partitioner_options", None)
    if config is None or not isinstance(settings.get("clocks", {}).get("nodes"), list):
        return
    named = tomllib.loads(config.read_text(encoding="utf-8")).get("clocks", {}).get("nodes", [])
    settings["clocks"]["nodes"] = [spec.name for spec in specs if spec.name in named]


def main(argv: Sequence[str] | None = None) -> int:
    """``start DIR [--config FILE.toml] [--gpu NAME:CONFIG ...] [--nodes N]`` prints ``export
    SLURM_CONF=...``; ``stop DIR``; ``reload DIR [NODE] [--action restart|reconfigure]`` after a
    repartition."""
    parser = argparse.ArgumentParser(prog="python -m wattsched.slurm.sandbox", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    begin = commands.add_parser("start")
    begin.add_argument("directory")
    begin.add_argument(
        "--config",
        type=Path,
        help="controller config: its partition and first node shape the sandbox; DIR/wattsched.toml keeps "
        "its [scheduling], [clocks], [power], [repartition], poll_s, time_origin and the node's partitioner",
    )
    begin.add_argument("--gpu", type=_gpu_spec, action="append", help="NAME:CONFIGURATION, repeatable")
    begin.add_argument(
        "--nodes",
        metavar="N",
        help="N nodes node1 ... nodeN, each a copy of the config's first node (default: one node per "
        "[[nodes]] entry of the config; one node named after the host without a config)",
    )
    begin.add_argument(
        "--suspend-time",
        type=int,
        metavar="S",
        help="many nodes: Slurm turns a node idle S seconds off and on again for a job (the sandbox's "
        "DIR/etc/suspend.sh and resume.sh stop and start its slurmd and turn its fake GPUs off and on)",
    )
    begin.add_argument("--timeout", type=float, default=30.0)
    begin.add_argument(
        "--slurm",
        metavar="VERSION",
        help="the Slurm release to run (24.11, 26.05: from a Debian root filesystem made once and cached; "
        "default: the host's)",
    )
    begin.add_argument(
        "--no-accounting",
        action="store_true",
        help="no accounting database (default: a private MariaDB and slurmdbd where they are installed)",
    )
    begin.add_argument(
        "--rest",
        action="store_true",
        help="also slurmrestd on the unix socket DIR/rest/slurmrestd.socket, with JSON web tokens (Slurm "
        "26.05); the controller config then goes through it",
    )
    begin.add_argument(
        "--gres-per-gpu",
        action="store_true",
        help="GRES types that name their GPU (a100_1g.10gb_gpu1): a request then names the GPU, not only the "
        "slice type",
    )
    commands.add_parser("stop").add_argument("directory")
    again = commands.add_parser("reload", help="bring Slurm to the MIG instances the fake GPUs hold now")
    again.add_argument("directory")
    again.add_argument(
        "node", nargs="?", help="the node of a many-node sandbox to reload (default: the first)"
    )
    again.add_argument("--action", choices=RELOAD_ACTIONS, default="restart")
    again.add_argument("--timeout", type=float, default=30.0)
    for name, what in (("power-off", "end"), ("power-on", "start")):
        power = commands.add_parser(
            name, help=f"{what} the slurmd of the nodes of NODELIST (Slurm's Suspend/ResumeProgram there)"
        )
        power.add_argument("directory")
        power.add_argument("nodelist", help="a Slurm hostlist (node[1-3],node5)")
    power.add_argument("--turn-on-j-per-gpu", type=float, default=P2_TURN_ON_J, metavar="J")
    args = parser.parse_args(argv)
    try:
        if args.command in ("power-off", "power-on"):
            from wattsched.slurm.power import expand_hostlist  # the controller's hostlist rule

            for node in expand_hostlist(args.nodelist):
                if args.command == "power-off":
                    power_off(args.directory, node)
                else:
                    power_on(args.directory, node, turn_on_j_per_gpu=args.turn_on_j_per_gpu)
            return 0
        if args.command == "reload":
            times = reload_gres(args.directory, action=args.action, timeout_s=args.timeout, node=args.node)
            sys.stdout.write(" ".join(f"{key}={value:.3f}" for key, value in times.items()) + "\n")
            return 0
        if args.command == "stop":
            stopped = stop(args.directory)
            sys.stdout.write(f"sandbox in {args.directory} {'stopped' if stopped else 'was not running'}\n")
            return 0
        partition = "mig"
        gpus: list[tuple[str, int | str]] = [("a100-40gb", 3)]
        settings: dict[str, Any] = {}
        if args.config is not None:
            partition, gpus, settings = _from_config(args.config)
        accounting = not args.no_accounting
        other = args.slurm is not None and args.slurm != roots.host_release()
        missing = [] if other else sandbox_accounting.missing_binaries()  # a release's root has its own
        if accounting and missing:
            sys.stdout.write(
                f"# no accounting database: {', '.join(missing)} not installed (Debian: apt-get install "
                "slurmdbd mariadb-server); the sandbox starts without\n"
            )
            accounting = False
        specs = _sandbox_nodes(args.config, args.nodes, args.gpu)
        if specs:
            _many_settings(args.config, settings, specs)
            if accounting:
                sys.stdout.write("# no accounting database: kept with one node only, so far\n")
                accounting = False
        extra = _power_saving(Path(args.directory), args.suspend_time, specs)
        sandbox = start(
            args.directory,
            gpus=args.gpu or gpus,
            partition=partition,
            timeout_s=args.timeout,
            spare_devices=settings.get("partitioner", "static") not in ("static", "no-mig"),
            slurm=args.slurm,
            accounting=accounting,
            nodes=specs,
            extra_conf=extra,
            rest=args.rest,
            gres_per_gpu=args.gres_per_gpu,
        )
        try:
            config = write_controller_config(sandbox, sandbox.directory / "wattsched.toml", **settings)
        except (SlurmError, OSError, ValueError):
            stop(sandbox.directory)  # a sandbox whose controller config the controller refuses is of no use
            raise
    except (SlurmError, OSError, ValueError, GpuError) as exc:
        sys.stderr.write(f"slurm sandbox: {' '.join(str(exc).split())}\n")
        return 2
    nodes = [(node.name, node.gpu_uuids) for node in sandbox.nodes] or [(sandbox.node, sandbox.gpu_uuids)]
    sys.stdout.write(
        f"# node{'s' if len(nodes) > 1 else ''} {', '.join(name for name, _ in nodes)}, partitions "
        f"{sandbox.partition} (wattsched), {sandbox.unmanaged_partition}\n"
        f"# Slurm {sandbox.slurm or 'of the host'}\n"
        + "".join(
            f"# MIG UUIDs{f' of {name}' if len(nodes) > 1 else ''}: {' '.join(uuids)}\n"
            for name, uuids in nodes
        )
        + f"# controller config: {config}\n"
        + (
            f"# accounting: slurmdbd on port {sandbox.dbd_port}, MariaDB in {sandbox.directory / 'db'} "
            "(sacct, sacctmgr)\n"
            if sandbox.accounting
            else "# accounting: none (sacct has nothing)\n"
        )
        + (
            f"# slurmrestd: unix socket {sandbox.rest_socket} (a token: scontrol token)\n"
            if sandbox.rest_socket is not None
            else ""
        )
        + f"export SLURM_CONF={shlex.quote(str(sandbox.conf_path))}\n"
    )
    if sandbox.bin_dir is not None:
        sys.stdout.write(f'export PATH={shlex.quote(str(sandbox.bin_dir))}:"$PATH"\n')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
