"""Multi-GPU jobs live: the data-centre simulator's gangs (:mod:`wattsched.cluster.gangs`) on a Slurm node.

A job that asks for ``g > 1`` GPUs (``--gres=gpu:g``, or ``gpus=g`` in its annotation) runs as the
simulator runs a gang: on ``g`` whole GPUs of one node, started together, as one Slurm job.

* Gangs wait in arrival order. The first waiting gang **reserves** ``g`` GPUs of one node with the
  simulator's own rule (:func:`~wattsched.cluster.gangs.choose_members`: the node with the fewest busy GPUs
  among its ``g`` least-loaded ones not held by a gang, then the least load, then the first node); a node
  Slurm reports down takes no gang. A reserved GPU takes no new job; the jobs it has run to their end; a node
  that is off is asked to power up.
* When every reserved GPU is empty and the node is up, each GPU's own policy places the job as it places a
  job on an idle GPU (with the same configuration on every GPU, the same slice), and the controller releases
  the one Slurm job with a GRES request of those slices' types (:func:`gang_gres`), pinned to the node.
* Where the node's GRES types name their GPU (``gres_per_gpu``), the request names one type of each
  reserved GPU and Slurm's pick is exactly those slices. Otherwise:
* Slurm gives a typed request the first free devices of each type in its device order
  (:func:`~wattsched.slurm.gres_update.device_order`), not devices of the controller's choosing. So the
  slice the job gets on each GPU is the first of its profile there (the same profile, the same speed and
  power: the model is told that slice), and the controller releases a gang only where Slurm's pick
  (:func:`slurm_pick`) is exactly one slice on each reserved GPU. Where the reserved GPUs themselves make
  that impossible — a GPU before the last in the node's device order offering two slices of the type the
  job gets there — the job is held with that reason in one line (it could never start as a gang); where a
  free slice of the type on another GPU of the node comes first, the reservation is dropped and made again
  at the next pass, as loads have changed.
* The job runs on each GPU's slice; its energy is the sum of what each GPU's share gives it; it ends when
  Slurm says it ended, on every GPU at once (the sandbox's stand-in job runs until its slowest slice is
  done, as the simulator's gang ends with its last GPU), and counts as one job.

A job asking for more GPUs than any node has is held, one line saying so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

__all__ = ["format_members", "gang_gres", "parse_members", "slurm_pick"]

#: A device of a node: ``(GPU index, profile@start)``, as :func:`~wattsched.slurm.gres_update.device_order`.
Device = tuple[int, str]


def format_members(members: Mapping[int, int | None]) -> str:
    """A gang's reserved GPUs and the slice of each (``None``: not given yet) as the state file keeps them:
    ``"0=2,1=2"`` (GPU index ``=`` slice index; ``"0=,1="`` before the start)."""
    return ",".join(f"{gpu}={'' if s is None else s}" for gpu, s in sorted(members.items()))


def parse_members(text: str | None) -> dict[int, int | None]:
    """The inverse of :func:`format_members` (``{}`` for ``None`` or an empty text)."""
    members: dict[int, int | None] = {}
    for item in (text or "").split(","):
        if item:
            gpu, _, slice_index = item.partition("=")
            members[int(gpu)] = int(slice_index) if slice_index else None
    return members


def gang_gres(types: Sequence[str]) -> str:
    """The GRES request of one slice of each type in ``types`` (one per GPU): ``gpu:TYPE:COUNT`` items
    in first-seen order, e.g. ``gpu:3g.71gb:2`` or ``gpu:3g.71gb:1,gpu:4g.71gb:1``."""
    return ",".join(f"gpu:{kind}:{count}" for kind, count in Counter(types).items())


def slurm_pick(
    order: Sequence[Device], types: Mapping[Device, str], busy: set[Device], request: Mapping[str, int]
) -> list[Device] | None:
    """The devices Slurm gives a request of ``request[type]`` devices of each type on a node: the first free
    ones of that type in the node's device ``order`` (``types``: each device's GRES type; ``busy``: those a
    job holds); ``None`` when too few are free."""
    picked: list[Device] = []
    for kind, count in request.items():
        free = [device for device in order if types[device] == kind and device not in busy]
        if len(free) < count:
            return None
        picked += free[:count]
    return picked
