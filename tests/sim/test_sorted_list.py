"""The blocked sorted list against a plain sorted list under random inserts, deletes and reads."""

from __future__ import annotations

from bisect import insort

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.sim.sorted_list import BlockedSortedList

_OPS = st.lists(st.tuples(st.booleans(), st.integers(0, 60), st.integers(0, 500)), max_size=400)


@given(_OPS, st.sampled_from([2, 3, 8]))
def test_it_behaves_like_a_sorted_list(ops: list[tuple[bool, int, int]], load: int) -> None:
    mine: BlockedSortedList[tuple[int, int]] = BlockedSortedList(load=load)
    model: list[tuple[int, int]] = []
    for serial, (insert, key, pick) in enumerate(ops):
        if insert or not model:
            item = (key, serial)
            mine.add(item)
            insort(model, item)
        else:
            item = model.pop(pick % len(model))
            mine.remove(item)
        assert len(mine) == len(model) and bool(mine) == bool(model)
        assert list(mine) == model
        if model:
            assert mine[0] == model[0] and mine[-1] == model[-1]
            index = pick % len(model)
            assert mine[index] == model[index]
            assert mine[: index + 1] == model[: index + 1]
            assert model[index] in mine
    assert mine[:] == model and mine[1:5] == model[1:5] and mine[::2] == model[::2]
    copy = mine.copy()
    copy.add((-1, -1))
    assert list(mine) == model and copy == [(-1, -1), *model]


def test_errors() -> None:
    items = BlockedSortedList([(3, 0), (1, 0), (2, 0)], load=2)
    assert list(items) == [(1, 0), (2, 0), (3, 0)]
    with pytest.raises(ValueError, match="not in the list"):
        items.remove((2, 1))
    with pytest.raises(ValueError, match="not in the list"):
        items.remove((9, 0))
    with pytest.raises(IndexError):
        items[3]
    with pytest.raises(ValueError, match="load"):
        BlockedSortedList(load=1)
    assert (9, 9) not in items and (2, 0) in items
