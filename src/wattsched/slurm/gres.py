"""Slurm's GRES view of a node's GPUs, written from what the GPUs hold now (for Slurm builds without NVML).

Slurm finds MIG slices by itself only through its NVML plugin (``AutoDetect=nvml``), which Debian's build
does not ship. Without it a MIG slice is configured by hand in ``gres.conf``: one line per slice, its
``Type`` (here the GPU family and the profile, as the controller requests them: ``h100_3g.40gb``) and the
device files a job needs to use it — the parent GPU's ``/dev/nvidiaN`` and the slice's two capability devices
``/dev/nvidia-caps/nvidia-capM`` (the GPU instance's and its compute instance's ``access`` minors, listed by
the driver in ``/proc/driver/nvidia-caps/mig-minors``; a fake GPU, which has no driver, stands for the minors
:func:`fake_mig_minors` numbers) — given as ``MultipleFiles``. A GPU with MIG off is
one line with ``File=/dev/nvidiaN``. The node line of ``slurm.conf`` needs the matching
``Gres=gpu:TYPE:COUNT,...``.

wattsched never changes a GPU's MIG mode: these lines describe the GPUs as they are.

A node whose GPUs are repartitioned live must keep its device count: Slurm 22.05 kills the running jobs of a
node whose GPU device count changed at a slurmctld restart. With ``pad`` each MIG GPU gets, after its
instances, spare devices up to its compute-slice count (7 on an A100 or H100: no layout has more
instances), of type ``spare`` (never requested by wattsched). A spare's device file is a null device made
once per node (:data:`SPARE_DEVICE`; the ``gres.conf`` header says how), so a job given one by mistake can
reach no GPU.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wattsched.errors import InputError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.backend import GpuBackend, GpuError
from wattsched.hardware.gpu.fake_state import gres_type
from wattsched.hardware.gpu.snapshot import catalogue_id
from wattsched.slurm.gres_update import SPARE_TYPE

__all__ = [
    "MIG_MINORS",
    "SPARE_DEVICE",
    "GresDevice",
    "NodeGres",
    "fake_mig_minors",
    "node_gres",
    "read_mig_minors",
]

#: Where the NVIDIA driver lists the capability device minors of every MIG instance.
MIG_MINORS = Path("/proc/driver/nvidia-caps/mig-minors")
_CAPS_DIR = "/dev/nvidia-caps"
#: The device file of spare device ``k`` of GPU ``gpu`` (a character device with the null device's numbers).
SPARE_DEVICE = "/dev/wattsched-spare-gpu{gpu}-{k}"
_NULL_DEVICE = (1, 3)
_MINOR_LINE = re.compile(r"^(\S+)\s+(\d+)$")


@dataclass(frozen=True)
class GresDevice:
    """One GRES device of a node: a MIG slice (``profile`` set) or a whole GPU (``profile`` None)."""

    gpu: int
    type: str
    files: tuple[str, ...]
    profile: str | None = None
    start: int | None = None

    def gres_conf_line(self, node: str) -> str:
        key = "MultipleFiles" if len(self.files) > 1 else "File"
        return f"NodeName={node} Name=gpu Type={self.type} {key}={','.join(self.files)}"


@dataclass(frozen=True)
class NodeGres:
    """The GRES devices of one node, in GPU order then placement order."""

    node: str
    devices: tuple[GresDevice, ...]
    #: With padding: every spare device file any layout of the node's MIG GPUs may use.
    spare_pool: tuple[str, ...] = ()

    def gres_spec(self) -> str:
        """The ``Gres=`` value of the node's ``slurm.conf`` line: ``gpu:TYPE:COUNT`` per type, in order."""
        counts = Counter(device.type for device in self.devices)
        return ",".join(f"gpu:{kind}:{count}" for kind, count in counts.items())

    def gres_conf(self) -> str:
        """The node's ``gres.conf`` lines, with the ``slurm.conf`` node setting as a comment above them (and,
        with spare devices, how to make their files)."""
        lines = [
            f"# gres.conf for {self.node}, written by `wattsched slurm gres`; in slurm.conf the node needs",
            f"#   NodeName={self.node} ... Gres={self.gres_spec()}",
        ]
        if self.spare_pool:
            major, minor = _NULL_DEVICE
            lines += [
                f"# spare devices keep the node's GPU device count constant through MIG changes; make their "
                f"files once (null devices): for f in {' '.join(self.spare_pool)}; do "
                f"[ -e $f ] || mknod -m 0666 $f c {major} {minor}; done",
            ]
        lines += [device.gres_conf_line(self.node) for device in self.devices]
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "gres": self.gres_spec(),
            "devices": [
                {"gpu": d.gpu, "type": d.type, "profile": d.profile, "start": d.start, "files": list(d.files)}
                for d in self.devices
            ],
        }


def read_mig_minors(path: str | Path = MIG_MINORS) -> dict[str, int]:
    """The driver's capability minors: ``{"gpu0/gi1/access": 12, "gpu0/gi1/ci0/access": 13, ...}``."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            "no MIG capability list (is the NVIDIA driver loaded with MIG on?)", path=where
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the MIG capability list: {exc}", path=where) from None
    minors: dict[str, int] = {}
    for row, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _MINOR_LINE.match(line.strip())
        if match is None:
            raise InputError(f"expected 'NAME MINOR', got {line.strip()!r}", path=where, row=row)
        minors[match.group(1)] = int(match.group(2))
    return minors


def fake_mig_minors(backend: GpuBackend) -> dict[str, int]:
    """The capability minors of the MIG instances a fake GPU backend holds now, numbered as the driver
    numbers them: ``config 1``, ``monitor 2``, then for each GPU in MIG mode, each GPU instance in placement
    order, its ``gpuG/giN/access`` and then its compute instances' ``gpuG/giN/ciM/access``, consecutively."""
    minors = {"config": 1, "monitor": 2}
    for index in range(backend.device_count()):
        if not backend.mig_mode(index)[0]:
            continue
        for instance in sorted(backend.gpu_instances(index), key=lambda i: (i.start, i.instance_id)):
            prefix = f"gpu{index}/gi{instance.instance_id}"
            minors[f"{prefix}/access"] = len(minors) + 1
            for compute in instance.compute_instance_ids:
                minors[f"{prefix}/ci{compute}/access"] = len(minors) + 1
    return minors


def node_gres(
    backend: GpuBackend,
    node: str,
    *,
    minors: Mapping[str, int] | None = None,
    minors_path: str | Path | None = None,
    pad: bool = False,
    per_gpu: bool = False,
) -> NodeGres:
    """The GRES devices of every GPU ``backend`` sees: each MIG instance of a GPU in MIG mode (its compute
    instances' capability minors from ``minors``, read from ``minors_path`` when a MIG GPU needs them; without
    a path, :data:`MIG_MINORS`, or :func:`fake_mig_minors` for a ``fake:`` backend), or the whole GPU when
    MIG is off. ``pad``: each MIG GPU's devices padded with spare ones up to its compute-slice count (module
    docstring). ``per_gpu``: the MIG types name their GPU (``a100_3g.20gb_gpu1``), for a node configured
    with ``gres_per_gpu = true``."""
    fake = minors_path is None and backend.name.startswith("fake:")
    where = backend.name if fake else (minors_path or MIG_MINORS)
    devices: list[GresDevice] = []
    pool: list[str] = []
    for index in range(backend.device_count()):
        identity = backend.identity(index)
        family = catalogue_id(identity.name, identity.memory_total_bytes)
        parent = f"/dev/nvidia{index}"
        current, _pending = backend.mig_mode(index)
        if not current:
            devices.append(GresDevice(index, family.split("-")[0], (parent,)))
            continue
        if minors is None:
            minors = fake_mig_minors(backend) if fake else read_mig_minors(where)
        names = {profile.nvml_id: profile.name for profile in backend.profiles(index)}
        for instance in sorted(backend.gpu_instances(index), key=lambda i: i.start):
            profile = names.get(instance.profile_id)
            if profile is None:
                raise GpuError(f"GPU {index}: instance {instance.instance_id} has an unknown profile id")
            if not instance.compute_instance_ids:
                raise GpuError(
                    f"GPU {index}: instance {instance.instance_id} ({profile}) has no compute instance; "
                    "a job cannot use it"
                )
            files = [parent, _cap(minors, f"gpu{index}/gi{instance.instance_id}/access", where)]
            compute = instance.compute_instance_ids[0]
            files.append(_cap(minors, f"gpu{index}/gi{instance.instance_id}/ci{compute}/access", where))
            devices.append(
                GresDevice(
                    index,
                    gres_type(family, profile, index if per_gpu else None),
                    tuple(files),
                    profile,
                    instance.start,
                )
            )
        if pad:
            made = sum(1 for device in devices if device.gpu == index)
            files = [SPARE_DEVICE.format(gpu=index, k=k) for k in range(load_gpu(family).compute_slices)]
            devices += [GresDevice(index, SPARE_TYPE, (file,)) for file in files[: max(0, len(files) - made)]]
            pool += files
    if not devices:
        raise GpuError(f"node {node}: no GPU found")
    return NodeGres(node, tuple(devices), tuple(pool))


def _cap(minors: Mapping[str, int], key: str, where: str | Path) -> str:
    if key not in minors:
        raise InputError(
            f"no capability minor for {key} (the MIG instance list and the driver disagree)", path=str(where)
        )
    return f"{_CAPS_DIR}/nvidia-cap{minors[key]}"
