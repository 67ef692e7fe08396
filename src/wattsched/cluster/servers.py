"""Servers and their power states (P2's DRS, docs/concepts/dvfs.md): on, off, booting; turn-offs and boots as
events.

A server is on from t = 0. When its last GPU runs out of work (no job placed and not completed, none held
for a boot) a turn-off is scheduled ``idle_slots × slot_s`` later; it happens if no work came meanwhile (each
new piece of work bumps the server's *version*, which voids pending turn-offs). A job placed on an off server
boots it: ``turn_on_j_per_gpu`` per GPU and ``turn_on_s`` later the server is on and its held jobs arrive.
With power states disabled no event is ever scheduled and every server stays on.
"""

from __future__ import annotations

import heapq
import math

from wattsched.cluster.spec import PowerStates

__all__ = ["BOOTING", "BOOT_DONE", "OFF", "ON", "TURN_OFF", "Server", "ServerStates"]

ON, OFF, BOOTING = 0, 1, 2
TURN_OFF, BOOT_DONE = 0, 1


class Server:
    __slots__ = ("busy", "gpus", "idle_slots", "off_s", "off_since", "state", "version")

    def __init__(self, gpus: list[int], idle_slots: int) -> None:
        self.gpus = gpus
        self.state = ON
        self.busy = 0  # GPUs with work
        self.version = 0  # bumped when the server gets work: a pending turn-off is then void
        self.off_since = math.nan
        self.off_s = 0.0
        self.idle_slots = idle_slots


class ServerStates:
    """The servers, their event heap, turn-on energy, GPUs-on timeline and off stretches (see the module
    docstring)."""

    def __init__(self, members: list[list[int]], idle_w: list[float], power: PowerStates) -> None:
        self.power = power
        self.servers = [
            Server(gpus, power.idle_slots_for(watts, len(gpus)))
            for gpus, watts in zip(members, idle_w, strict=True)
        ]
        #: ``(time, kind, seq, server · 2**32 + version)``: turn-offs and boots, in time order.
        self.events: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self.overhead_j = 0.0
        self.turn_ons = 0
        self._gpus_on = sum(len(g) for g in members)
        #: ``(time_s, GPUs on)`` at each change (booting counts as off).
        self.on_changes: list[tuple[float, int]] = [(0.0, self._gpus_on)]
        #: ``(server, start_s, end_s)`` of each finished off stretch (booting included).
        self.off_intervals: list[tuple[int, float, float]] = []
        if power.enabled:  # every server starts on and idle: it turns off unless work comes in time
            for s, server in enumerate(self.servers):
                self._push(server.idle_slots * power.slot_s, TURN_OFF, s, server.version)

    def state(self, s: int) -> int:
        return self.servers[s].state

    def gpu_busy(self, s: int) -> None:
        """One of server ``s``'s GPUs got work (it had none)."""
        server = self.servers[s]
        server.busy += 1
        server.version += 1

    def gpu_idle(self, s: int, now_s: float) -> None:
        """One of server ``s``'s GPUs ran out of work at ``now_s``."""
        server = self.servers[s]
        server.busy -= 1
        if server.busy == 0 and self.power.enabled and server.state == ON:
            self._push(now_s + server.idle_slots * self.power.slot_s, TURN_OFF, s, server.version)

    def pop(self) -> tuple[float, int, int] | None:
        """Apply the next event; ``(time, kind, server)`` when it changed a server, else ``None`` (a void
        turn-off). After a ``BOOT_DONE`` the caller gives the server's held jobs to its GPUs."""
        when, kind, _, payload = heapq.heappop(self.events)
        s, version = divmod(payload, 2**32)
        server = self.servers[s]
        if kind == TURN_OFF:
            if server.state != ON or server.busy or server.version != version:
                return None
            server.state = OFF
            server.off_since = when
            self._change_on(when, -len(server.gpus))
            return when, kind, s
        server.state = ON
        server.off_s += when - server.off_since
        self.off_intervals.append((s, server.off_since, when))
        self._change_on(when, len(server.gpus))
        return when, kind, s

    def boot(self, s: int, now_s: float) -> None:
        """Turn server ``s`` on for work arriving at ``now_s`` (it is off)."""
        server = self.servers[s]
        server.state = BOOTING
        server.version += 1
        self.overhead_j += self.power.turn_on_j_per_gpu * len(server.gpus)
        self.turn_ons += 1
        self._push(now_s + self.power.turn_on_s, BOOT_DONE, s, server.version)

    def first_off(self) -> int:
        """The lowest off server, or -1."""
        return next((s for s, server in enumerate(self.servers) if server.state == OFF), -1)

    def close(self, end_s: float) -> list[tuple[float, int]]:
        """End the run at ``end_s``: count the servers still off (or booting) and return the timeline up to
        ``end_s`` (turn-offs scheduled after it never happened)."""
        for s, server in enumerate(self.servers):
            if server.state != ON and server.off_since <= end_s:
                server.off_s += end_s - server.off_since
                self.off_intervals.append((s, server.off_since, end_s))
        return [(t, n) for t, n in self.on_changes if t <= end_s]

    def _push(self, when: float, kind: int, s: int, version: int) -> None:
        self._seq += 1
        heapq.heappush(self.events, (when, kind, self._seq, s * 2**32 + version))

    def _change_on(self, when: float, delta: int) -> None:
        self._gpus_on += delta
        if self.on_changes[-1][0] == when:
            self.on_changes[-1] = (when, self._gpus_on)
        else:
            self.on_changes.append((when, self._gpus_on))
