"""wattsched on Slurm: real jobs scheduled by driving a real Slurm (22.05 or later).

Slurm launches, authenticates and accounts; wattsched decides. A job states what the scheduling policies need
in its ``--comment`` (:mod:`wattsched.slurm.annotations`); a ``sacct`` job log becomes a wattsched trace
(:mod:`wattsched.slurm.sacct`).
"""

from __future__ import annotations

__all__: list[str] = []
