"""MIG repartition plans: the ordered destroy/create steps that turn one layout into another
(docs/howto/nvml.md).

Pure functions over a minimal typed view of a GPU's MIG geometry (no NVML here): an instance is
``(profile name, start, size)`` with ``start``/``size`` in memory slots as NVML's placements count them; a
layout (a configuration's instances) is a tuple of instances sorted by start; a :class:`MigGeometry` gives
each profile's placements. The catalogue and a recorded snapshot both feed it.

The plan keeps every instance the two layouts share (same profile, same placement: work running there is
not disturbed), destroys the others first and then creates the new ones, so no two instances ever overlap on
the way. It is minimal: an instance cannot move, so each one only in the source must be destroyed and each
one only in the target created.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from wattsched.errors import ConfigError
from wattsched.hardware.mig import MigGpu

__all__ = [
    "NO_MIG",
    "GpuLayouts",
    "Layout",
    "MigGeometry",
    "MigInstance",
    "PlanStep",
    "ProfileRule",
    "layout_counts",
    "layout_text",
    "parse_layout",
    "plan_repartition",
    "replay",
]


@dataclass(frozen=True, order=True)
class MigInstance:
    """One GPU instance: where it sits (memory slots ``[start, start + size)``) and its profile."""

    start: int
    size: int
    profile: str

    def overlaps(self, other: MigInstance) -> bool:
        return self.start < other.start + other.size and other.start < self.start + self.size

    def __str__(self) -> str:
        return f"{self.profile}@{self.start}"


#: The id of the MIG-disabled GPU; a MIG mode, not a layout (wattsched never changes MIG mode).
NO_MIG = "no-mig"

#: A configuration's instances, sorted by start.
Layout = tuple[MigInstance, ...]


@dataclass(frozen=True)
class ProfileRule:
    """A MIG profile as the planner needs it: name, compute slices, allowed ``(start, size)`` placements."""

    name: str
    compute: int
    placements: tuple[tuple[int, int], ...]
    #: At most this many instances at once (NVML's instanceCount; the ``+me`` slice: 1); None: no limit.
    max_instances: int | None = None

    @property
    def media(self) -> bool:
        """``+me`` profiles own the media engines; derived configurations leave them out."""
        return self.name.endswith("+me")


@dataclass(frozen=True)
class MigGeometry:
    """The MIG geometry of one GPU: memory slots, compute slices and the profiles with their placements."""

    name: str
    memory_slots: int
    compute_slices: int
    profiles: tuple[ProfileRule, ...]

    @classmethod
    def from_rules(cls, name: str, rules: Iterable[ProfileRule]) -> MigGeometry:
        """Slots and slices follow from the rules: the furthest placement end and the largest profile."""
        rules = tuple(rules)
        if not rules:
            raise ConfigError(f"{name}: no MIG profiles (a GPU without MIG cannot be partitioned)")
        slots = max(start + size for rule in rules for start, size in rule.placements)
        return cls(name, slots, max(rule.compute for rule in rules), rules)

    def rule(self, profile: str) -> ProfileRule:
        for rule in self.profiles:
            if rule.name == profile:
                return rule
        valid = ", ".join(rule.name for rule in self.profiles)
        raise ConfigError(f"{self.name} has no MIG profile '{profile}'; valid: {valid}")

    def check(self, layout: Iterable[MigInstance], what: str = "layout") -> Layout:
        """The layout sorted by start; ConfigError if a placement is not the profile's or two overlap."""
        ordered = tuple(sorted(layout))
        for instance in ordered:
            rule = self.rule(instance.profile)
            if (instance.start, instance.size) not in rule.placements:
                raise ConfigError(
                    f"{what}: {instance.profile} cannot sit at {instance.start} (size "
                    f"{instance.size}) on {self.name}; placements {list(rule.placements)}"
                )
        for first, second in itertools.pairwise(ordered):
            if first.overlaps(second):
                raise ConfigError(f"{what}: {first} and {second} overlap on {self.name}")
        for profile, count in layout_counts(ordered).items():
            limit = self.rule(profile).max_instances
            if limit is not None and count > limit:
                raise ConfigError(f"{what}: {count} instances of {profile}; {self.name} allows {limit}")
        compute = sum(self.rule(i.profile).compute for i in ordered)
        if compute > self.compute_slices:
            raise ConfigError(f"{what}: {compute} compute slices used, {self.name} has {self.compute_slices}")
        return ordered

    def instances(self, *, media: bool = False) -> list[MigInstance]:
        """Every (profile, placement) the GPU allows, by start; ``+me`` profiles only if ``media``."""
        return sorted(
            MigInstance(start, size, rule.name)
            for rule in self.profiles
            if media or not rule.media
            for start, size in rule.placements
        )

    def place(self, counts: Mapping[str, int]) -> Layout | None:
        """A layout holding ``counts[profile]`` instances of each profile, or ``None`` if none fits.

        Deterministic: larger instances are placed first, each at its lowest free placement, backtracking
        when a later one no longer fits. Profile names must exist (ConfigError otherwise).
        """
        wanted: list[ProfileRule] = []
        for profile, count in counts.items():
            if count < 0:
                raise ConfigError(f"{self.name}: negative count {count} of {profile}")
            rule = self.rule(profile)
            if rule.max_instances is not None and count > rule.max_instances:
                return None
            wanted += [rule] * count
        if sum(rule.compute for rule in wanted) > self.compute_slices:
            return None
        wanted.sort(key=lambda rule: (-rule.placements[0][1], -rule.compute, rule.name))
        chosen: list[MigInstance] = []

        def search(position: int) -> bool:
            if position == len(wanted):
                return True
            rule = wanted[position]
            floor = -1  # identical profiles in increasing start order: no permutation is tried twice
            if position and wanted[position - 1] is rule:
                floor = chosen[-1].start
            for start, size in sorted(rule.placements):
                candidate = MigInstance(start, size, rule.name)
                if start > floor and not any(candidate.overlaps(other) for other in chosen):
                    chosen.append(candidate)
                    if search(position + 1):
                        return True
                    chosen.pop()
            return False

        return tuple(sorted(chosen)) if search(0) else None

    def layouts(self, *, media: bool = False) -> tuple[Layout, ...]:
        """Every maximal layout (no further instance fits), ordered by instance count, then starts."""
        options = self.instances(media=media)
        found: list[Layout] = []

        def extend(chosen: list[MigInstance], next_option: int, compute: int) -> None:
            grew = False
            for position in range(next_option, len(options)):
                option = options[position]
                extra = self.rule(option.profile).compute
                if (
                    compute + extra <= self.compute_slices
                    and not any(option.overlaps(c) for c in chosen)
                    and self._below_limit(chosen, option.profile)
                ):
                    grew = True
                    extend([*chosen, option], position + 1, compute + extra)
            if not grew and self._maximal(chosen, options, compute):
                found.append(tuple(chosen))

        extend([], 0, 0)
        return tuple(
            sorted(found, key=lambda layout: (len(layout), [(i.start, -i.size, i.profile) for i in layout]))
        )

    def _below_limit(self, chosen: Sequence[MigInstance], profile: str) -> bool:
        limit = self.rule(profile).max_instances
        return limit is None or sum(1 for c in chosen if c.profile == profile) < limit

    def _maximal(self, chosen: Sequence[MigInstance], options: Sequence[MigInstance], compute: int) -> bool:
        return bool(chosen) and not any(
            compute + self.rule(option.profile).compute <= self.compute_slices
            and not any(option.overlaps(c) for c in chosen)
            and self._below_limit(chosen, option.profile)
            for option in options
        )


@dataclass(frozen=True)
class PlanStep:
    """Destroy or create one instance."""

    op: Literal["destroy", "create"]
    instance: MigInstance

    def to_dict(self) -> dict[str, object]:
        """The JSON form of docs/howto/nvml.md: ``{"op", "profile", "start", "size"}``."""
        return {
            "op": self.op,
            "profile": self.instance.profile,
            "start": self.instance.start,
            "size": self.instance.size,
        }


def plan_repartition(
    geometry: MigGeometry, current: Iterable[MigInstance], target: Iterable[MigInstance]
) -> tuple[PlanStep, ...]:
    """The minimal ordered steps from ``current`` to ``target``: destroys (by start), then creates."""
    source = geometry.check(current, "from")
    goal = geometry.check(target, "to")
    shared = set(source) & set(goal)
    destroys = [PlanStep("destroy", i) for i in source if i not in shared]
    creates = [PlanStep("create", i) for i in goal if i not in shared]
    return tuple(destroys + creates)


def replay(geometry: MigGeometry, layout: Iterable[MigInstance], steps: Iterable[PlanStep]) -> Layout:
    """Apply ``steps`` to ``layout`` one at a time; ConfigError at the first step that is impossible."""
    current = list(geometry.check(layout))
    for number, step in enumerate(steps, start=1):
        if step.op == "destroy":
            if step.instance not in current:
                raise ConfigError(f"step {number}: destroy {step.instance}: no such instance")
            current.remove(step.instance)
        else:
            clash = [other for other in current if other.overlaps(step.instance)]
            if clash:
                raise ConfigError(f"step {number}: create {step.instance} overlaps {clash[0]}")
            current.append(step.instance)
            geometry.check(current, f"step {number}")
    return tuple(sorted(current))


def parse_layout(text: str, geometry: MigGeometry) -> Layout:
    """A layout written as ``PROFILE@START[,PROFILE@START...]`` (``empty`` for none), checked."""
    if text.strip() == "empty":
        return ()
    instances = []
    for part in text.split(","):
        profile, sep, start_text = part.strip().rpartition("@")
        try:
            start = int(start_text)
        except ValueError:
            start = -1
        if not sep or start < 0:
            raise ConfigError(f"bad instance '{part.strip()}' in '{text}': expected PROFILE@START")
        rule = geometry.rule(profile)
        sizes = {size for begin, size in rule.placements if begin == start}
        if not sizes:
            raise ConfigError(
                f"{profile} cannot start at {start} on {geometry.name}; "
                f"starts {sorted(begin for begin, _ in rule.placements)}"
            )
        instances.append(MigInstance(start, sizes.pop(), profile))
    return geometry.check(instances, f"layout '{text}'")


@dataclass(frozen=True)
class GpuLayouts:
    """A catalogue GPU as the planner sees it: its geometry and configurations (id, layout) in list order."""

    name: str
    geometry: MigGeometry
    configurations: tuple[tuple[int | str, Layout], ...]

    @classmethod
    def from_catalogue(cls, entry: MigGpu) -> GpuLayouts:
        """From a catalogue :class:`~wattsched.hardware.mig.MigGpu`: its profiles and configuration list."""
        rules = tuple(
            ProfileRule(p.name, p.compute, tuple(p.placements), getattr(p, "max_instances", None))
            for p in entry.profiles
        )
        geometry = MigGeometry(entry.name, entry.memory_slots, entry.compute_slices, rules)
        configurations = tuple(
            (c.ident, tuple(sorted(MigInstance(s.start, s.size, s.profile) for s in c.slices)))
            for c in entry.configurations
        )
        return cls(entry.name, geometry, configurations)

    def layout(self, text: str, option: str) -> tuple[int | str | None, Layout]:
        """(configuration id or None, layout) of a ``--from``/``--to`` value."""
        if text == NO_MIG:
            raise ConfigError(
                f"{option} no-mig: MIG disabled is a MIG mode, which wattsched never changes; "
                "plan between MIG configurations (or 'empty')"
            )
        if "@" in text or text == "empty":
            return None, parse_layout(text, self.geometry)
        for ident, layout in self.configurations:
            if str(ident) == text:
                return ident, layout
        valid = ", ".join(str(ident) for ident, _ in self.configurations)
        raise ConfigError(
            f"{option}: unknown configuration '{text}' for {self.name}; valid: {valid}, empty, "
            "or PROFILE@START,..."
        )

    def ident_of(self, layout: Layout) -> int | str | None:
        """The id of the configuration with exactly this layout, else of the first with the same counts."""
        for ident, known in self.configurations:
            if known == layout:
                return ident
        counts = layout_counts(layout)
        return next((ident for ident, known in self.configurations if layout_counts(known) == counts), None)


def layout_text(layout: Iterable[MigInstance]) -> str:
    """The inverse of :func:`parse_layout`."""
    return ",".join(str(i) for i in sorted(layout)) or "empty"


def layout_counts(layout: Iterable[MigInstance]) -> dict[str, int]:
    """Instances per profile, profiles in first-appearance order by start."""
    return dict(Counter(i.profile for i in sorted(layout)))
