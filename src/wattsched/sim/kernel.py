"""A domain-blind discrete-event kernel: a clock and one heap of ``(time, priority, seq, payload)``.

The kernel knows nothing of what it simulates. ``priority`` orders simultaneous events (lower first) and the
sequence number makes the order of equal ``(time, priority)`` events deterministic (first scheduled, first
popped). Cancelled events are not removed: the caller says which events are still *live* when they reach the
head of the queue (lazy invalidation), which keeps every operation O(log n) without bookkeeping.

Two things a simulator needs beyond push and pop:

* a **stream**: a sorted list of times (e.g. job arrivals) merged with the heap as if each were an event
  ``(time, stream_priority, payload=index)``, without ever entering the heap;
* **instants** (:meth:`EventQueue.pop_instant`): the next live event and every event (and stream entry) at
most
  ``window`` after it, popped in one call; the clock moves to the latest of them.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

__all__ = ["Event", "EventQueue", "Instant"]

Event = tuple[float, int, int, Any]
_heappush = heapq.heappush
_heappop = heapq.heappop


class Instant(NamedTuple):
    """One instant popped by :meth:`EventQueue.pop_instant`."""

    #: The instant's time: the latest of its events and stream entries (stale events included).
    time: float
    #: Heap events of the instant in ``(time, priority, seq)`` order, stale ones included.
    events: list[Event]
    #: Stream entries ``first .. stop - 1`` belong to the instant.
    first: int
    stop: int


class EventQueue:
    """A clock, a priority queue of future events and an optional sorted stream (see the module docstring)."""

    __slots__ = ("_heap", "_next", "_seq", "_stream", "_stream_priority", "now")

    def __init__(self, start: float = 0.0, stream: Sequence[float] = (), stream_priority: int = 0) -> None:
        if any(b < a for a, b in pairwise(stream)):
            raise ValueError("the stream's times must be sorted")
        self.now: float = start
        self._heap: list[Event] = []
        self._seq = 0
        self._stream = stream
        self._stream_priority = stream_priority
        self._next = 0

    def schedule(self, time: float, priority: int, payload: Any) -> None:
        """Add an event at absolute ``time`` (never before the clock)."""
        if time < self.now:
            raise ValueError(f"cannot schedule an event at {time} before the clock ({self.now})")
        seq = self._seq = self._seq + 1
        _heappush(self._heap, (time, priority, seq, payload))

    def peek_time(self) -> float:
        """Time of the next event or stream entry, or ``inf`` when none is left."""
        head = self._heap[0][0] if self._heap else math.inf
        stream = self._stream[self._next] if self._next < len(self._stream) else math.inf
        return min(head, stream)

    def pop(self) -> Event:
        """Remove the next heap event and advance the clock to its time (the stream is not consulted)."""
        event = _heappop(self._heap)
        self.now = event[0]
        return event

    @property
    def stream_position(self) -> int:
        """Index of the next stream entry not yet popped."""
        return self._next

    def pop_instant(self, window: float, is_live: Callable[[Event], bool]) -> Instant | None:
        """Pop the next instant (module docstring); ``None`` when nothing is left.

        Stale heads ordered before the next stream entry are discarded first (``is_live`` is asked about each
        head until one is live), so they never move the clock. Later stale events are popped with the instant
        they fall in, exactly as live ones (the caller skips them)."""
        heap = self._heap
        stream = self._stream
        first = self._next
        arrival = stream[first] if first < len(stream) else math.inf
        stream_priority = self._stream_priority
        while heap:
            head = heap[0]
            if head[0] > arrival or (head[0] == arrival and head[1] > stream_priority):
                break  # the next stream entry comes first
            if is_live(head):
                break
            _heappop(heap)
        else:
            if arrival == math.inf:
                return None
        limit = (heap[0][0] if heap and heap[0][0] <= arrival else arrival) + window
        batch = []
        while heap and heap[0][0] <= limit:
            batch.append(_heappop(heap))
        stop = first
        count = len(stream)
        while stop < count and stream[stop] <= limit:
            stop += 1
        self._next = stop
        time = batch[-1][0] if batch else -math.inf
        if stop > first and stream[stop - 1] > time:
            time = stream[stop - 1]
        self.now = time
        return Instant(time, batch, first, stop)

    def advance_to(self, time: float) -> None:
        """Move the clock forward without an event (e.g. to a horizon after the last event)."""
        if time < self.now:
            raise ValueError(f"the clock cannot go back from {self.now} to {time}")
        self.now = time

    def copy(self) -> EventQueue:
        """An independent queue with the same clock, pending events and stream position (payloads shared)."""
        other = EventQueue.__new__(EventQueue)
        other.now = self.now
        other._heap = self._heap.copy()
        other._seq = self._seq
        other._stream = self._stream
        other._stream_priority = self._stream_priority
        other._next = self._next
        return other

    def __len__(self) -> int:
        return len(self._heap) + len(self._stream) - self._next

    def __bool__(self) -> bool:
        return bool(self._heap) or self._next < len(self._stream)
