"""Carry out a MIG repartition plan on a real GPU, behind the guards of docs/howto/nvml.md.

Nothing changes unless every guard holds, checked before the first step: the backend may change the GPU
(root for NVML), MIG mode is on (wattsched never switches it), the GPU's instances are exactly the plan's
source layout, every profile of the plan exists on the GPU, and no process runs on an instance the plan
destroys (NVML's process list, which names each process's GPU instance). Then destroys run before creates,
as the plan orders them. A failure part-way is reported with the steps already done.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from wattsched.hardware.gpu.backend import GpuBackend, GpuError, GpuInstance
from wattsched.hardware.mig_plan import Layout, MigInstance, PlanStep, layout_text

__all__ = ["AppliedStep", "apply_plan", "current_layout"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppliedStep:
    """A step done on the GPU and the NVML GPU-instance id it destroyed or created."""

    step: PlanStep
    instance_id: int


def current_layout(backend: GpuBackend, index: int) -> tuple[Layout, dict[MigInstance, GpuInstance]]:
    """The GPU's instances as a layout (profile names from NVML), and the NVML instance behind each."""
    names = {p.nvml_id: p.name for p in backend.profiles(index)}
    found: dict[MigInstance, GpuInstance] = {}
    for instance in backend.gpu_instances(index):
        name = names.get(instance.profile_id)
        if name is None:
            raise GpuError(
                f"GPU {index}: instance {instance.instance_id} has profile id {instance.profile_id}, "
                "which NVML does not list"
            )
        found[MigInstance(instance.start, instance.size, name)] = instance
    return tuple(sorted(found)), found


def _guard(
    backend: GpuBackend, index: int, source: Layout, steps: Sequence[PlanStep]
) -> dict[MigInstance, GpuInstance]:
    if not backend.privileged():
        raise GpuError("mig plan --apply needs root (NVML refuses MIG changes otherwise); nothing changed")
    if not backend.mig_mode(index)[0]:
        raise GpuError(
            f"GPU {index}: MIG mode is off; wattsched never changes MIG mode (enable it with "
            f"'nvidia-smi -i {index} -mig 1' as root, or mig-parted); nothing changed"
        )
    layout, by_instance = current_layout(backend, index)
    if layout != tuple(sorted(source)):
        raise GpuError(
            f"GPU {index} has {layout_text(layout)}, not the plan's source {layout_text(source)}; "
            "nothing changed"
        )
    known = {p.name for p in backend.profiles(index)}
    missing = sorted({s.instance.profile for s in steps} - known)
    if missing:
        raise GpuError(f"GPU {index} has no MIG profile {', '.join(missing)}; nothing changed")
    doomed = {by_instance[s.instance].instance_id: s.instance for s in steps if s.op == "destroy"}
    for process in backend.processes(index):
        if process.gpu_instance_id in doomed:
            raise GpuError(
                f"GPU {index}: process {process.pid} runs on {doomed[process.gpu_instance_id]} "
                f"(GPU instance {process.gpu_instance_id}), which the plan destroys; nothing changed"
            )
    return by_instance


def apply_plan(
    backend: GpuBackend, index: int, source: Layout, steps: Sequence[PlanStep]
) -> list[AppliedStep]:
    """Check the guards, then destroy and create as ``steps`` say; returns what was done."""
    by_instance = _guard(backend, index, source, steps)
    ids = {p.name: p.nvml_id for p in backend.profiles(index)}
    done: list[AppliedStep] = []
    for number, step in enumerate(steps, start=1):
        try:
            if step.op == "destroy":
                instance_id = by_instance[step.instance].instance_id
                backend.destroy_gpu_instance(index, instance_id)
            else:
                instance_id = backend.create_gpu_instance(
                    index, ids[step.instance.profile], step.instance.start
                ).instance_id
        except GpuError as exc:
            raise GpuError(
                f"step {number} ({step.op} {step.instance}) failed after {len(done)} step(s) were done: {exc}"
            ) from None
        log.info("GPU %d: %s %s (instance %d)", index, step.op, step.instance, instance_id)
        done.append(AppliedStep(step, instance_id))
    return done
