"""Domain-blind discrete-event kernel (clock + heap); see :mod:`wattsched.sim.kernel`."""

from __future__ import annotations

from wattsched.sim.kernel import EventQueue, Instant

__all__ = ["EventQueue", "Instant"]
