"""A domain-blind discrete-event kernel: a clock and one heap of ``(time, priority, seq, payload)``.

The kernel knows nothing of what it simulates. ``priority`` orders simultaneous events (lower first) and the
sequence number makes the order of equal ``(time, priority)`` events deterministic (first scheduled, first
popped). Cancelled events are not removed: the caller says which events are still *live* when they reach the
head of the queue (lazy invalidation), which keeps every operation O(log n) without bookkeeping.

Two things a simulator needs beyond push and pop:

* a **stream**: a sorted list of times (e.g. job arrivals) merged with the heap as if each were an event
  ``(time, stream_priority, payload=index)``, without ever entering the heap;
* **instants** (:meth:`EventQueue.pop_instant`): the next live event and every event (and stream entry)
  at most ``window`` after it, popped in one call; the clock moves to the latest of them.
  :meth:`EventQueue.handle_next` hands the next instant to a callback instead of returning it (a simulator
  stepped instant by instant), :meth:`EventQueue.drain` hands them all in turn (a run to the end); neither
  builds a per-instant object.

A simulator that learns of new stream entries while it runs (a GPU of a cluster, given jobs as they are
placed) appends them with :meth:`EventQueue.append_stream`, asks when its next live event is with
:meth:`EventQueue.peek_live_time`, and may renumber its payloads with :meth:`EventQueue.remap` (compaction).
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, NamedTuple, TypeVar

__all__ = ["Event", "EventQueue", "Instant"]

Event = tuple[float, int, int, Any]
T = TypeVar("T")
_heappush = heapq.heappush
_heappop = heapq.heappop
_new_tuple = tuple.__new__


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

    __slots__ = ("_heap", "_seq", "_stream", "_stream_priority", "now", "peeked_live", "stream_position")

    def __init__(self, start: float = 0.0, stream: Sequence[float] = (), stream_priority: int = 0) -> None:
        """``stream`` is kept by reference (not copied): the caller may read it, and
        :meth:`append_stream` extends it (it must then be a ``list``)."""
        if not _is_sorted(stream):
            raise ValueError("the stream's times must be sorted")
        self.now: float = start
        self._heap: list[Event] = []
        self._seq = 0
        self._stream = stream
        self._stream_priority = stream_priority
        #: Index of the next stream entry not yet popped (read it; the queue moves it). An attribute, not a
        #: property: a cluster reads it after every instant of every GPU.
        self.stream_position = 0
        #: Whether the last :meth:`peek_live_time` returned the time of a live event or stream entry.
        self.peeked_live = True

    def schedule(self, time: float, priority: int, payload: Any) -> None:
        """Add an event at absolute ``time`` (never before the clock)."""
        if time < self.now:
            raise ValueError(f"cannot schedule an event at {time} before the clock ({self.now})")
        seq = self._seq = self._seq + 1
        _heappush(self._heap, (time, priority, seq, payload))

    def peek_time(self) -> float:
        """Time of the next event or stream entry, or ``inf`` when none is left."""
        head = self._heap[0][0] if self._heap else math.inf
        stream = self._stream[self.stream_position] if self.stream_position < len(self._stream) else math.inf
        return min(head, stream)

    def pop(self) -> Event:
        """Remove the next heap event and advance the clock to its time (the stream is not consulted)."""
        event = _heappop(self._heap)
        self.now = event[0]
        return event

    def pop_instant(self, window: float, is_live: Callable[[Event], bool]) -> Instant | None:
        """Pop the next instant (module docstring); ``None`` when nothing is left.

        Stale heads ordered before the next stream entry are discarded first (``is_live`` is asked about each
        head until one is live), so they never move the clock. Later stale events are popped with the instant
        they fall in, exactly as live ones (the caller skips them)."""
        return self.handle_next(window, is_live, _instant)

    def handle_next(
        self,
        window: float,
        is_live: Callable[[Event], bool],
        handle: Callable[[list[Event], int, int, float], T],
    ) -> T | None:
        """Pop the next instant as :meth:`pop_instant` does and return ``handle(events, first, stop, time)``
        (the fields of :class:`Instant`), or ``None`` when nothing is left: one step of :meth:`drain`."""
        heap = self._heap
        stream = self._stream
        first = self.stream_position
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
        self.stream_position = stop
        time = batch[-1][0] if batch else -math.inf
        if stop > first and stream[stop - 1] > time:
            time = stream[stop - 1]
        self.now = time
        return handle(batch, first, stop, time)

    def drain(
        self,
        window: float,
        is_live: Callable[[Event], bool],
        handle: Callable[[list[Event], int, int, float], object],
    ) -> None:
        """Pop every instant in turn until nothing is left, calling ``handle(events, first, stop, time)`` for
        each (its return value is ignored): :meth:`handle_next` until it returns ``None``, inlined (a run to
        the end pays no call per instant). ``handle`` may schedule events and append stream entries; the loop
        sees them."""
        stream_priority = self._stream_priority
        inf = math.inf
        while True:
            heap = self._heap
            stream = self._stream
            first = self.stream_position
            count = len(stream)
            arrival = stream[first] if first < count else inf
            while heap:
                head = heap[0]
                if head[0] > arrival or (head[0] == arrival and head[1] > stream_priority):
                    break
                if is_live(head):
                    break
                _heappop(heap)
            else:
                if arrival == inf:
                    return
            limit = (heap[0][0] if heap and heap[0][0] <= arrival else arrival) + window
            batch = []
            while heap and heap[0][0] <= limit:
                batch.append(_heappop(heap))
            stop = first
            while stop < count and stream[stop] <= limit:
                stop += 1
            self.stream_position = stop
            time = batch[-1][0] if batch else -inf
            if stop > first and stream[stop - 1] > time:
                time = stream[stop - 1]
            self.now = time
            handle(batch, first, stop, time)

    def peek_live_time(self, is_live: Callable[[Event], bool], limit: float = math.inf) -> float:
        """Time of the next live event or stream entry (``inf``: none).

        Stale heads are discarded exactly as :meth:`pop_instant` would discard them, treating ``limit`` as a
        stream entry that may still be appended (so peeking never changes what an instant holds): a stale head
        ordered after ``min(next stream entry, limit)`` is kept, and its time may be returned; then
        :attr:`peeked_live` is false: peek again with a later ``limit`` to see past it."""
        heap = self._heap
        stream = self._stream
        arrival = stream[self.stream_position] if self.stream_position < len(stream) else math.inf
        bound = arrival if arrival < limit else limit
        stream_priority = self._stream_priority
        while heap:
            head = heap[0]
            if head[0] > bound or (head[0] == bound and head[1] > stream_priority):
                break
            if is_live(head):
                self.peeked_live = True
                return head[0]
            _heappop(heap)
        head_time = heap[0][0] if heap else math.inf
        if head_time < arrival:
            self.peeked_live = is_live(heap[0])
            return head_time
        self.peeked_live = True
        return arrival

    def append_stream(self, time: float) -> int:
        """Add a stream entry at ``time`` (not before the last entry nor the clock); returns its index."""
        stream = self._stream
        if not isinstance(stream, list):
            raise TypeError("append_stream needs a queue built with a list as its stream")
        if time < self.now or (stream and time < stream[-1]):
            last = stream[-1] if stream else -math.inf
            raise ValueError(
                f"stream entry at {time} is before the clock ({self.now}) or the last entry ({last})"
            )
        stream.append(time)
        return len(stream) - 1

    def truncate_stream(self, count: int) -> None:
        """Drop the stream entries from index ``count`` on (none of them popped yet)."""
        if not self.stream_position <= count <= len(self._stream):
            popped = self.stream_position
            raise ValueError(f"cannot truncate the stream to {count} entries: {popped} already popped")
        stream = self._stream
        if not isinstance(stream, list):
            raise TypeError("truncate_stream needs a queue built with a list as its stream")
        del stream[count:]

    def remap(self, payload: Callable[[Event], Any | None], stream: list[float], position: int) -> None:
        """Renumber what the queue holds: each heap event gets ``payload(event)`` as its payload (``None``
        drops it), and the stream becomes ``stream`` with ``position`` entries already popped. Times,
        priorities and sequence numbers are kept, so the order of every remaining event is unchanged."""
        if not _is_sorted(stream) or not 0 <= position <= len(stream):
            raise ValueError("remap needs a sorted stream and a position within it")
        events = []
        for event in self._heap:
            new = payload(event)
            if new is not None:
                events.append((event[0], event[1], event[2], new))
        heapq.heapify(events)
        self._heap = events
        self._stream = stream
        self.stream_position = position

    def advance_to(self, time: float) -> None:
        """Move the clock forward without an event (e.g. to a horizon after the last event)."""
        if time < self.now:
            raise ValueError(f"the clock cannot go back from {self.now} to {time}")
        self.now = time

    def copy(self, stream: Sequence[float] | None = None) -> EventQueue:
        """An independent queue with the same clock, pending events and stream position (payloads shared).

        The stream is shared unless ``stream`` (a copy of it, e.g. for a copy that appends) is given."""
        other = EventQueue.__new__(EventQueue)
        other.now = self.now
        other._heap = self._heap.copy()
        other._seq = self._seq
        other._stream = self._stream if stream is None else stream
        other._stream_priority = self._stream_priority
        other.stream_position = self.stream_position
        other.peeked_live = self.peeked_live
        return other

    def __len__(self) -> int:
        return len(self._heap) + len(self._stream) - self.stream_position

    def __bool__(self) -> bool:
        return bool(self._heap) or self.stream_position < len(self._stream)


def _instant(events: list[Event], first: int, stop: int, time: float) -> Instant:
    # Instant(...) without the Python-level __new__ of a NamedTuple.
    return _new_tuple(Instant, (time, events, first, stop))


def _is_sorted(times: Sequence[float]) -> bool:
    """Whether ``times`` never decreases (one C-level pass: streams hold a job per entry)."""
    return all(map(operator.le, times, islice(times, 1, None)))
