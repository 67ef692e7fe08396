"""Placement-valid MIG partitions derived from a GPU's profile table (configurations are derived, not typed).

Rules (docs/concepts/mig-model.md; NVML's model): an instance of a profile occupies the memory slots ``[start,
start + size)``
of one of the profile's placements; instances never overlap in memory slots; the compute slices of all
instances sum to at most the GPU's; a profile has at most ``max_instances`` instances.

* :func:`enumerate_partitions` lists every *maximal* placement-valid partition (no further instance of any
  profile fits), optionally without the ``+me`` media profiles.
* :func:`place` turns a multiset of profile names into one placement — the canonical one: instances ordered by
  memory size, then compute (largest first), each at its earliest start that still lets the rest fit
  (depth-first, backtracking). On the A100-40GB this reproduces P1's slot layouts for all 12 configurations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from wattsched.errors import ConfigError
from wattsched.hardware.profiles import InstanceProfile

__all__ = ["Placement", "enumerate_partitions", "is_maximal", "place", "validate_placement"]

#: One placed instance: ``(profile name, start, size)``.
Placement = tuple[str, int, int]


def _by_name(profiles: Sequence[InstanceProfile]) -> dict[str, InstanceProfile]:
    return {p.name: p for p in profiles}


def validate_placement(
    placed: Sequence[Placement], profiles: Sequence[InstanceProfile], compute_slices: int, memory_slots: int
) -> str | None:
    """``None`` when ``placed`` is a valid partition, else the reason it is not (one line)."""
    table = _by_name(profiles)
    used = [False] * memory_slots
    compute = 0
    counts: Counter[str] = Counter()
    for name, start, size in placed:
        profile = table.get(name)
        if profile is None:
            return f"unknown profile '{name}'; valid: {', '.join(sorted(table))}"
        if (start, size) not in profile.placements:
            return f"{name}@{start} is not one of the profile's placements {list(profile.placements)}"
        for slot in range(start, start + size):
            if used[slot]:
                return f"{name}@{start} overlaps another instance at memory slot {slot}"
            used[slot] = True
        compute += profile.compute
        counts[name] += 1
        if counts[name] > profile.max_instances:
            return f"more than {profile.max_instances} instance(s) of {name}"
    if compute > compute_slices:
        return f"needs {compute} compute slices, the GPU has {compute_slices}"
    return None


def is_maximal(
    placed: Sequence[Placement],
    profiles: Sequence[InstanceProfile],
    compute_slices: int,
    memory_slots: int,
    *,
    include_media: bool = False,
) -> bool:
    """Whether no further instance of any (non-media unless asked) profile fits beside ``placed``."""
    used = [False] * memory_slots
    for _, start, size in placed:
        for slot in range(start, start + size):
            used[slot] = True
    table = _by_name(profiles)
    compute = sum(table[name].compute for name, _, _ in placed)
    counts = Counter(name for name, _, _ in placed)
    for profile in profiles:
        if (profile.media and not include_media) or counts[profile.name] >= profile.max_instances:
            continue
        if compute + profile.compute > compute_slices:
            continue
        for start, size in profile.placements:
            if not any(used[start : start + size]):
                return False
    return True


def enumerate_partitions(
    profiles: Sequence[InstanceProfile],
    compute_slices: int,
    memory_slots: int,
    *,
    include_media: bool = False,
) -> list[tuple[Placement, ...]]:
    """Every maximal placement-valid partition, each as placements in ascending start, in a stable order
    (lexicographic by ``(start, -size, name)`` of its instances)."""
    usable = [p for p in profiles if include_media or not p.media]
    starting: dict[int, list[InstanceProfile]] = {}
    for profile in usable:
        for start, _ in profile.placements:
            starting.setdefault(start, []).append(profile)
    for options in starting.values():
        options.sort(key=lambda p: (-p.memory_slots, -p.compute, p.name))
    found: list[tuple[Placement, ...]] = []
    chosen: list[Placement] = []
    counts: Counter[str] = Counter()

    def search(slot: int, compute: int) -> None:
        if slot >= memory_slots:
            if chosen and is_maximal(
                chosen, usable, compute_slices, memory_slots, include_media=include_media
            ):
                found.append(tuple(chosen))
            return
        for profile in starting.get(slot, ()):
            size = dict(profile.placements)[slot]
            if (
                slot + size <= memory_slots
                and compute + profile.compute <= compute_slices
                and counts[profile.name] < profile.max_instances
            ):
                chosen.append((profile.name, slot, size))
                counts[profile.name] += 1
                search(slot + size, compute + profile.compute)
                counts[profile.name] -= 1
                chosen.pop()
        search(slot + 1, compute)  # leave this memory slot empty

    search(0, 0)
    return found


def place(
    names: Iterable[str], profiles: Sequence[InstanceProfile], compute_slices: int, memory_slots: int
) -> tuple[Placement, ...]:
    """The canonical placement of a multiset of profile names (see the module docstring), in ascending start.

    Raises :class:`ConfigError` when the profiles cannot be placed together on this GPU."""
    table = _by_name(profiles)
    wanted = list(names)
    for name in wanted:
        if name not in table:
            raise ConfigError(f"unknown profile '{name}'; valid: {', '.join(sorted(table))}")
    order = sorted(wanted, key=lambda n: (-table[n].memory_slots, -table[n].compute, n))
    if sum(table[n].compute for n in order) > compute_slices:
        raise ConfigError(
            f"profiles {' + '.join(order)} need more than the GPU's {compute_slices} compute slices"
        )
    used = [False] * memory_slots
    result: list[Placement] = []

    def search(index: int, earliest: int) -> bool:
        if index == len(order):
            return True
        name = order[index]
        for start, size in table[name].placements:
            if start < earliest or start + size > memory_slots or any(used[start : start + size]):
                continue
            for slot in range(start, start + size):
                used[slot] = True
            result.append((name, start, size))
            # Identical profiles are placed in ascending start: no permutation is tried twice.
            following = start + 1 if index + 1 < len(order) and order[index + 1] == name else 0
            if search(index + 1, following):
                return True
            result.pop()
            for slot in range(start, start + size):
                used[slot] = False
        return False

    if not search(0, 0):
        raise ConfigError(f"profiles {' + '.join(order)} cannot be placed together (memory slots overlap)")
    counts = Counter(order)
    for name, count in counts.items():
        if count > table[name].max_instances:
            raise ConfigError(f"more than {table[name].max_instances} instance(s) of {name}")
    return tuple(sorted(result, key=lambda p: p[1]))
