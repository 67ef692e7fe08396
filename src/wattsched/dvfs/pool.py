"""The pairs of a P2 cluster while a schedule is built: finish times, BF/WF loads, server on/off and DRS."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from wattsched.dvfs.cluster import ClusterConfig, ceil_slots

__all__ = ["PairPool"]

FloatArray = npt.NDArray[np.float64]
#: List rank of pairs of servers turned on in the current slot (reproduction mode): after every index.
_LATE_RANK = 1 << 40


class PairPool:
    """Pairs with availability times ``mu``, BF/WF loads and server on/off state, as flat arrays.

    ``server_mode=False`` (offline Alg. 2 before Alg. 3 grouping): every opened pair is its own unit and
    stays on. ``server_mode=True``: pairs ``j·l .. j·l+l−1`` form server ``j``; opening turns on a whole
    server (an OFF one of lowest index, or a new one) and DRS turns servers off.

    ``mu`` is when a pair can start its next task: its last finish, or with ``next_start = "next-slot"`` the
    slot boundary after it; ``last_end`` is always the last finish. The ``pick_*`` methods choose among
    opened pairs; ties go to the lowest index, or with ``reproduce_hkbu`` in the authors' list order
    (``rank``: ON servers by index, then servers turned on since :meth:`begin_slot`, in turn-on order).
    """

    def __init__(self, capacity_pairs: int, config: ClusterConfig, server_mode: bool) -> None:
        l = config.pairs_per_server if server_mode else 1
        capacity = math.ceil(max(capacity_pairs, 1) / l) * l
        self.l = l
        self.config = config
        self.server_mode = server_mode
        self.next_slot = config.next_start == "next-slot"
        self.authors_order = config.reproduce_hkbu
        self.mu = np.zeros(capacity)
        self.mu_on = np.full(capacity, np.inf)  # mu where the pair's server is on, else inf
        self.last_end = np.zeros(capacity)
        self.load = np.zeros(capacity)
        self.busy_ceil = np.zeros(capacity)
        self.rank = np.arange(capacity, dtype=np.int64)
        self._late = 0  # servers turned on since begin_slot (reproduction mode)
        self.opened = 0  # pairs (or server slots x l) ever opened
        servers = capacity // l
        self.server_on = np.zeros(servers, dtype=bool)
        self.server_on_s = np.zeros(servers)
        self.server_finish = np.zeros(servers)
        self.intervals: list[tuple[int, float, float]] = []
        self.limit_pairs = config.pairs

    def _grow(self) -> None:
        extra = max(self.mu.size, self.l)
        size = self.mu.size
        self.mu = np.concatenate([self.mu, np.zeros(extra)])
        self.mu_on = np.concatenate([self.mu_on, np.full(extra, np.inf)])
        self.last_end = np.concatenate([self.last_end, np.zeros(extra)])
        self.load = np.concatenate([self.load, np.zeros(extra)])
        self.busy_ceil = np.concatenate([self.busy_ceil, np.zeros(extra)])
        self.rank = np.concatenate([self.rank, np.arange(size, size + extra, dtype=np.int64)])
        add = extra // self.l
        self.server_on = np.concatenate([self.server_on, np.zeros(add, dtype=bool)])
        self.server_on_s = np.concatenate([self.server_on_s, np.zeros(add)])
        self.server_finish = np.concatenate([self.server_finish, np.zeros(add)])

    def begin_slot(self) -> None:
        """A new slot: in the authors' list, every ON server is now in index order."""
        if self._late:
            self.rank = np.arange(self.rank.size, dtype=np.int64)
            self._late = 0

    def can_open(self) -> bool:
        if self.config.allow_overflow:
            return True
        off = np.flatnonzero(~self.server_on[: self.opened // self.l])
        return bool(off.size) or self.opened + self.l <= self.limit_pairs

    def open(self, now_s: float) -> int:
        """Turn on a server (or open a pair) at ``now_s``; returns the first pair of it."""
        known = self.opened // self.l
        off = np.flatnonzero(~self.server_on[:known]) if self.server_mode else np.zeros(0, np.int64)
        if off.size:
            server = int(off[0])
        else:
            server = known
            if (server + 1) * self.l > self.mu.size:
                self._grow()
            self.opened += self.l
        first = server * self.l
        self.server_on[server] = True
        self.server_on_s[server] = now_s
        self.server_finish[server] = max(self.server_finish[server], now_s)
        self.mu_on[first : first + self.l] = self.mu[first : first + self.l]
        if self.authors_order:
            self.rank[first : first + self.l] = _LATE_RANK + self._late * self.l + np.arange(self.l)
            self._late += 1
        return first

    def assign(self, pair: int, start_s: float, time_s: float, deadline_s: float) -> None:
        end = start_s + time_s
        available = float(ceil_slots(end, self.config.slot_s)) if self.next_slot else end
        self.mu[pair] = available
        self.mu_on[pair] = available
        self.last_end[pair] = end
        server = pair // self.l
        if end > self.server_finish[server]:
            self.server_finish[server] = end
        slot = self.config.slot_s
        self.busy_ceil[pair] += math.ceil(time_s / slot - 1e-9) * slot
        if deadline_s > 0:
            with np.errstate(over="ignore"):  # a subnormal deadline gives an infinite load: never chosen
                self.load[pair] = max(self.load[pair], self.busy_ceil[pair] / deadline_s)

    def pick_min(self, values: FloatArray) -> int:
        """The opened pair of smallest ``values`` (ties: see the class docstring)."""
        head = values[: self.opened]
        pair = int(np.argmin(head))
        if self.authors_order:
            ties = np.flatnonzero(head == head[pair])
            if ties.size > 1:
                pair = int(ties[np.argmin(self.rank[ties])])
        return pair

    def pick_max(self, values: FloatArray) -> int:
        """The opened pair of largest ``values``; authors' ties: the last in list order (their best fit
        takes the end of a list sorted by load)."""
        head = values[: self.opened]
        pair = int(np.argmax(head))
        if self.authors_order:
            ties = np.flatnonzero(head == head[pair])
            if ties.size > 1:
                pair = int(ties[np.argmax(self.rank[ties])])
        return pair

    def pick_first(self, mask: npt.NDArray[np.bool_]) -> int:
        """The first opened pair where ``mask`` holds (creation order, or the authors' list order), or −1."""
        hits = np.flatnonzero(mask[: self.opened])
        if not hits.size:
            return -1
        return int(hits[np.argmin(self.rank[hits])]) if self.authors_order else int(hits[0])

    def turn_off_idle(self, now_slot: int) -> None:
        """DRS at slot ``now_slot``: a server whose pairs all idled ρ slots goes off at ``ceil(F)+ρ``."""
        slot = self.config.slot_s
        known = self.opened // self.l
        off_slot = np.ceil(self.server_finish[:known] / slot - 1e-9) + self.config.drs_idle_slots
        due = np.flatnonzero(self.server_on[:known] & (off_slot <= now_slot))
        for server in due:
            self._close(int(server), float(off_slot[server]) * slot)

    def _close(self, server: int, off_s: float) -> None:
        self.intervals.append(
            (server, float(self.server_on_s[server]), max(off_s, float(self.server_on_s[server])))
        )
        self.server_on[server] = False
        first = server * self.l
        self.mu_on[first : first + self.l] = np.inf

    def close_all(self, drs: bool, end_s: float = math.inf) -> None:
        """End of the run: every ON server goes off (after ρ idle slots when ``drs``, else at its finish),
        and no later than ``end_s`` (the authors' online loop stops when the last task ends)."""
        slot = self.config.slot_s
        for server in np.flatnonzero(self.server_on[: self.opened // self.l]):
            finish = float(self.server_finish[server])
            off = (math.ceil(finish / slot - 1e-9) + self.config.drs_idle_slots) * slot if drs else finish
            self._close(int(server), min(off, end_s))
