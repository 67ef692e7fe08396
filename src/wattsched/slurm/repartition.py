"""Live repartitioning of a Slurm node's MIG GPUs: the pieces the controller's phases use.

A GPU's partitioner (any of ``wattsched mig partitioners`` but static and no-mig) is asked for a
configuration at the GPU's decision epochs, as in the simulator (a pass in which a job arrived on the GPU or
ended there). When it names another configuration, the controller carries the change out in phases, each
written to the state file (table ``repartitions``) before its work is done, so that a restart resumes it:

1. **drain** — no job is given a slice the plan destroys any more (a job released on one and not started yet
   is held back); slices the plan keeps go on running and taking jobs;
2. **wait** — the jobs on the destroyed slices finish, or, with ``repartition.requeue`` and a preemptible
   job, get the checkpoint signal and are requeued (the controller's preemption path); after
   ``repartition.max_wait_s`` the repartition is given up (rolled back) and the slices reopen;
3. **apply** — the plan (:func:`wattsched.hardware.mig_plan.plan_repartition` from what the GPU holds now
   to the target: kept instances are never touched, destroys before creates) is carried out behind the
   guards of :func:`wattsched.hardware.gpu.apply.apply_plan`; a refusal (an instance still in use, a
   placement taken) is logged in one line and tried again at the next pass (a refused create leaves the
   destroys before it done: a whole layout), up to ``repartition.max_attempts`` tries, then the GPU is
   brought back to the old layout (``rolled_back``; the reload command runs when that made instances again,
   new devices; ``failed``, the old configuration in force, when that is refused too);
   since the plan is always computed from the GPU's present layout, a restart half-way goes on from there;
4. **gres** — ``repartition.reload_command`` (``{node}`` replaced) makes Slurm see the node's new GRES;
5. **resume** — the GPU's model is rebuilt on the new configuration (its running jobs on their slices,
   renumbered), and new jobs land on the new slices.
"""

from __future__ import annotations

import sqlite3
import statistics
import subprocess
from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from wattsched.errors import InputError, WattschedError
from wattsched.hardware.gpu.apply import apply_plan, current_layout
from wattsched.hardware.gpu.backend import GpuBackend
from wattsched.hardware.mig import Configuration, MigGpu
from wattsched.hardware.mig_plan import GpuLayouts, Layout, MigInstance, layout_text, plan_repartition
from wattsched.slurm.state import Repartition, StateStore

__all__ = [
    "OUT_OF_SERVICE",
    "ReloadError",
    "carry_out",
    "configuration_layout",
    "destroyed_slices",
    "measured_cost",
    "measured_repartition_s",
    "open_gpu_backend",
    "run_reload",
]


#: The phases in which the slices a repartition changes exist neither as old nor as new slices for Slurm:
#: what the simulator's repartition blackout (``repartition_s``) stands for.
OUT_OF_SERVICE = ("apply", "gres", "resume")


def measured_cost(
    entries: Sequence[Repartition], gpus: dict[tuple[str, int], MigGpu]
) -> list[dict[str, object]]:
    """Per GPU model, over the repartitions done: how many, the median seconds out of service (apply + gres
    + resume) and from start to end, beside the catalogue's ``repartition_s`` the simulator charges (a GPU
    file with ``repartition_s`` set to the measured figure makes the simulator use it)."""
    found: dict[str, tuple[MigGpu, list[float], list[float]]] = {}
    for entry in entries:
        gpu = gpus.get((entry.node, entry.gpu))
        if gpu is None or entry.phase != "done":
            continue
        _, out, total = found.setdefault(gpu.name, (gpu, [], []))
        out.append(sum(entry.phase_s.get(phase, 0.0) for phase in OUT_OF_SERVICE))
        total.append(sum(entry.phase_s.values()))
    return [
        {
            "gpu": name,
            "repartitions": len(out),
            "out_of_service_s": statistics.median(out),
            "total_s": statistics.median(total),
            "simulator_repartition_s": gpu.repartition_s,
        }
        for name, (gpu, out, total) in found.items()
    ]


def measured_repartition_s(state_path: str | PathLike[str], gpu: MigGpu) -> float:
    """The median seconds out of service (:data:`OUT_OF_SERVICE`) of the finished repartitions of ``gpu``'s
    model in a controller's state file, for the simulator's ``repartition_s``.

    The state file names a GPU by node and index, not by model: a repartition counts as one of ``gpu``'s
    when both its configurations are ``gpu``'s and have exactly the layouts it journaled (two models with the
    same MIG geometry and profile names cannot be told apart). :class:`InputError` when the file is missing,
    is not a state file, or holds no finished repartition of ``gpu``."""
    path = Path(state_path)
    if not path.is_file():
        raise InputError("no such state file", path=str(path))
    try:  # read-only first: StateStore would create the tables in any SQLite file, or the file itself
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
            found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'repartitions'")
            if found.fetchone() is None:
                raise InputError("not a controller's state file (no repartitions table)", path=str(path))
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not a controller's state file: {exc}", path=str(path)) from None
    store = StateStore(path)
    try:
        entries = [entry for entry in store.repartitions(1_000_000) if _of_model(entry, gpu)]
    finally:
        store.close()
    cost = measured_cost(entries, {(entry.node, entry.gpu): gpu for entry in entries})
    if not cost:
        raise InputError(
            f"the state file holds no finished repartition of GPU model {gpu.name}", path=str(path)
        )
    return float(cost[0]["out_of_service_s"])  # type: ignore[arg-type]


def _of_model(entry: Repartition, gpu: MigGpu) -> bool:
    """Whether both configurations of ``entry`` are ``gpu``'s with the layouts the entry journaled."""
    for ident, journaled in ((entry.from_config, entry.from_layout), (entry.to_config, entry.to_layout)):
        try:
            configuration = gpu.configuration(int(ident) if ident.isdigit() else ident)
        except WattschedError:
            return False
        labels = ",".join(s.label for s in sorted(configuration.slices, key=lambda s: s.start)) or "empty"
        if labels != journaled:
            return False
    return True


class ReloadError(WattschedError):
    """The command that brings Slurm's GRES to the new slices failed."""


def configuration_layout(configuration: Configuration) -> Layout:
    """A configuration's slices as a MIG layout."""
    return tuple(sorted(MigInstance(s.start, s.size, s.profile) for s in configuration.slices))


def destroyed_slices(old: Configuration, new: Configuration) -> list[int]:
    """Indices of ``old``'s slices that ``new`` does not keep (same profile at the same placement)."""
    kept = {s.label for s in new.slices}
    return [index for index, s in enumerate(old.slices) if s.label not in kept]


def carry_out(backend: GpuBackend, index: int, gpu: MigGpu, target: Configuration) -> tuple[str, str]:
    """Bring GPU ``index`` of ``backend`` from the layout it holds now to ``target``'s (nothing when it
    already holds it); returns the layouts before and after as text. :class:`GpuError` from the guards or a
    step leaves what the steps done so far made (a valid layout: destroys come first)."""
    geometry = GpuLayouts.from_catalogue(gpu).geometry
    present, _ = current_layout(backend, index)
    goal = configuration_layout(target)
    steps = plan_repartition(geometry, present, goal)
    if steps:
        apply_plan(backend, index, present, steps)
    return layout_text(present), layout_text(goal)


def open_gpu_backend(spec: str) -> GpuBackend:
    """The GPU backend of a node's ``backend`` setting (``fake:FILE`` or ``nvml``)."""
    from wattsched.hardware.gpu import open_backend

    return open_backend(spec)


def run_reload(command: Sequence[str], node: str, timeout_s: float) -> str:
    """Run the reload command (``{node}`` replaced); its last output line, or :class:`ReloadError`."""
    words = [part.replace("{node}", node) for part in command]
    try:
        done = subprocess.run(words, capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        raise ReloadError(f"reload command not found: '{words[0]}'") from None
    except subprocess.TimeoutExpired:
        raise ReloadError(f"reload command timed out after {timeout_s:g} s") from None
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if done.returncode != 0:
        raise ReloadError(f"reload command failed (exit status {done.returncode}): {last[-300:]}")
    return last
