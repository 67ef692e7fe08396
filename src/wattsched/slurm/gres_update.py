"""Bring a node's GRES files to the MIG instances its GPUs hold now: the one rule for numbering the devices
of a node with fake GPUs, shared by the sandbox (at start and after a repartition) and the controller.

A fake GPU node (the sandbox) lists its devices in ``fake_gpus.conf`` beside ``slurm.conf``, one line per MIG
instance, and names them by type on the node line's ``Gres=``. Devices are numbered grouped by GRES type in
first-seen order (GPU, then placement), the node line's order, so that Slurm's device index order is the same
whether it sorts by type or by device file; a device ``N`` is the character device file ``DIR/dev/fakegpuN``
(or ``/dev/wattsched-<tag>-fakegpuN`` where ``DIR`` cannot hold device files). A real node's ``gres.conf``
lines come from :func:`wattsched.slurm.gres.node_gres`.

A many-node sandbox runs one slurmd per node on one host. Slurm reads ``fake_gpus.conf`` from the folder of
the ``SLURM_CONF`` a slurmd runs with, so each node's slurmd runs with ``SLURM_CONF=nodes/<node>/slurm.conf``
beside the sandbox's ``slurm.conf`` (a link to it: every daemon reads the same settings) and finds its own
``nodes/<node>/fake_gpus.conf`` there (:data:`NODE_FOLDER`); its devices are ``DIR/dev/<node>/fakegpuN``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from wattsched.errors import InputError
from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type
from wattsched.hardware.mig import MigGpu

__all__ = [
    "NODE_FOLDER",
    "SPARE_TYPE",
    "FakeDevice",
    "device_order",
    "device_uuids",
    "fake_devices",
    "fake_gpus_path",
    "gres_spec",
    "node_cpus",
    "rewrite_node_gres",
    "spare_count",
    "visible_uuids",
    "write_fake_gres",
]

_NVIDIA_MAJOR = 195
#: The GRES type of a spare device (no MIG instance behind it; the controller never asks for it).
SPARE_TYPE = "spare"
#: The folder beside ``slurm.conf`` that holds each node's own ``SLURM_CONF`` link and ``fake_gpus.conf`` in a
#: many-node sandbox (module docstring).
NODE_FOLDER = "nodes"
#: A fake device line: ``(MIG UUID, GRES type, device file)``.
FakeDevice = tuple[str, str, str]


def device_order(
    layouts: Sequence[tuple[MigGpu | str, Sequence[str]]], *, per_gpu: bool = False
) -> list[tuple[int, str]]:
    """Slurm's device index order of a node's MIG instances: ``(GPU index, profile@start)`` grouped by GRES
    type in first-seen order (GPU, then placement), placement order within a type. ``layouts``: each GPU
    (catalogue entry or name) with its instances as ``profile@start`` in placement order; ``per_gpu``: the
    node's types name their GPU (so no type spans two GPUs).

    Slurm numbers a node's devices type by type in the node line's order, whatever order the device lines
    come in (seen on 22.05): a repartition that changes the count of a type moves the indices of every
    device of a later type, on every GPU of the node."""
    found = []
    for index, (gpu, labels) in enumerate(layouts):
        for label in labels:
            found.append(((index, label), gres_type(gpu, label.split("@")[0], index if per_gpu else None)))
    order = {kind: n for n, kind in enumerate(dict.fromkeys(kind for _, kind in found))}
    found.sort(key=lambda item: order[item[1]])  # stable: GPU then placement order within a type
    return [key for key, _ in found]


def _ordered(state: FakeGpuState) -> list[tuple[str, str]]:
    gpus = state.gpus()
    instances = [state.instances(index) for index in range(len(gpus))]
    layouts = [(gpu.catalogue, [i.label for i in found]) for gpu, found in zip(gpus, instances, strict=True)]
    uuid = {(index, i.label): i.uuid for index, found in enumerate(instances) for i in found}
    per_gpu = state.gres_per_gpu()
    kind = {
        (index, i.label): gres_type(gpus[index].catalogue, i.profile, index if per_gpu else None)
        for index, found in enumerate(instances)
        for i in found
    }
    return [(uuid[key], kind[key]) for key in device_order(layouts, per_gpu=per_gpu)]


def spare_count(state: FakeGpuState) -> int:
    """The device count a node keeps through every repartition: each GPU's compute slices (no layout has
    more instances than that)."""
    return sum(state.gpu(index).compute_slices for index in range(len(state.gpus())))


def node_cpus(state: FakeGpuState) -> int:
    """The CPUs a node with fake GPUs declares: the host's, and at least one per compute slice of its GPUs, as
    a real GPU node has cores enough for a job on every slice (slurmd takes the declared count with
    ``SlurmdParameters=config_overrides``)."""
    return max(os.cpu_count() or 1, spare_count(state))


def fake_devices(
    state: FakeGpuState, top: Path, total: int | None = None, *, node: str | None = None, first_minor: int = 0
) -> list[FakeDevice]:
    """(UUID, GRES type, device file) of every MIG instance in the numbering order (module docstring),
    then, up to ``total`` devices, spare ones of type :data:`SPARE_TYPE` (UUID ``SPARE-<n>``): Slurm 22.05
    kills the jobs running on a node whose GPU count changed at a slurmctld restart, so a node that is
    repartitioned keeps its count. The device files are made (again) as character devices; those made
    outside ``top`` are listed in ``top/run/devices.txt`` for the sandbox's stop to remove. ``node``: a node
    of a many-node sandbox, whose files are ``top/dev/<node>/fakegpuN`` with minors from ``first_minor`` (no
    two nodes share a device)."""
    outside = []
    devices = []
    found = _ordered(state)
    if total is not None and total > len(found):
        found += [(f"SPARE-{n}", SPARE_TYPE) for n in range(total - len(found))]
    folder = top / "dev" if node is None else top / "dev" / node
    folder.mkdir(parents=True, exist_ok=True)
    for number, (uuid, kind) in enumerate(found):
        path = folder / f"fakegpu{number}"
        device = os.makedev(_NVIDIA_MAJOR, first_minor + number)
        try:
            path.unlink(missing_ok=True)
            os.mknod(path, 0o644 | stat.S_IFCHR, device)
        except OSError:  # a folder on a nodev mount, or no CAP_MKNOD: /dev then
            tag = hashlib.sha256(str(top).encode()).hexdigest()[:8]
            path = Path(f"/dev/wattsched-{tag}-{node + '-' if node else ''}fakegpu{number}")
            path.unlink(missing_ok=True)
            os.mknod(path, 0o644 | stat.S_IFCHR, device)
            outside.append(str(path))
        devices.append((uuid, kind, str(path)))
    if outside:
        made = top / "run" / "devices.txt"
        known = made.read_text(encoding="utf-8").split() if made.exists() else []
        made.write_text("\n".join(dict.fromkeys(known + outside)) + "\n", encoding="utf-8")
    return devices


def gres_spec(devices: list[FakeDevice]) -> str:
    """The node line's ``Gres=`` value: ``gpu:TYPE:COUNT`` per type, in the devices' order."""
    types = [kind for _, kind, _ in devices]
    return ",".join(f"gpu:{kind}:{types.count(kind)}" for kind in dict.fromkeys(types))


def fake_gpus_conf(devices: list[FakeDevice], cpus: int) -> str:
    return "".join(
        f"{kind}|{cpus}|0-{cpus - 1}|(null)|{device}|{uuid}|nvidia_gpu_env\n"
        for uuid, kind, device in devices
    )


def rewrite_node_gres(conf: Path, node: str, spec: str) -> bool:
    """Set ``Gres=`` on ``node``'s line of ``conf`` (written whole by a rename); whether it changed."""
    text = conf.read_text(encoding="utf-8")
    lines = text.splitlines()
    changed = False
    for number, line in enumerate(lines):
        words = line.split()
        if words and words[0] == f"NodeName={node}":
            updated = (
                re.sub(r"\bGres=\S+", f"Gres={spec}", line) if "Gres=" in line else f"{line} Gres={spec}"
            )
            changed = updated != line
            lines[number] = updated
            break
    else:
        raise InputError(f"no NodeName={node} line", path=str(conf))
    if changed:
        temporary = conf.with_name(f".{conf.name}.tmp")
        temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(temporary, conf)
    return changed


def write_fake_gres(
    top: Path, conf: Path, node: str, state: FakeGpuState, *, first_minor: int | None = None
) -> str:
    """Rewrite ``fake_gpus.conf`` beside ``conf`` and ``node``'s ``Gres=`` from the instances ``state``
    holds now (device files made again), keeping the device count the file had (spare devices); returns
    the ``Gres=`` value. ``first_minor``: ``node`` is a node of a many-node sandbox (its own
    ``fake_gpus.conf`` and devices, module docstring) whose device minors start there."""
    before = device_uuids(conf, node if first_minor is not None else None)
    count = len(before) if before else None
    if first_minor is None:
        devices = fake_devices(state, top, count)
    else:
        devices = fake_devices(state, top, count, node=node, first_minor=first_minor)
    cpus = node_cpus(state)
    target = fake_gpus_path(conf, node if first_minor is not None else None)
    temporary = target.with_name(".fake_gpus.conf.tmp")
    temporary.write_text(fake_gpus_conf(devices, cpus), encoding="utf-8")
    os.replace(temporary, target)
    spec = gres_spec(devices)
    rewrite_node_gres(conf, node, spec)
    return spec


def fake_gpus_path(conf: str | Path, node: str | None = None) -> Path:
    """The ``fake_gpus.conf`` of ``node`` in a many-node sandbox whose ``slurm.conf`` is ``conf``
    (``nodes/<node>/fake_gpus.conf`` beside it), or, without a node, the one beside ``conf``."""
    folder = Path(conf).parent
    return folder / "fake_gpus.conf" if node is None else folder / NODE_FOLDER / node / "fake_gpus.conf"


def device_uuids(conf: str | Path | None, node: str | None = None) -> list[str] | None:
    """The GPU device UUIDs in Slurm's index order where a ``fake_gpus.conf`` beside ``conf`` lists them (a
    sandbox), else ``None`` (jobs are then placed by the GRES type the controller gave them). ``node``: that
    node's own file where a many-node sandbox has one (:func:`fake_gpus_path`), else the one beside
    ``conf``."""
    if not conf:
        return None
    fake = fake_gpus_path(conf, node)
    if node is not None and not fake.is_file():
        fake = fake_gpus_path(conf)
    if not fake.is_file():
        return None
    return [
        line.split("|")[5]
        for line in fake.read_text(encoding="utf-8").splitlines()
        if line.count("|") >= 5 and not line.startswith("#")
    ]


def visible_uuids(environ: Mapping[str, str]) -> list[str]:
    """The MIG UUIDs of a job's GPUs from its ``CUDA_VISIBLE_DEVICES``, as Slurm sets it for the job, its
    Prolog and its Epilog: Slurm 22.05 and 24.11 give the devices' unique ids (``MIG-...``, from
    ``fake_gpus.conf``), 26.05 gives their indices on the node, which are looked up in the ``fake_gpus.conf``
    beside ``SLURM_CONF`` (one device a line, in index order). Entries that are neither are left out."""
    entries = [e.strip() for e in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if e.strip()]
    if all(e.startswith("MIG-") for e in entries):
        return entries
    conf = environ.get("SLURM_CONF")
    listed: list[str] = []
    if conf:
        with contextlib.suppress(OSError):
            lines = (Path(conf).parent / "fake_gpus.conf").read_text(encoding="utf-8").splitlines()
            listed = [fields[5] for fields in (line.split("|") for line in lines) if len(fields) > 5]
    found = []
    for entry in entries:
        if entry.startswith("MIG-"):
            found.append(entry)
        elif entry.isdigit() and int(entry) < len(listed) and listed[int(entry)].startswith("MIG-"):
            found.append(listed[int(entry)])
    return found
