"""Node power states under Slurm: the settings that turn idle GPU servers off, and the programs Slurm calls.

Slurm's power saving turns a node off once it has been idle ``SuspendTime`` seconds (it runs
``SuspendProgram NODELIST``) and on again when a job needs it (``ResumeProgram NODELIST``; the node must
answer within ``ResumeTimeout``). Turning a server off saves its idle power but costs the energy of turning it
on again, Δ. Waiting ρ slots before turning off, with

    ρ = ⌊Δ / (P_idle · slot)⌋,

turns off only when the idle energy a wait would spend has reached the turn-on energy: the break-even rule
of dynamic resource sleep (Mei et al., TPDS 2022), the rule the data-centre simulator uses
(:meth:`wattsched.cluster.spec.PowerStates.idle_slots_for`). P_idle is the server's idle power (its GPUs' idle
power from the catalogue plus ``host_idle_w``), Δ is ``turn_on_j_per_gpu`` times its GPUs.

``wattsched slurm suspend|resume NODELIST`` are the two programs: each journals the call in the controller's
state file and runs the command configured for it (``[power] suspend_command`` / ``resume_command``, with
``{node}`` replaced by each node's name; e.g. an ``ipmitool`` call to the node's BMC). Without a command the
call is only journaled — what a single host, whose only node is the one running Slurm, can do.
"""

from __future__ import annotations

import math
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wattsched.cluster.spec import PowerStates
from wattsched.errors import ConfigError, InputError
from wattsched.slurm.config import ControllerConfig
from wattsched.slurm.state import StateStore

__all__ = ["NodePower", "PowerSettings", "expand_hostlist", "power_settings", "run_power_program"]

_GROUP = re.compile(r"\[([^\]]*)\]")


@dataclass(frozen=True)
class NodePower:
    """One node's break-even wait: its idle power (W), turn-on energy (J), ρ (slots) and ρ·slot (s)."""

    node: str
    gpus: int
    idle_w: float
    turn_on_j: float
    idle_slots: int
    suspend_after_s: float


@dataclass(frozen=True)
class PowerSettings:
    """The ``slurm.conf`` power-saving settings for the managed nodes and the per-node figures behind them."""

    nodes: tuple[NodePower, ...]
    slot_s: float
    suspend_time_s: int
    suspend_timeout_s: int
    resume_timeout_s: int
    suspend_rate: int
    resume_rate: int

    def slurm_conf(self, suspend_program: str, resume_program: str) -> list[str]:
        return [
            f"SuspendTime={self.suspend_time_s}",
            f"SuspendTimeout={self.suspend_timeout_s}",
            f"ResumeTimeout={self.resume_timeout_s}",
            f"SuspendRate={self.suspend_rate}",
            f"ResumeRate={self.resume_rate}",
            f"SuspendProgram={suspend_program}",
            f"ResumeProgram={resume_program}",
        ]

    def reasoning(self) -> list[str]:
        lines = [
            f"node {n.node}: {n.gpus} GPU(s), idle {n.idle_w:.1f} W, turn-on {n.turn_on_j:.0f} J: "
            f"rho = floor({n.turn_on_j:.0f} / ({n.idle_w:.1f} x {self.slot_s:g})) = {n.idle_slots} slot(s) "
            f"= {n.suspend_after_s:g} s"
            for n in self.nodes
        ]
        lines += [
            f"SuspendTime={self.suspend_time_s}: the longest break-even wait of the nodes (one value for "
            "the partition; a node turned off sooner than its break-even would spend more turning on than "
            "it saved), at least one slot",
            f"SuspendTimeout={self.suspend_timeout_s}: the node's shutdown time with a margin of half of it",
            f"ResumeTimeout={self.resume_timeout_s}: the node's boot time (turn_on_s) with a margin of half "
            "of it; a node that does not answer in time is marked DOWN",
            f"SuspendRate={self.suspend_rate}: no limit on turning nodes off (nothing to protect)",
            f"ResumeRate={self.resume_rate}: every managed node may start within a minute (lower it if "
            "your power supply limits inrush)",
        ]
        return lines

    def as_json(self) -> dict[str, object]:
        return {
            "slot_s": self.slot_s,
            "SuspendTime": self.suspend_time_s,
            "SuspendTimeout": self.suspend_timeout_s,
            "ResumeTimeout": self.resume_timeout_s,
            "SuspendRate": self.suspend_rate,
            "ResumeRate": self.resume_rate,
            "nodes": [vars(n) for n in self.nodes],
        }


def power_settings(config: ControllerConfig) -> PowerSettings:
    """The break-even wait of every managed node and the ``slurm.conf`` settings that follow from them."""
    power = config.power
    states = PowerStates(
        enabled=True,
        slot_s=power.slot_s,
        idle_slots=power.idle_slots,
        turn_on_j_per_gpu=power.turn_on_j_per_gpu,
        turn_on_s=power.turn_on_s,
        host_idle_w=power.host_idle_w,
    )
    nodes = []
    for node in config.nodes:
        idle_w = states.server_idle_w(node.gpus)
        slots = states.idle_slots_for(idle_w, len(node.gpus))
        nodes.append(
            NodePower(
                node.name,
                len(node.gpus),
                idle_w,
                power.turn_on_j_per_gpu * len(node.gpus),
                slots,
                slots * power.slot_s,
            )
        )
    longest = max(n.suspend_after_s for n in nodes)
    return PowerSettings(
        nodes=tuple(nodes),
        slot_s=power.slot_s,
        suspend_time_s=max(math.ceil(longest), math.ceil(power.slot_s)),
        suspend_timeout_s=math.ceil(power.shutdown_s * 1.5),
        resume_timeout_s=math.ceil(power.turn_on_s * 1.5),
        suspend_rate=0,
        resume_rate=len(nodes),
    )


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host list syntax: ``gpu[01-03,07],login1`` → ``gpu01 gpu02 gpu03 gpu07 login1``."""
    names: list[str] = []
    depth = 0
    start = 0
    parts = []
    for i, char in enumerate(text):
        depth += char == "["
        depth -= char == "]"
        if depth < 0:
            raise InputError(f"host list {text!r}: unbalanced ']'")
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise InputError(f"host list {text!r}: unbalanced '['")
    parts.append(text[start:])
    for part in parts:
        part = part.strip()
        if not part:
            continue
        names.extend(_expand_one(part, text))
    if not names:
        raise InputError(f"host list {text!r} names no node")
    return names


def _expand_one(part: str, whole: str) -> list[str]:
    match = _GROUP.search(part)
    if match is None:
        return [part]
    head, tail = part[: match.start()], part[match.end() :]
    out = []
    for piece in match.group(1).split(","):
        low, _, high = piece.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise InputError(f"host list {whole!r}: bad range {piece!r}")
        width = len(low)
        stop = int(high) if high else int(low)
        if stop < int(low):
            raise InputError(f"host list {whole!r}: range {piece!r} runs backwards")
        for number in range(int(low), stop + 1):
            out.extend(_expand_one(f"{head}{number:0{width}d}{tail}", whole))
    return out


def run_power_program(
    config: ControllerConfig,
    action: str,
    hostlist: str,
    *,
    runner: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
    clock: Callable[[], float] = time.time,
) -> list[tuple[str, str, str]]:
    """Slurm's SuspendProgram (``action="suspend"``) or ResumeProgram (``"resume"``) for ``hostlist``: every
    node is checked to be managed before anything runs, then each call is journaled ``pending``, its command
    run (if one is configured) and marked ``done``, ``failed`` (with the command's last output line) or
    ``recorded`` (no command). Returns ``(node, status, detail)`` per node."""
    if action not in ("suspend", "resume"):
        raise ValueError(f"action must be 'suspend' or 'resume', got {action!r}")
    names = expand_hostlist(hostlist)
    managed = {node.name for node in config.nodes}
    unknown = [name for name in names if name not in managed]
    if unknown:
        raise ConfigError(
            f"{action}: node(s) {', '.join(unknown)} are not in the config's [[nodes]] "
            f"({', '.join(sorted(managed))})"
        )
    command = config.power.suspend_command if action == "suspend" else config.power.resume_command
    results = []
    store = StateStore(config.state_path)
    try:
        for name in names:
            line = tuple(part.replace("{node}", name) for part in command)
            entry = store.add_power_action(clock(), name, action, list(line))
            if not line:
                status, detail = "recorded", "no command configured: journaled only"
            else:
                status, detail = _run(runner, line, config.power.command_timeout_s)
            store.finish_power_action(entry, status, detail)
            results.append((name, status, detail))
    finally:
        store.close()
    return results


def _run(
    runner: Callable[..., subprocess.CompletedProcess[str]], line: Sequence[str], timeout_s: float
) -> tuple[str, str]:
    try:
        done = runner(list(line), capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        return "failed", f"command not found: {line[0]}"
    except subprocess.TimeoutExpired:
        return "failed", f"timed out after {timeout_s:g} s"
    output = (done.stderr or done.stdout or "").strip().splitlines()
    if done.returncode != 0:
        return "failed", f"exit {done.returncode}" + (f": {output[-1]}" if output else "")
    return "done", output[-1] if output else ""
