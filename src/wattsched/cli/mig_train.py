"""`wattsched mig train` and `wattsched mig evaluate` (owned by the RL work)."""

from __future__ import annotations

import argparse

__all__ = ["add_parser"]


def add_parser(mig_commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``train`` and ``evaluate`` under ``wattsched mig``. Filled in by the RL work."""
