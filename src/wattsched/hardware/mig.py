"""A MIG-capable GPU as data: profiles, derived configurations, power model and clocks
(docs/howto/add-gpu.md).

Catalogue entries live in ``hardware/data/gpus/<name>.toml`` and are loaded by
:func:`wattsched.hardware.catalogue.load` (``load("gpu", "h200-141gb")`` or a path). Configurations are
*derived*: :attr:`MigGpu.configurations` is the entry's named list (A100-40GB: P1's 1–12), each given as
profile names and placed by :func:`wattsched.hardware.partitions.place`, or, without a named list, every
maximal placement-valid partition numbered 1..N. Adding a GPU means adding a TOML file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from wattsched.errors import ConfigError
from wattsched.hardware.partitions import Placement, enumerate_partitions, place
from wattsched.hardware.power import PowerModel
from wattsched.hardware.profiles import NO_MIG, Configuration, InstanceProfile, Slice

__all__ = ["NO_MIG", "Clocks", "Configuration", "InstanceProfile", "MigGpu", "Slice", "default_gpu"]


@dataclass(frozen=True)
class Clocks:
    """Supported clocks and power limits (NVML read-outs, or public figures marked in the entry)."""

    sm_mhz: tuple[int, ...]
    mem_mhz: tuple[int, ...]
    default_sm_mhz: int
    default_mem_mhz: int
    power_limit_w: float
    power_limit_min_w: float
    power_limit_max_w: float


@dataclass(frozen=True)
class MigGpu:
    """A MIG GPU of the catalogue; see the module docstring."""

    #: Catalogue name, e.g. ``a100-40gb``.
    name: str
    #: Product name, e.g. ``NVIDIA A100-SXM4-40GB``.
    product: str
    compute_slices: int
    memory_slots: int
    memory_mb: int
    sms: int
    repartition_s: float
    profiles: tuple[InstanceProfile, ...]
    #: Named configurations as ``(id, profile names or name@start, description)``; empty: derive them all.
    named: tuple[tuple[int, tuple[str, ...], str], ...]
    power: PowerModel
    clocks: Clocks | None
    #: Configurations named by role (``static``, ``day``, ``night``, ``initial``): P1's choices on its GPU,
    # the
    #: same shapes on the others; partitioners built without an explicit configuration use these.
    roles: tuple[tuple[str, int | str], ...]
    #: Linear jobs run this much faster on the MIG-disabled GPU than on the largest slice (P1: 6 %).
    full_gpu_speedup: float
    sources: tuple[str, ...]
    path: str = field(default="", compare=False)

    # ------------------------------------------------------------------ derived facts
    @cached_property
    def compute_sizes(self) -> tuple[int, ...]:
        """Distinct compute sizes of the profiles, ascending: the job durations a run needs."""
        return tuple(sorted({p.compute for p in self.profiles}))

    @property
    def full_gpu_index(self) -> int:
        """Index of the MIG-disabled run time in a job's resolved durations (one past the compute sizes)."""
        return len(self.compute_sizes)

    def profile(self, name: str) -> InstanceProfile:
        for profile in self.profiles:
            if profile.name == name:
                return profile
        raise ConfigError(
            f"unknown profile '{name}' on {self.name}; valid: {', '.join(p.name for p in self.profiles)}"
        )

    def make_slices(self, placed: tuple[Placement, ...]) -> tuple[Slice, ...]:
        index = {g: i for i, g in enumerate(self.compute_sizes)}
        slices = []
        for name, start, size in sorted(placed, key=lambda p: p[1]):
            profile = self.profile(name)
            slices.append(Slice(name, profile.compute, start, size, profile.sms, index[profile.compute]))
        return tuple(slices)

    @cached_property
    def derived_placements(self) -> tuple[tuple[Placement, ...], ...]:
        """Every maximal placement-valid partition without media profiles (see :mod:`.partitions`)."""
        return tuple(enumerate_partitions(self.profiles, self.compute_slices, self.memory_slots))

    @cached_property
    def configurations(self) -> tuple[Configuration, ...]:
        """The GPU's configuration list, ids as ``wattsched mig configs --gpu`` prints them."""
        if not self.named:
            return tuple(
                Configuration(i + 1, self.make_slices(p)) for i, p in enumerate(self.derived_shapes())
            )
        return tuple(self.build_named(ident, names, description) for ident, names, description in self.named)

    def build_named(self, ident: int, names: tuple[str, ...], description: str = "") -> Configuration:
        """A configuration from profile names (placed canonically) or ``name@start`` entries (as given)."""
        explicit = [n for n in names if "@" in n]
        if explicit and len(explicit) != len(names):
            raise ConfigError(f"configuration {ident}: give every slice as name@start or none")
        if explicit:
            placed = []
            for entry in names:
                name, _, start = entry.partition("@")
                try:
                    placed.append((name, int(start), self.profile(name).memory_slots))
                except ValueError:
                    raise ConfigError(f"configuration {ident}: bad start in '{entry}'") from None
            return Configuration(ident, self.make_slices(tuple(placed)), description)
        placed_canonical = place(names, self.profiles, self.compute_slices, self.memory_slots)
        return Configuration(ident, self.make_slices(placed_canonical), description)

    def derived_shapes(self) -> list[tuple[Placement, ...]]:
        """One placement per distinct multiset of profiles among :attr:`derived_placements` (the canonical
        one),
        ordered by number of slices, then largest slices first."""
        shapes: dict[tuple[str, ...], tuple[Placement, ...]] = {}
        for placed in self.derived_placements:
            key = tuple(sorted(name for name, _, _ in placed))
            if key not in shapes:
                shapes[key] = place(key, self.profiles, self.compute_slices, self.memory_slots)

        def order(
            item: tuple[tuple[str, ...], tuple[Placement, ...]],
        ) -> tuple[int, list[int], tuple[str, ...]]:
            computes = sorted((self.profile(n).compute for n in item[0]), reverse=True)
            return len(item[0]), [-c for c in computes], item[0]

        return [placed for _, placed in sorted(shapes.items(), key=order)]

    @cached_property
    def full_gpu(self) -> Configuration:
        """The MIG-disabled GPU: one device of all compute slices, running jobs at their full-GPU duration."""
        return Configuration(
            NO_MIG, (Slice("full", self.compute_slices, 0, self.memory_slots, self.sms, self.full_gpu_index),)
        )

    @property
    def configuration_ids(self) -> tuple[int | str, ...]:
        return tuple(c.ident for c in self.configurations)

    def configuration(self, ident: int | str | Configuration) -> Configuration:
        """The configuration with id ``ident`` (a number from the list, its string, or ``"no-mig"``)."""
        if isinstance(ident, Configuration):
            return ident
        if ident == NO_MIG:
            return self.full_gpu
        key: int | str = ident
        if isinstance(ident, str):
            try:
                key = int(ident)
            except ValueError:
                key = ident
        for config in self.configurations:
            if config.ident == key:
                return config
        valid = [str(c.ident) for c in self.configurations] + [NO_MIG]
        raise ConfigError(f"unknown configuration '{ident}' for {self.name}; valid: {', '.join(valid)}")

    def role(self, name: str) -> int | str:
        """The configuration id the entry names for ``name`` (see :attr:`roles`)."""
        for role, ident in self.roles:
            if role == name:
                return ident
        raise ConfigError(
            f"{self.name} names no '{name}' configuration (its [roles]: "
            f"{', '.join(r for r, _ in self.roles) or 'none'}); give a configuration id"
        )

    def power_w(self, busy_units: int) -> float:
        """Watts with ``busy_units`` busy compute slices on the default curve (capped)."""
        return self.power.power(busy_units)


def default_gpu() -> MigGpu:
    """P1's A100-40GB (the catalogue's default entry)."""
    from wattsched.hardware.catalogue import DEFAULT_GPU, load

    gpu = load("gpu", DEFAULT_GPU)
    assert isinstance(gpu, MigGpu)
    return gpu
