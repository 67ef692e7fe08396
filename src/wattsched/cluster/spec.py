"""What a cluster run is made of: servers of catalogue GPUs, and the run's options
(docs/concepts/datacentre.md).

Everything here is a frozen, validated dataclass: the CLI builds them from its options, studies build them
directly, and :class:`~wattsched.cluster.engine.ClusterSimulation` only reads them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wattsched.errors import ConfigError
from wattsched.hardware.catalogue import DEFAULT_GPU, load_gpu
from wattsched.hardware.mig import MigGpu

__all__ = ["ClusterOptions", "ClusterSpec", "PowerStates", "ServerSpec"]

#: P2's turn-on overhead per CPU-GPU pair (90 W·slot with a 60 s slot; docs/concepts/dvfs.md), here per GPU.
P2_TURN_ON_J = 90.0 * 60.0
#: P2's slot (s): DRS turns a server off after ``idle_slots`` idle slots.
P2_SLOT_S = 60.0


@dataclass(frozen=True)
class ServerSpec:
    """One server: ``gpus`` GPUs of one catalogue entry (``gpu``: a name or a ``.toml`` path)."""

    gpu: str
    gpus: int
    name: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 1:
            raise ConfigError(f"server '{self.name}': gpus must be an integer >= 1, got {self.gpus!r}")


@dataclass(frozen=True)
class ClusterSpec:
    """Servers in order; GPU ``g`` is the ``g``-th GPU counting servers in order (heterogeneous allowed)."""

    servers: tuple[ServerSpec, ...]

    def __post_init__(self) -> None:
        if not self.servers:
            raise ConfigError("a cluster needs at least one server with at least one GPU")

    @classmethod
    def homogeneous(cls, servers: int, gpus_per_server: int, gpu: str = DEFAULT_GPU) -> ClusterSpec:
        """``servers`` servers of ``gpus_per_server`` GPUs each, all of catalogue entry ``gpu``."""
        for name, value in (("servers", servers), ("gpus per server", gpus_per_server)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        return cls(tuple(ServerSpec(gpu, gpus_per_server, f"server-{i:04d}") for i in range(servers)))

    @property
    def gpus(self) -> int:
        return sum(server.gpus for server in self.servers)

    def gpu_models(self) -> list[MigGpu]:
        """The catalogue entry of every GPU, in GPU order (each entry loaded once)."""
        loaded: dict[str, MigGpu] = {}
        out = []
        for server in self.servers:
            if server.gpu not in loaded:
                loaded[server.gpu] = load_gpu(server.gpu)
            out.extend([loaded[server.gpu]] * server.gpus)
        return out

    def server_of_gpu(self) -> list[int]:
        return [s for s, server in enumerate(self.servers) for _ in range(server.gpus)]


@dataclass(frozen=True)
class PowerStates:
    """Server power states as P2's DRS (docs/concepts/dvfs.md), per server of MIG GPUs.

    A server whose GPUs have had no job for ``idle_slots`` slots of ``slot_s`` turns off (its GPUs and host
    draw nothing); a job placed on an off server turns it on, which costs ``turn_on_j_per_gpu`` per GPU and
    takes ``turn_on_s`` (jobs wait for it). ``idle_slots=None`` derives P2's rule ``ρ = ⌊Δ / (P_idle ·
    slot)⌋`` from the server's turn-on energy Δ and idle power P_idle (GPU idle powers plus ``host_idle_w``).
    Defaults: P2's constants per GPU (Δ = 5,400 J, 60 s slot), a 60 s boot, no host power. ``enabled=False``:
    every server is on all the time (``host_idle_w`` still counts).
    """

    enabled: bool = False
    slot_s: float = P2_SLOT_S
    idle_slots: int | None = None
    turn_on_j_per_gpu: float = P2_TURN_ON_J
    turn_on_s: float = 60.0
    host_idle_w: float = 0.0

    def __post_init__(self) -> None:
        for name in ("slot_s", "turn_on_j_per_gpu", "turn_on_s", "host_idle_w"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"power states: {name} must be a finite number >= 0, got {value!r}")
        if self.slot_s <= 0:
            raise ConfigError(f"power states: slot_s must be > 0, got {self.slot_s!r}")
        if self.idle_slots is not None and (
            isinstance(self.idle_slots, bool) or not isinstance(self.idle_slots, int) or self.idle_slots < 0
        ):
            raise ConfigError(f"power states: idle_slots must be an integer >= 0, got {self.idle_slots!r}")

    def server_idle_w(self, gpus: Sequence[MigGpu]) -> float:
        """P_idle of a server of ``gpus``: their idle power in the catalogue plus ``host_idle_w``."""
        return sum(gpu.power.table(None).power_w[0] for gpu in gpus) + self.host_idle_w

    def idle_slots_for(self, idle_w: float, gpus: int) -> int:
        """ρ of a server with ``gpus`` GPUs drawing ``idle_w`` in all (host included) when idle."""
        if self.idle_slots is not None:
            return self.idle_slots
        if idle_w <= 0:
            return 0
        return math.floor(self.turn_on_j_per_gpu * gpus / (idle_w * self.slot_s) + 1e-12)


@dataclass(frozen=True)
class ClusterOptions:
    """How a cluster is run (docs/concepts/datacentre.md); every GPU runs the same options.

    * ``placement``: a name in :data:`~wattsched.cluster.placement.PLACEMENTS` (``first-fit``, ``best-fit``,
      ``least-energy``, ``deadline-aware``, ``fewest-jobs``).
    * ``partitioner``: a name in :data:`~wattsched.mig.partition.PARTITIONERS`, built once per GPU with
      ``partitioner_options``; ``static`` uses ``configuration``.
    * ``configuration``: the static partitioner's configuration and every GPU's starting one; ``None``: the
      partitioner's own initial configuration (``static``: the GPU's static role, 3 on every catalogue GPU).
    * ``policy``: the in-configuration policy of every GPU (replaces the partitioner's default scheduler).
    * ``power_states``: :class:`PowerStates`. ``clocks``: a GPU-wide clock level on GPUs with a clock table
      (:mod:`wattsched.cluster.clocks`).
    * Jobs never migrate between GPUs: once placed, a job runs on that GPU (migration is not modelled).
    * ``record_jobs``: keep per-job records (and each GPU's own result with them); ``keep_outcomes``: keep
      every job's tardiness (8 bytes a job; off for runs of millions of jobs).
    * ``compact_every``: drop finished jobs from a GPU's memory once this many (and at least as many as it
      still holds) have accumulated (0: never); results are the same either way.
    * ``repartition_s``: seconds without slices per repartition, replacing the catalogue's ``repartition_s``:
      one number for every GPU model, or one per model by catalogue name (a model not named keeps its
      own); ``None``: every model's own.
    """

    placement: str = "first-fit"
    partitioner: str = "static"
    configuration: int | str | None = None
    policy: str = "edf-ss-restricted"
    partitioner_options: Mapping[str, Any] = field(default_factory=dict)
    power_states: PowerStates = field(default_factory=PowerStates)
    clocks: bool = False
    record_jobs: bool = False
    keep_outcomes: bool = True
    compact_every: int = 512
    seed: int = 0
    repartition_s: float | Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        from wattsched.cluster.placement import PLACEMENTS
        from wattsched.mig.partition import PARTITIONERS
        from wattsched.mig.policies import POLICIES

        PLACEMENTS.make(self.placement)  # UnknownNameError lists the valid names
        if self.partitioner not in PARTITIONERS:
            PARTITIONERS.make(self.partitioner)
        if self.policy not in POLICIES:
            POLICIES.make(self.policy)
        given = self.repartition_s
        per_model = given if isinstance(given, Mapping) else {} if given is None else {"every model": given}
        for model, seconds in per_model.items():
            if isinstance(seconds, bool) or not (
                isinstance(seconds, int | float) and math.isfinite(seconds) and seconds >= 0
            ):
                raise ConfigError(f"repartition_s ({model}) must be a finite number >= 0, got {seconds!r}")
        if self.compact_every < 0:
            raise ConfigError(f"compact_every must be >= 0, got {self.compact_every}")
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
