"""A domain-blind discrete-event kernel: a clock and one heap of ``(time, priority, seq, payload)``.

The kernel knows nothing of what it simulates. ``priority`` orders simultaneous events (lower first) and the
sequence number makes the order of equal ``(time, priority)`` events deterministic (first scheduled, first
popped). Cancelled events are not removed: the caller ignores stale payloads when it pops them (lazy
invalidation), which keeps every operation O(log n) without bookkeeping.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

__all__ = ["EventQueue"]

Event = tuple[float, int, int, Any]
_heappush = heapq.heappush
_heappop = heapq.heappop


class EventQueue:
    """A clock plus a priority queue of future events."""

    __slots__ = ("_heap", "_seq", "now")

    def __init__(self, start: float = 0.0) -> None:
        self.now: float = start
        self._heap: list[Event] = []
        self._seq = 0

    def schedule(self, time: float, priority: int, payload: Any) -> None:
        """Add an event at absolute ``time`` (never before the clock)."""
        if time < self.now:
            raise ValueError(f"cannot schedule an event at {time} before the clock ({self.now})")
        seq = self._seq = self._seq + 1
        _heappush(self._heap, (time, priority, seq, payload))

    def peek_time(self) -> float:
        """Time of the next event, or ``inf`` when none is left."""
        return self._heap[0][0] if self._heap else math.inf

    def pop(self) -> Event:
        """Remove the next event and advance the clock to its time."""
        event = heapq.heappop(self._heap)
        self.now = event[0]
        return event

    def pop_instant(self, window: float) -> list[Event]:
        """Remove the next event and every event at most ``window`` after it (one *instant*), in order;
        the clock advances to the last one. One call instead of a peek/pop per event, for speed."""
        heap = self._heap
        first = _heappop(heap)
        limit = first[0] + window
        batch = [first]
        while heap and heap[0][0] <= limit:
            batch.append(_heappop(heap))
        self.now = batch[-1][0]
        return batch

    def discard_next(self) -> Event:
        """Remove the next event *without* moving the clock (the caller found it stale)."""
        return _heappop(self._heap)

    def advance_to(self, time: float) -> None:
        """Move the clock forward without an event (e.g. to a horizon after the last event)."""
        if time < self.now:
            raise ValueError(f"the clock cannot go back from {self.now} to {time}")
        self.now = time

    def copy(self) -> EventQueue:
        """An independent queue with the same clock and pending events (payloads are shared)."""
        other = EventQueue(self.now)
        other._heap = self._heap.copy()
        other._seq = self._seq
        return other

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
