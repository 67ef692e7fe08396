"""Reinforcement learning for MIG repartitioning: the gymnasium environment, observation, reward, DQN
training.

This package is the only place gymnasium, torch and stable-baselines3 are imported (install the ``[rl]``
extra).
Importing it is cheap. :func:`register_envs` records the env id with gymnasium; it is declared as the
``gymnasium.envs`` entry point, but gymnasium 1.x does not load those, so call it (or import
:mod:`wattsched.rl.env`, which calls it) before ``gymnasium.make(ENV_ID)``.
"""

from __future__ import annotations

__all__ = ["ENV_ID", "register_envs"]

ENV_ID = "wattsched/MigRepartition-v0"


def register_envs() -> None:
    """Register ``wattsched/MigRepartition-v0`` with gymnasium (idempotent)."""
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="wattsched.rl.env:MigRepartitionEnv")
