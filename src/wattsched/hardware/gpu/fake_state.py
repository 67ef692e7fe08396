"""Fake MIG GPUs whose state lives in one JSON file that several processes share (the Slurm sandbox's GPUs).

A real GPU is one piece of state that every process on the machine sees: the controller repartitions it,
Slurm's Prolog and Epilog mark slices busy and idle, and anyone reads its energy counter. A state file plays
that part without a GPU. Every change is a read-modify-write under an exclusive ``fcntl.flock`` on the file,
committed by writing a temporary file in the same folder and renaming it over the old one, so a reader never
sees half a file and no update is lost.

The energy counter (integer millijoules, as NVML's) integrates the catalogue's power model over time: at
every change and every read of the counter it advances by ``P(busy state) × elapsed`` since the last update,
where ``P`` is exactly what the simulator draws for that busy state (the GPU's
:class:`~wattsched.hardware.power.PowerTable`, per job kind where the GPU's power model has kind curves).
Fractions of a millijoule are carried over, never lost. The clock is ``time.time`` unless one is injected.

The file (``"wattsched_fake_state": 1`` marks it; :class:`FakeStateBackend` serves it through the GPU
backend interface, as ``fake:FILE`` should for such a file)::

    {"wattsched_fake_state": 1, "seed": 0, "generation": 3, "next_serial": 4,
     "gpus": [{"catalogue": "a100-40gb", "uuid": "GPU-…", "mig_mode": true,
               "energy_mj": 123456, "energy_fraction_mj": 0.25, "updated_s": 1767225600.0,
               "next_instance_id": 4, "locked_clocks_mhz": null,
               "instances": [{"uuid": "MIG-…", "profile": "4g.20gb", "start": 0, "size": 4, "compute": 4,
                              "gpu_instance_id": 1, "kind": null | "inference" | "training"}, ...]}]}

A GPU may also carry ``"create_race": {"profile": "1g.5gb", "by": "1g.10gb"}``
(:meth:`FakeGpuState.set_create_race`): every create of that profile loses a race to another process,
which makes an idle ``by`` instance at the placement just before, so the create is refused as the placement
taken — what a real GPU shared with another MIG manager can do between a repartition's destroys and its
creates. A GPU whose server is off carries ``"powered_off": true`` (:meth:`FakeGpuState.set_powered`): it
draws nothing until it is turned on again, which adds the turn-on energy to its counter.
``catalogue`` is a catalogue name or the absolute path of a catalogue ``.toml``; ``generation`` counts the
changes to instances and busy slices (a cheap way to notice one); UUIDs are derived from the seed, so a
sandbox built twice with one seed has the same UUIDs. Command line (for Slurm's Prolog and Epilog)::

    python -m wattsched.hardware.gpu.fake_state FILE busy UUID[,UUID...] [--kind training]
    python -m wattsched.hardware.gpu.fake_state FILE idle UUID[,UUID...]
    python -m wattsched.hardware.gpu.fake_state FILE show
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from wattsched._files import publish
from wattsched.errors import ConfigError, InputError, WattschedError
from wattsched.hardware.catalogue import available, load_gpu
from wattsched.hardware.gpu.backend import (
    ClockState,
    GpuError,
    GpuIdentity,
    GpuInstance,
    GpuProcess,
    NvmlProfile,
    PowerLimits,
)
from wattsched.hardware.mig import MigGpu
from wattsched.hardware.power import PowerTable
from wattsched.mig.clock import clocked_power
from wattsched.workload.job import JobKind

__all__ = [
    "STATE_KEY",
    "FakeGpu",
    "FakeGpuState",
    "FakeInstance",
    "FakeStateBackend",
    "busy_state",
    "gres_type",
    "is_state_file",
    "main",
]

#: The top-level key (value: the format version, 1) that marks a fake-GPU state file.
STATE_KEY = "wattsched_fake_state"
_FORMAT = 1
_MAX_STATE_BYTES = 16 * 1024 * 1024
if TYPE_CHECKING:
    from wattsched.cluster.clocks import ClockSchedule

T = TypeVar("T")


@dataclass(frozen=True)
class FakeGpu:
    """One fake GPU of a state file."""

    index: int
    #: Catalogue name (or absolute path of a catalogue ``.toml``).
    catalogue: str
    #: Product name, e.g. ``NVIDIA A100-SXM4-40GB``.
    product: str
    uuid: str
    mig_mode: bool
    #: Locked (SM, memory) clocks in MHz, ``None`` when not locked.
    locked_clocks_mhz: tuple[int, int] | None = None


@dataclass(frozen=True)
class FakeInstance:
    """One MIG instance of a fake GPU; ``kind`` is the job kind running on it, ``None`` when idle."""

    uuid: str
    profile: str
    start: int
    size: int
    compute: int
    gpu_instance_id: int
    kind: JobKind | None

    @property
    def busy(self) -> bool:
        return self.kind is not None

    @property
    def label(self) -> str:
        """``profile@start``, e.g. ``2g.10gb@4``."""
        return f"{self.profile}@{self.start}"


def busy_state(table: PowerTable, busy: Iterable[tuple[int, str]]) -> int:
    """The power table's busy state of ``(compute slices, job kind)`` busy slices, as the simulator counts
    it: every busy compute slice adds its kind's state increment."""
    return sum(compute * table.kind_weight[str(kind)] for compute, kind in busy)


def gres_type(gpu: MigGpu | str, profile: str, gpu_index: int | None = None) -> str:
    """Slurm's GRES type of a slice: the GPU family (catalogue name up to its first ``-``), ``_``, the
    profile, lower case, every character outside ``[a-z0-9._]`` turned into ``_`` (``a100_3g.20gb``).

    ``gpu_index``: a node whose types name their GPU too (``gres_per_gpu``), ``_gpu`` and the index
    (``a100_3g.20gb_gpu1``): a request then names the GPU, since Slurm gives a typed request the first free
    devices of the type in its index order."""
    name = gpu if isinstance(gpu, str) else gpu.name
    family = name.split("-")[0]
    kind = re.sub(r"[^a-z0-9._]", "_", f"{family}_{profile}".lower())
    return kind if gpu_index is None else f"{kind}_gpu{gpu_index}"


def _per_gpu(data: dict[str, Any], index: int) -> int | None:
    """The GPU index its GRES types name, where the state's types name their GPU (``None`` otherwise)."""
    return index if data.get("gres_per_gpu") else None


def is_state_file(path: str | Path) -> bool:
    """Whether ``path`` is a readable JSON object carrying :data:`STATE_KEY` (a renamed-in file is always
    whole, so this needs no lock)."""
    try:
        if Path(path).stat().st_size > _MAX_STATE_BYTES:
            return False
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and STATE_KEY in data


def _uuid(prefix: str, seed: int, *parts: object) -> str:
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()[:16]
    return f"{prefix}-{uuid.UUID(bytes=digest, version=4)}"


def _catalogue_ref(gpu: MigGpu) -> str:
    """What the file stores to load ``gpu`` again: its catalogue name, else its ``.toml`` path."""
    if gpu.name in available("gpu") and load_gpu(gpu.name) == gpu:
        return gpu.name
    if gpu.path and Path(gpu.path).is_file():
        return str(Path(gpu.path).resolve())
    raise ConfigError(f"GPU '{gpu.name}' is neither a catalogue entry nor loaded from a .toml file")


def _kind(kind: JobKind | str | None) -> str | None:
    if kind is None:
        return None
    try:
        return JobKind(kind).value
    except ValueError:
        valid = ", ".join(k.value for k in JobKind)
        raise GpuError(f"unknown job kind '{kind}'; valid: {valid}, or None for idle") from None


class FakeGpuState:
    """The fake GPUs of one state file; see the module docstring. Every call reads the file afresh."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._models: dict[str, MigGpu] = {}
        self._tables: dict[str, PowerTable] = {}

    @classmethod
    def create(
        cls,
        path: str | Path,
        gpus: Sequence[tuple[str | MigGpu, int | str]],
        *,
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        gres_per_gpu: bool = False,
    ) -> FakeGpuState:
        """Write a state file (replacing any; not while others use it) of GPUs ``(catalogue name or
        MigGpu, configuration id)`` in MIG mode, each with one idle instance per slice of its configuration
        and its counter at 0 mJ; ``gres_per_gpu``: its GRES types name their GPU (:func:`gres_type`)."""
        if not gpus:
            raise ConfigError("a fake GPU state needs at least one (GPU, configuration)")
        now = clock()
        data: dict[str, Any] = {
            STATE_KEY: _FORMAT,
            "seed": seed,
            "generation": 0,
            "next_serial": 0,
            "gres_per_gpu": bool(gres_per_gpu),
            "gpus": [],
        }
        for index, (name, ident) in enumerate(gpus):
            gpu = load_gpu(name)
            configuration = gpu.configuration(ident)
            if not configuration.mig_enabled:
                raise ConfigError(f"GPU {index}: the fake state holds MIG GPUs; '{ident}' has MIG off")
            raw: dict[str, Any] = {
                "catalogue": _catalogue_ref(gpu),
                "uuid": _uuid("GPU", seed, "gpu", index),
                "mig_mode": True,
                "energy_mj": 0,
                "energy_fraction_mj": 0.0,
                "updated_s": now,
                "next_instance_id": 1,
                "locked_clocks_mhz": None,
                "instances": [],
            }
            data["gpus"].append(raw)
            for piece in configuration.slices:
                _add_instance(data, index, piece.profile, piece.start, piece.size, piece.compute)
        state = cls(path, clock)
        state._write(data)
        return state

    # ------------------------------------------------------------------ reading
    def gpus(self) -> list[FakeGpu]:
        with self._locked(exclusive=False) as data:
            return [_fact(index, raw, self._model(raw)) for index, raw in enumerate(data["gpus"])]

    def fact(self, gpu_index: int) -> FakeGpu:
        """The facts of GPU ``gpu_index``."""
        with self._locked(exclusive=False) as data:
            raw = _gpu_at(data, gpu_index)
            return _fact(gpu_index, raw, self._model(raw))

    def gpu(self, gpu_index: int) -> MigGpu:
        """The catalogue entry of GPU ``gpu_index``."""
        with self._locked(exclusive=False) as data:
            return self._model(_gpu_at(data, gpu_index))

    def instances(self, gpu_index: int) -> tuple[FakeInstance, ...]:
        with self._locked(exclusive=False) as data:
            return _instances(_gpu_at(data, gpu_index))

    def gres_per_gpu(self) -> bool:
        """Whether the GPUs' GRES types name their GPU (:func:`gres_type`)."""
        with self._locked(exclusive=False) as data:
            return bool(data.get("gres_per_gpu"))

    def gres_type(self, gpu_index: int, profile: str) -> str:
        """The GRES type of a slice of ``profile`` on GPU ``gpu_index`` as this state names types."""
        with self._locked(exclusive=False) as data:
            return gres_type(self._model(_gpu_at(data, gpu_index)), profile, _per_gpu(data, gpu_index))

    def generation(self) -> int:
        """How many changes (instances, busy slices) the file has seen."""
        with self._locked(exclusive=False) as data:
            return int(data["generation"])

    def energy_mj(self, gpu_index: int) -> int:
        """The energy counter of GPU ``gpu_index`` in mJ, advanced to now."""
        return self._transaction(lambda data: int(_gpu_at(data, gpu_index)["energy_mj"]), change=False)

    def powered(self) -> bool:
        """Whether the GPUs' server is on (every GPU of the file is on or off together)."""
        with self._locked(exclusive=False) as data:
            return not any(raw.get("powered_off") for raw in data["gpus"])

    def power_w(self, gpu_index: int) -> float:
        """The power the model draws in GPU ``gpu_index``'s busy state now (0 W while off)."""
        with self._locked(exclusive=False) as data:
            return self._power_w(_gpu_at(data, gpu_index))

    def as_json(self) -> dict[str, Any]:
        """Everything at one instant (counters advanced to now), as ``show`` prints it."""

        def view(data: dict[str, Any]) -> dict[str, Any]:
            gpus = []
            for index, raw in enumerate(data["gpus"]):
                keys = ("catalogue", "uuid", "mig_mode", "energy_mj", "updated_s", "locked_clocks_mhz")
                gpus.append(
                    {"index": index, **{k: raw[k] for k in keys}, "power_w": self._power_w(raw)}
                    | {"instances": [dict(item) for item in raw["instances"]]}
                )
            return {"generation": data["generation"], "gpus": gpus}

        return self._transaction(view, change=False)

    # ------------------------------------------------------------------ changing
    def set_busy(
        self, uuids: str | Sequence[str], kind: JobKind | str | None, *, job: str | None = None
    ) -> None:
        """Mark instances busy running a job of ``kind`` (``None``: idle); all or nothing. ``job``: the
        job's id, kept on each instance it makes busy (:meth:`release_job`)."""
        wanted = [uuids] if isinstance(uuids, str) else list(uuids)
        value = _kind(kind)

        def change(data: dict[str, Any]) -> None:
            found = {item["uuid"]: item for raw in data["gpus"] for item in raw["instances"]}
            unknown = [u for u in wanted if u not in found]
            if unknown:
                raise GpuError(
                    f"no MIG instance with UUID {', '.join(unknown)} in {self.path}; nothing changed"
                )
            for key in wanted:
                found[key]["kind"] = value
                found[key]["job"] = job if value is not None else None

        self._transaction(change)

    def release_job(self, job: str) -> list[str]:
        """Mark idle every instance busy with job ``job`` (:meth:`set_busy`); their UUIDs."""

        def change(data: dict[str, Any]) -> list[str]:
            freed = []
            for raw in data["gpus"]:
                for item in raw["instances"]:
                    if item.get("job") == job and item.get("kind") is not None:
                        item["kind"] = item["job"] = None
                        freed.append(str(item["uuid"]))
            return freed

        return self._transaction(change)

    def create_instance(self, gpu_index: int, profile: str, start: int) -> FakeInstance:
        """Create an idle instance of ``profile`` (catalogue name) at placement ``start``; with a create race
        set for ``profile`` (:meth:`set_create_race`), another process's instance is made there first."""

        def change(data: dict[str, Any]) -> FakeInstance | str:
            raw = _gpu_at(data, gpu_index)
            gpu = self._model(raw)
            if not raw["mig_mode"]:
                raise GpuError(f"GPU {gpu_index}: MIG mode is off; cannot create a GPU instance")
            race = raw.get("create_race")
            raced = False
            if race is not None and race["profile"] == profile:
                taker = gpu.profile(race["by"])
                if _refusal(gpu_index, raw, gpu, taker.name, start) is None:
                    _add_instance(data, gpu_index, taker.name, start, taker.memory_slots, taker.compute)
                    raced = True
            refused = _refusal(gpu_index, raw, gpu, profile, start)
            if refused is None:
                chosen = gpu.profile(profile)
                return _add_instance(data, gpu_index, profile, start, chosen.memory_slots, chosen.compute)
            if raced:
                return refused  # the other process's instance is kept: the file is written
            raise GpuError(refused)

        made = self._transaction(change)
        if isinstance(made, str):
            raise GpuError(made)
        return made

    def set_create_race(self, gpu_index: int, profile: str | None, by: str | None = None) -> None:
        """Make every later create of ``profile`` on GPU ``gpu_index`` lose a race to another process,
        which creates an idle ``by`` instance at the same placement just before (when it fits there): the
        create is refused as the placement taken, as NVML's is. ``profile=None`` ends the race."""

        def change(data: dict[str, Any]) -> None:
            raw = _gpu_at(data, gpu_index)
            if profile is None:
                raw.pop("create_race", None)
                return
            gpu = self._model(raw)
            try:
                names = [gpu.profile(name).name for name in (profile, by or "")]
            except ConfigError as exc:
                raise GpuError(f"GPU {gpu_index}: {exc}") from None
            raw["create_race"] = {"profile": names[0], "by": names[1]}

        self._transaction(change, change=False)

    def destroy_instance(self, gpu_index: int, instance_uuid: str) -> None:
        """Destroy an idle instance; a busy one is refused ("in use")."""

        def change(data: dict[str, Any]) -> None:
            raw = _gpu_at(data, gpu_index)
            for position, item in enumerate(raw["instances"]):
                if item["uuid"] == instance_uuid:
                    if item["kind"] is not None:
                        raise GpuError(
                            f"GPU {gpu_index}: {item['profile']}@{item['start']} ({instance_uuid}) is in use "
                            f"by a {item['kind']} job (NVML: In Use); nothing changed"
                        )
                    del raw["instances"][position]
                    return
            raise GpuError(f"GPU {gpu_index}: no MIG instance with UUID {instance_uuid}")

        self._transaction(change)

    def set_powered(self, on: bool, *, turn_on_j_per_gpu: float = 0.0) -> None:
        """Turn the GPUs' server off (each GPU then draws nothing) or on; turning on a server that was off
        adds ``turn_on_j_per_gpu`` to every GPU's counter (the energy of booting it, as the data-centre
        simulator charges it)."""
        if not math.isfinite(turn_on_j_per_gpu) or turn_on_j_per_gpu < 0:
            raise GpuError(f"turn-on energy must be a number of J >= 0, got {turn_on_j_per_gpu!r}")

        def change(data: dict[str, Any]) -> None:
            for raw in data["gpus"]:
                if on and raw.get("powered_off"):
                    total = float(raw["energy_fraction_mj"]) + turn_on_j_per_gpu * 1000.0
                    whole = math.floor(total + 1e-6)
                    raw["energy_mj"] = int(raw["energy_mj"]) + whole
                    raw["energy_fraction_mj"] = max(total - whole, 0.0)
                raw["powered_off"] = not on

        self._transaction(change)

    def set_locked_clocks(self, gpu_index: int, clocks_mhz: tuple[int, int] | None) -> None:
        """Record locked (SM, memory) clocks, ``None`` to reset. From then on the GPU's busy power above
        idle follows the level of its clock table nearest the SM clock, as the simulator's does
        (:func:`wattsched.mig.clock.clocked_power`); :meth:`speed` gives the jobs' speed there."""

        def change(data: dict[str, Any]) -> None:
            _gpu_at(data, gpu_index)["locked_clocks_mhz"] = None if clocks_mhz is None else list(clocks_mhz)

        self._transaction(change, change=False)

    # ------------------------------------------------------------------ Slurm
    def fake_gpus_conf(
        self,
        *,
        device_file: str = "/dev/fakegpu{n}",
        cpu_count: int = 2,
        cpu_range: str = "0-1",
        flags: str = "nvidia_gpu_env",
    ) -> list[str]:
        """The lines of Slurm's ``fake_gpus.conf``, one per MIG instance (GPU order, then placement):
        ``<gres type>|<system cpu count>|<cpu range>|(null)|<device file>|<MIG uuid>|<flags>``.
        ``device_file`` is a pattern: ``{n}`` is the line's number from 0 (Slurm needs a trailing number)."""
        lines: list[str] = []
        with self._locked(exclusive=False) as data:
            for index, raw in enumerate(data["gpus"]):
                for item in _instances(raw):
                    path = device_file.format(n=len(lines))
                    kind = gres_type(self._model(raw), item.profile, _per_gpu(data, index))
                    lines.append(f"{kind}|{cpu_count}|{cpu_range}|(null)|{path}|{item.uuid}|{flags}")
        return lines

    def gres_line(self) -> str:
        """The value of ``Gres=`` on slurm.conf's node line: ``gpu:<type>:<count>,...`` (first-seen order)."""
        counts: dict[str, int] = {}
        with self._locked(exclusive=False) as data:
            for index, raw in enumerate(data["gpus"]):
                for item in _instances(raw):
                    kind = gres_type(self._model(raw), item.profile, _per_gpu(data, index))
                    counts[kind] = counts.get(kind, 0) + 1
        return ",".join(f"gpu:{kind}:{count}" for kind, count in counts.items())

    # ------------------------------------------------------------------ file and power
    def _model(self, raw: dict[str, Any]) -> MigGpu:
        ref = str(raw["catalogue"])
        if ref not in self._models:
            self._models[ref] = load_gpu(ref)
        return self._models[ref]

    def speed(self, gpu_index: int) -> float:
        """How fast jobs run on GPU ``gpu_index`` at its locked SM clock, relative to its default clock
        (1.0 when unlocked, or when the catalogue has no clock table for it)."""
        with self._locked(exclusive=False) as data:
            level = self._clock_level(_gpu_at(data, gpu_index))
        return 1.0 if level is None else level[0].speed[level[1]]

    def _clock_level(self, raw: dict[str, Any]) -> tuple[ClockSchedule, int] | None:
        locked = raw.get("locked_clocks_mhz")
        if not locked:
            return None
        from wattsched.cluster.clocks import clock_schedule

        schedule = clock_schedule(self._model(raw))
        return None if schedule is None else (schedule, schedule.level_of(float(locked[0])))

    def _power_w(self, raw: dict[str, Any]) -> float:
        if raw.get("powered_off"):
            return 0.0
        ref = str(raw["catalogue"])
        if ref not in self._tables:  # the simulator's default selection: per job kind where the GPU has kinds
            self._tables[ref] = self._model(raw).power.table()
        table = self._tables[ref]
        busy = [(item.compute, item.kind.value) for item in _instances(raw) if item.kind is not None]
        watts = table.power_w[busy_state(table, busy)]
        level = self._clock_level(raw)
        if level is None:
            return watts
        schedule, index = level
        return clocked_power(watts, table.power_w[0], schedule.power_scale[index])

    def _advance(self, raw: dict[str, Any], now_s: float) -> None:
        last_s = float(raw["updated_s"])
        total = float(raw["energy_fraction_mj"]) + self._power_w(raw) * max(now_s - last_s, 0.0) * 1000.0
        whole = math.floor(total + 1e-6)  # float rounding of whole joules must not lose a millijoule
        raw["energy_mj"] = int(raw["energy_mj"]) + whole
        raw["energy_fraction_mj"] = max(total - whole, 0.0)
        raw["updated_s"] = max(now_s, last_s)  # a clock stepping back never runs the counter backwards

    def _transaction(self, body: Callable[[dict[str, Any]], T], *, change: bool = True) -> T:
        """Advance every counter to now, run ``body`` on the data, write it back; all under the lock."""
        with self._locked(exclusive=True) as data:
            now_s = self._clock()
            for raw in data["gpus"]:
                self._advance(raw, now_s)
            result = body(data)
            if change:
                data["generation"] = int(data["generation"]) + 1
            self._write(data)
            return result

    @contextmanager
    def _locked(self, *, exclusive: bool) -> Iterator[dict[str, Any]]:
        while True:
            try:
                handle = open(self.path, "rb")  # noqa: SIM115 - held open across the yield
            except OSError as exc:
                raise InputError(f"cannot open fake GPU state: {exc.strerror}", path=str(self.path)) from None
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                current = os.stat(self.path).st_ino == os.fstat(handle.fileno()).st_ino
            except OSError:
                current = False
            if current:
                break
            handle.close()  # someone renamed a new file in while we waited: lock that one
        with handle:
            yield _parse(handle.read(_MAX_STATE_BYTES + 1), str(self.path))

    def _write(self, data: dict[str, Any]) -> None:
        folder = self.path.parent
        mode = self.path.stat().st_mode & 0o777 if self.path.exists() else None
        with tempfile.NamedTemporaryFile(
            "w", dir=folder, prefix=f".{self.path.name}.", suffix=".tmp", delete=False, encoding="utf-8"
        ) as temporary:
            try:
                json.dump(data, temporary, indent=1)
                temporary.flush()
                os.fsync(temporary.fileno())
            except BaseException:
                os.unlink(temporary.name)
                raise
        if mode is None:  # a new file: the user's default mode
            publish(temporary.name, self.path)
            return
        os.chmod(temporary.name, mode)
        os.replace(temporary.name, self.path)


def _parse(raw: bytes, where: str) -> dict[str, Any]:
    if len(raw) > _MAX_STATE_BYTES:
        raise InputError(f"fake GPU state is over {_MAX_STATE_BYTES:,} bytes", path=where)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"fake GPU state is not valid JSON ({exc})", path=where) from None
    if not isinstance(data, dict) or data.get(STATE_KEY) != _FORMAT:
        raise InputError(f'not a fake GPU state file (needs "{STATE_KEY}": {_FORMAT})', path=where)
    if not isinstance(data.get("gpus"), list) or not all(isinstance(g, dict) for g in data["gpus"]):
        raise InputError("fake GPU state: 'gpus' must be a list of objects", path=where)
    return data


def _fact(index: int, raw: dict[str, Any], gpu: MigGpu) -> FakeGpu:
    locked = raw.get("locked_clocks_mhz")
    clocks = None if locked is None else (int(locked[0]), int(locked[1]))
    return FakeGpu(index, str(raw["catalogue"]), gpu.product, str(raw["uuid"]), bool(raw["mig_mode"]), clocks)


def _gpu_at(data: dict[str, Any], gpu_index: int) -> dict[str, Any]:
    gpus: list[dict[str, Any]] = data["gpus"]
    if isinstance(gpu_index, bool) or not 0 <= gpu_index < len(gpus):
        raise GpuError(f"no fake GPU with index {gpu_index} (there are {len(gpus)}: 0..{len(gpus) - 1})")
    return gpus[gpu_index]


def _instances(raw: dict[str, Any]) -> tuple[FakeInstance, ...]:
    try:
        found = [
            FakeInstance(
                str(item["uuid"]),
                str(item["profile"]),
                int(item["start"]),
                int(item["size"]),
                int(item["compute"]),
                int(item["gpu_instance_id"]),
                None if item["kind"] is None else JobKind(item["kind"]),
            )
            for item in raw["instances"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"fake GPU state: malformed instance ({type(exc).__name__}: {exc})") from None
    return tuple(sorted(found, key=lambda i: (i.start, i.gpu_instance_id)))


def _add_instance(
    data: dict[str, Any], gpu_index: int, profile: str, start: int, size: int, compute: int
) -> FakeInstance:
    raw = data["gpus"][gpu_index]
    serial = int(data["next_serial"])
    instance = FakeInstance(
        _uuid("MIG", int(data["seed"]), "mig", gpu_index, serial),
        profile,
        start,
        size,
        compute,
        int(raw["next_instance_id"]),
        None,
    )
    data["next_serial"] = serial + 1
    raw["next_instance_id"] = instance.gpu_instance_id + 1
    item = {
        "uuid": instance.uuid,
        "profile": profile,
        "start": start,
        "size": size,
        "compute": compute,
        "gpu_instance_id": instance.gpu_instance_id,
        "kind": None,
    }
    raw["instances"].append(item)
    return instance


def _refusal(gpu_index: int, raw: dict[str, Any], gpu: MigGpu, profile: str, start: int) -> str | None:
    """Why NVML would refuse to create ``profile`` at ``start`` on the GPU ``raw``; ``None``: it would not."""
    try:
        chosen = gpu.profile(profile)
    except ConfigError as exc:
        return f"GPU {gpu_index}: {exc}"
    if (start, chosen.memory_slots) not in chosen.placements:
        return (
            f"GPU {gpu_index}: {profile} cannot be placed at {start} (placements {list(chosen.placements)})"
        )
    existing = _instances(raw)
    for other in existing:
        if start < other.start + other.size and other.start < start + chosen.memory_slots:
            return (
                f"GPU {gpu_index}: {profile}@{start} overlaps {other.label} ({other.uuid}); "
                "placement taken (NVML: Insufficient Resources)"
            )
    used = sum(other.compute for other in existing)
    if used + chosen.compute > gpu.compute_slices:
        return (
            f"GPU {gpu_index}: {profile} needs {chosen.compute} compute slices, "
            f"{gpu.compute_slices - used} are free (NVML: Insufficient Resources)"
        )
    if sum(other.profile == profile for other in existing) >= chosen.max_instances:
        return f"GPU {gpu_index}: at most {chosen.max_instances} instance(s) of {profile}"
    return None


class FakeStateBackend:
    """The GPU backend interface over a state file (what ``fake:FILE`` opens when FILE is one).

    Read live under the lock at every call. NVML facts the catalogue lacks are filled plainly: driver
    ``fake``, profile index = the profile's position in the catalogue entry, one process (pid 0) on every
    busy instance, power limits from the entry's clocks (else its power cap). Changes are allowed (whoever may
    write the file owns the fake GPU).
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.name = f"fake:{path}"
        self.state = FakeGpuState(path, clock)
        self.state.gpus()  # fail now on a missing or malformed file

    def device_count(self) -> int:
        return len(self.state.gpus())

    def identity(self, index: int) -> GpuIdentity:
        gpu = self.state.gpu(index)
        return GpuIdentity(index, gpu.product, "fake", gpu.memory_mb * 1024 * 1024, gpu.sms)

    def mig_mode(self, index: int) -> tuple[bool, bool]:
        mode = self.state.fact(index).mig_mode
        return mode, mode

    def profiles(self, index: int) -> tuple[NvmlProfile, ...]:
        return tuple(
            NvmlProfile(
                number, p.nvml_id, p.name, p.compute, p.sms, p.memory_mb, p.max_instances, p.placements
            )
            for number, p in enumerate(self.state.gpu(index).profiles)
        )

    def gpu_instances(self, index: int) -> tuple[GpuInstance, ...]:
        ids = {p.name: p.nvml_id for p in self.state.gpu(index).profiles}
        return tuple(
            GpuInstance(i.gpu_instance_id, ids[i.profile], i.start, i.size, (0,))
            for i in self.state.instances(index)
        )

    def create_gpu_instance(self, index: int, profile_id: int, start: int) -> GpuInstance:
        names = {p.nvml_id: p.name for p in self.state.gpu(index).profiles}
        if profile_id not in names:
            raise GpuError(f"GPU {index}: no GPU-instance profile with id {profile_id}")
        made = self.state.create_instance(index, names[profile_id], start)
        return GpuInstance(made.gpu_instance_id, profile_id, made.start, made.size, (0,))

    def destroy_gpu_instance(self, index: int, instance_id: int) -> None:
        for instance in self.state.instances(index):
            if instance.gpu_instance_id == instance_id:
                self.state.destroy_instance(index, instance.uuid)
                return
        raise GpuError(f"GPU {index}: no GPU instance with id {instance_id}")

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        return tuple(GpuProcess(0, i.gpu_instance_id, 0) for i in self.state.instances(index) if i.busy)

    def supported_clocks_mhz(self, index: int) -> dict[int, tuple[int, ...]]:
        clocks = self.state.gpu(index).clocks
        if clocks is None:
            return {}
        return {mem: tuple(sorted(clocks.sm_mhz, reverse=True)) for mem in clocks.mem_mhz}

    def clocks(self, index: int) -> ClockState:
        clocks = self.state.gpu(index).clocks
        if clocks is None:
            return ClockState(0, 0, 0, 0, 0, 0)
        locked = self.state.fact(index).locked_clocks_mhz
        sm_now, mem_now = locked or (clocks.default_sm_mhz, clocks.default_mem_mhz)
        return ClockState(
            sm_now,
            mem_now,
            max(clocks.sm_mhz),
            max(clocks.mem_mhz),
            clocks.default_sm_mhz,
            clocks.default_mem_mhz,
        )

    def set_locked_clocks(self, index: int, sm_mhz: int, mem_mhz: int) -> None:
        if sm_mhz not in self.supported_clocks_mhz(index).get(mem_mhz, ()):
            raise GpuError(f"GPU {index}: {sm_mhz} MHz at memory {mem_mhz} MHz is not a supported clock pair")
        self.state.set_locked_clocks(index, (sm_mhz, mem_mhz))

    def reset_clocks(self, index: int) -> None:
        self.state.set_locked_clocks(index, None)

    def power_limits(self, index: int) -> PowerLimits:
        gpu = self.state.gpu(index)
        if gpu.clocks is not None:
            c = gpu.clocks
            return PowerLimits(c.power_limit_min_w, c.power_limit_max_w, c.power_limit_w, c.power_limit_w)
        cap_w = gpu.power.cap_w if gpu.power.cap_w is not None else max(gpu.power.curve().busy_w)
        return PowerLimits(cap_w, cap_w, cap_w, cap_w)

    def power_w(self, index: int) -> float:
        return self.state.power_w(index)

    def energy_j(self, index: int) -> float | None:
        return self.state.energy_mj(index) / 1000.0

    def privileged(self) -> bool:
        return True

    def close(self) -> None:
        pass


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """``FILE busy UUID[,UUID...] [--kind K]`` | ``FILE idle UUID[,...]`` | ``FILE show`` (prints JSON)."""
    parser = _OneLineParser(prog="python -m wattsched.hardware.gpu.fake_state", description=main.__doc__)
    parser.add_argument("file")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    busy = commands.add_parser("busy")
    busy.add_argument("uuids")
    busy.add_argument("--kind", choices=[k.value for k in JobKind], default=JobKind.INFERENCE.value)
    commands.add_parser("idle").add_argument("uuids")
    commands.add_parser("show")
    args = parser.parse_args(argv)
    state = FakeGpuState(args.file)
    try:
        if args.command == "show":
            sys.stdout.write(json.dumps(state.as_json(), indent=1) + "\n")
            return 0
        uuids = [u for u in args.uuids.split(",") if u]
        if not uuids:
            raise GpuError("no UUID given")
        state.set_busy(uuids, args.kind if args.command == "busy" else None)
    except (WattschedError, OSError) as exc:
        sys.stderr.write(f"{parser.prog}: {' '.join(str(exc).split())}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
