"""A sorted list for long queues: O(log n) insert and delete, ordered reads from the front (domain-blind).

The items live in sorted *blocks* of at most ``2·load`` items with a list of each block's largest item
(the layout of the ``sortedcontainers`` package, written here from its published description): an insert or
delete bisects the block maxima (O(log n) comparisons), then inserts into or deletes from one block (a
``memmove`` of at most ``2·load`` pointers, independent of n); a block that outgrows ``2·load`` is split in
two and an emptied block is dropped. Reading from the front (``items[0]``, ``items[:k]``, ``items[i]`` for
small ``i``, iteration) touches only the first blocks.

A plain ``list`` with ``bisect.insort`` is faster below a few thousand items (one C call, no Python
frames), and its ``memmove`` grows with n above that; the MIG engine therefore switches a queue to this
structure when it grows past :data:`LARGE` items and back to a list below :data:`SMALL` (see
:mod:`wattsched.mig._state`). Both keep the same order, so results do not depend on the switch.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, Generic, TypeVar, overload

__all__ = ["LARGE", "SMALL", "BlockedSortedList"]

T = TypeVar("T")

#: Queues longer than this are worth the blocked layout (measured on the MIG engine's waiting queue).
LARGE = 2048
#: ... and shorter than this are a plain list again (hysteresis: no switching back and forth).
SMALL = 512
_LOAD = 512


class BlockedSortedList(Sequence[T], Generic[T]):
    """Items kept sorted (``<``); duplicates allowed; see the module docstring."""

    __slots__ = ("_blocks", "_len", "_load", "_maxes")

    def __init__(self, items: Iterable[T] = (), *, load: int = _LOAD) -> None:
        if load < 2:
            raise ValueError(f"load must be >= 2, got {load}")
        ordered: list[Any] = sorted(items)  # type: ignore[type-var,unused-ignore]
        self._load = load
        # Items are only compared (``<``, ``==``); kept as Any so that bisect accepts any orderable T.
        self._blocks: list[list[Any]] = [ordered[i : i + load] for i in range(0, len(ordered), load)]
        self._maxes: list[Any] = [block[-1] for block in self._blocks]
        self._len = len(ordered)

    # ------------------------------------------------------------------ changes
    def add(self, item: T) -> None:
        """Insert ``item`` after any equal items."""
        maxes = self._maxes
        blocks = self._blocks
        self._len += 1
        if not maxes:
            blocks.append([item])
            maxes.append(item)
            return
        i = bisect_right(maxes, item)
        if i == len(maxes):
            i -= 1
            blocks[i].append(item)
            maxes[i] = item
        else:
            insort(blocks[i], item)
        block = blocks[i]
        if len(block) > 2 * self._load:
            half = block[self._load :]
            del block[self._load :]
            blocks.insert(i + 1, half)
            maxes[i] = block[-1]
            maxes.insert(i + 1, half[-1])

    def remove(self, item: T) -> None:
        """Delete one item equal to ``item``; ``ValueError`` if there is none."""
        maxes = self._maxes
        i = bisect_left(maxes, item)
        if i == len(maxes):
            raise ValueError(f"{item!r} is not in the list")
        block = self._blocks[i]
        k = bisect_left(block, item)
        if k == len(block) or block[k] != item:
            raise ValueError(f"{item!r} is not in the list")
        del block[k]
        self._len -= 1
        if not block:
            del self._blocks[i]
            del maxes[i]
        elif k == len(block):
            maxes[i] = block[-1]

    # ------------------------------------------------------------------ reads
    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[T]:
        return chain.from_iterable(self._blocks)

    def __contains__(self, item: object) -> bool:
        i = bisect_left(self._maxes, item)
        if i == len(self._maxes):
            return False
        block = self._blocks[i]
        k = bisect_left(block, item)
        return k < len(block) and block[k] == item

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if start == 0 and step == 1:  # the common read: the first k items
                out: list[T] = []
                for block in self._blocks:
                    if len(out) + len(block) >= stop:
                        out.extend(block[: stop - len(out)])
                        return out
                    out.extend(block)
                return out
            return list(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("index out of range")
        for block in self._blocks:  # from the front: reads near the front touch one or two blocks
            if index < len(block):
                return block[index]
            index -= len(block)
        raise AssertionError("unreachable: the blocks hold _len items")  # pragma: no cover

    def copy(self) -> BlockedSortedList[T]:
        other: BlockedSortedList[T] = BlockedSortedList.__new__(BlockedSortedList)
        other._load = self._load
        other._blocks = [block.copy() for block in self._blocks]
        other._maxes = self._maxes.copy()
        other._len = self._len
        return other

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BlockedSortedList | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"BlockedSortedList({list(self)!r})"
