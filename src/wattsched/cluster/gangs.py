"""Jobs of several GPUs (gangs) on the cluster: whole GPUs of one server, started and ended together.

A job with ``gpus = g > 1`` needs g GPUs at once. The cluster engine runs it as a **gang**:

* Gangs wait at the cluster in arrival order. The first waiting gang **reserves** g GPUs of one server that
  no other gang holds: the server with the fewest busy ones among its g least-loaded free-of-gangs GPUs,
  then the least total load, then the lowest index. A reserved GPU takes no new job; the jobs it already
  has run to their end (a booting or off server is booted).
* When all g reserved GPUs are idle and the server is on, the gang **starts** on all of them at that
  instant: each GPU runs it alone, as its own policy places a job on an idle GPU (with the same
  configuration on every GPU, the same slice, so all g end together). The next waiting gang then reserves.
* The gang **ends** when its last GPU finishes (members that finish earlier stay held, idle); then its GPUs
  take jobs again. It counts as one job, with the tardiness of its end. With a partitioner that changes
  configurations, one member GPU may be in another configuration or repartitioning (4 s without slices):
  that member starts or finishes later, and the gang ends with it.
* A single-GPU job that arrives when every GPU of the cluster is held by a gang waits at the cluster until
  one is released.

A job needing more GPUs than any server has can never run: the engine refuses it (``ConfigError``).
"""

from __future__ import annotations

from collections.abc import Sequence

from wattsched.mig.simulator import EPS_S
from wattsched.workload.job import Job

__all__ = ["Gang", "choose_members"]


class Gang:
    """One multi-GPU job's state in a cluster run."""

    __slots__ = ("done_s", "job", "members", "position", "start_s")

    def __init__(self, job: Job, position: int) -> None:
        self.job = job
        self.position = position  # the job's place in the run's job order
        self.members: tuple[int, ...] = ()  # reserved GPUs (empty: still waiting)
        self.start_s: float | None = None
        self.done_s: dict[int, float] = {}  # member GPU -> when it finished

    @property
    def end_s(self) -> float:
        return max(self.done_s.values())

    def member_tardiness_s(self) -> list[float]:
        """Each member's own tardiness (what its GPU counted), below EPS_S as 0."""
        deadline = self.job.deadline_s
        return [late if (late := done - deadline) > EPS_S else 0.0 for done in self.done_s.values()]


def choose_members(
    gpus_needed: int, servers: Sequence[Sequence[int]], loads: Sequence[int], held: Sequence[bool]
) -> tuple[int, ...]:
    """The GPUs a gang reserves (module docstring), or ``()`` when no server has enough GPUs free of gangs.

    ``servers``: each server's GPU indices; ``loads``: jobs on each GPU; ``held``: whether a gang holds it."""
    best: tuple[tuple[int, int, int], tuple[int, ...]] | None = None
    for s, members in enumerate(servers):
        free = sorted((loads[g], g) for g in members if not held[g])
        if len(free) < gpus_needed:
            continue
        chosen = free[:gpus_needed]
        key = (sum(load > 0 for load, _ in chosen), sum(load for load, _ in chosen), s)
        if best is None or key < best[0]:
            best = (key, tuple(sorted(g for _, g in chosen)))
    return best[1] if best is not None else ()
