"""The domain-blind event kernel: ordering, clock, determinism, copies."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.sim import EventQueue
from wattsched.sim.kernel import Event, Instant


def test_events_pop_by_time_then_priority_then_insertion_order() -> None:
    queue = EventQueue()
    queue.schedule(5.0, 1, "late-low")
    queue.schedule(2.0, 3, "early")
    queue.schedule(5.0, 0, "late-high")
    queue.schedule(5.0, 1, "late-low-2")
    assert len(queue) == 4 and queue.peek_time() == 2.0
    popped = [queue.pop() for _ in range(4)]
    assert [p[3] for p in popped] == ["early", "late-high", "late-low", "late-low-2"]
    assert queue.now == 5.0 and not queue and queue.peek_time() == math.inf


def test_clock_never_goes_back() -> None:
    queue = EventQueue(start=10.0)
    with pytest.raises(ValueError):
        queue.schedule(9.0, 0, None)
    with pytest.raises(ValueError):
        queue.advance_to(9.0)
    queue.advance_to(12.0)
    assert queue.now == 12.0


def _always(event: tuple) -> bool:  # type: ignore[type-arg]
    return True


def test_an_instant_takes_every_event_within_the_window_and_the_clock_moves_to_the_latest() -> None:
    queue = EventQueue()
    queue.schedule(1.0, 0, "a")
    queue.schedule(1.0 + 5e-10, 1, "b")
    queue.schedule(1.0 + 2e-9, 0, "c")
    instant = queue.pop_instant(1e-9, _always)
    assert instant is not None
    assert [e[3] for e in instant.events] == ["a", "b"] and instant.time == 1.0 + 5e-10 == queue.now
    nxt = queue.pop_instant(1e-9, _always)
    assert nxt is not None and [e[3] for e in nxt.events] == ["c"]
    assert queue.pop_instant(1e-9, _always) is None


def test_the_stream_merges_with_the_heap_by_time_then_priority() -> None:
    # Stream entries act as events of priority 2: a priority-0 event at the same time comes in the same
    # instant; a priority-3 one too (same time), but only a later time makes a separate instant.
    queue = EventQueue(stream=[5.0, 5.0, 9.0], stream_priority=2)
    queue.schedule(5.0, 3, "timer")
    queue.schedule(7.0, 0, "completion")
    first = queue.pop_instant(1e-9, _always)
    assert first is not None
    assert (first.first, first.stop) == (0, 2) and [e[3] for e in first.events] == ["timer"]
    second = queue.pop_instant(1e-9, _always)
    assert second is not None and (second.first, second.stop) == (2, 2) and second.time == 7.0
    third = queue.pop_instant(1e-9, _always)
    assert (
        third is not None and (third.first, third.stop) == (2, 3) and third.events == [] and third.time == 9.0
    )
    assert not queue and len(queue) == 0


def test_stale_heads_before_the_next_stream_entry_are_dropped_without_moving_the_clock() -> None:
    queue = EventQueue(stream=[10.0], stream_priority=2)
    queue.schedule(3.0, 0, "stale")
    queue.schedule(4.0, 0, "real")
    instant = queue.pop_instant(1e-9, lambda e: e[3] != "stale")
    assert instant is not None and [e[3] for e in instant.events] == ["real"] and queue.now == 4.0
    # A stale event after the stream entry is not inspected before the entry's instant.
    queue.schedule(12.0, 0, "stale")
    instant = queue.pop_instant(1e-9, lambda e: e[3] != "stale")
    assert instant is not None and instant.time == 10.0 and instant.events == []
    assert queue.pop_instant(1e-9, lambda e: e[3] != "stale") is None


def test_an_unsorted_stream_is_refused() -> None:
    with pytest.raises(ValueError, match="sorted"):
        EventQueue(stream=[2.0, 1.0])


def test_copy_is_independent() -> None:
    queue = EventQueue(stream=[0.25])
    queue.schedule(1.0, 0, "a")
    other = queue.copy()
    assert other.pop_instant(1e-9, _always) is not None  # the copy's stream position moves alone
    assert queue.peek_time() == 0.25 and other.peek_time() == 1.0
    assert queue.pop()[3] == "a"
    other.schedule(0.5, 0, "b")
    assert [other.pop()[3], other.pop()[3]] == ["b", "a"]


def _replay(
    queue: EventQueue, use_drain: bool, follow_ups: dict[str, tuple[float, int, str]]
) -> list[Instant]:
    """Every instant as (time, payloads, first, stop); the handler schedules each event's follow-up."""
    seen: list[Instant] = []

    def live(event: Event) -> bool:
        return not str(event[3]).startswith("x")

    def handle(events: list[Event], first: int, stop: int, time: float) -> None:
        seen.append(Instant(time, [e[3] for e in events], first, stop))
        for event in events:
            follow = follow_ups.get(event[3])
            if follow is not None:
                queue.schedule(time + follow[0], follow[1], follow[2])

    if use_drain:
        queue.drain(1e-9, live, handle)
    else:
        while (instant := queue.pop_instant(1e-9, live)) is not None:
            handle(instant.events, instant.first, instant.stop, instant.time)
    return seen


@given(
    events=st.lists(
        st.tuples(st.sampled_from([0.0, 1.0, 1.0 + 5e-10, 2.0, 3.5]), st.integers(0, 3), st.booleans()),
        max_size=12,
    ),
    stream=st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.0, 4.0]), max_size=6),
    follow=st.lists(
        st.tuples(st.sampled_from([0.0, 5e-10, 0.5, 3.0]), st.integers(0, 3), st.booleans()), max_size=12
    ),
)
@settings(max_examples=150, deadline=None)
def test_drain_gives_exactly_the_instants_of_repeated_pop_instant(
    events: list[tuple[float, int, bool]],
    stream: list[float],
    follow: list[tuple[float, int, bool]],
) -> None:
    # Stale events ("x…") anywhere, follow-ups scheduled from inside the handler (some stale, some at once).
    names = [("x" if stale else "e") + str(i) for i, (_, _, stale) in enumerate(events)]
    follow_ups = {
        name: (delay, priority, ("x" if stale else "f") + name)
        for name, (delay, priority, stale) in zip(names, follow, strict=False)
    }
    runs = []
    for use_drain in (False, True):
        queue = EventQueue(stream=sorted(stream), stream_priority=2)
        for name, (time, priority, _) in zip(names, events, strict=True):
            queue.schedule(time, priority, name)
        runs.append((_replay(queue, use_drain, follow_ups), queue.now, len(queue)))
    assert runs[0] == runs[1]
    assert runs[1][2] == 0  # nothing left behind


def test_truncate_stream_drops_only_entries_not_yet_popped() -> None:
    stream = [1.0, 2.0, 3.0, 4.0]
    queue = EventQueue(stream=stream)
    queue.pop_instant(0.0, lambda event: True)  # the entry at 1.0
    queue.truncate_stream(2)
    assert stream == [1.0, 2.0] and len(queue) == 1
    with pytest.raises(ValueError, match="already popped"):
        queue.truncate_stream(0)
