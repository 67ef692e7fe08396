"""`wattsched mig import`: turn a public job trace into a wattsched trace file (owned by the real-workloads work)."""

from __future__ import annotations

import argparse

__all__ = ["add_parser"]


def add_parser(mig_commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``import`` under ``wattsched mig``. Filled in by the trace-adapter work."""
