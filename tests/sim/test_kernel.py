"""The domain-blind event kernel: ordering, clock, determinism, copies."""

from __future__ import annotations

import math

import pytest

from wattsched.sim import EventQueue


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


def test_discard_next_keeps_the_clock() -> None:
    queue = EventQueue()
    queue.schedule(3.0, 0, "stale")
    queue.schedule(4.0, 0, "real")
    assert queue.discard_next()[3] == "stale"
    assert queue.now == 0.0
    assert queue.pop()[3] == "real" and queue.now == 4.0


def test_copy_is_independent() -> None:
    queue = EventQueue()
    queue.schedule(1.0, 0, "a")
    other = queue.copy()
    other.schedule(0.5, 0, "b")
    assert queue.pop()[3] == "a"
    assert [other.pop()[3], other.pop()[3]] == ["b", "a"]
