"""Task orders and pair-choice rules: EDL (the paper's EDF + lightest pair) and the baselines of
P2 (EDF-BF, EDF-WF, LPT-FF, BIN). Each rule is a small object in :data:`ALGORITHMS`.

A rule sees the pool's arrays and returns a pair index or −1 ("open a server"). EDL returns its single
candidate (the ON pair with the smallest finish time) even when the task does not fit, because the caller may
then θ-readjust the task onto it; the baselines return only pairs on which the task fits unchanged. Ties
between pairs are broken by the pool (``PairPool.pick_*``), so that the authors' list order can be copied.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from wattsched.dvfs.pool import PairPool
from wattsched.registry import Registry

__all__ = ["ALGORITHMS", "PairRule", "fits_mask"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Absolute slack (s) on "finishes by the deadline", for float round-off only.
FIT_ATOL_S = 1e-6


class PairRule(Protocol):
    name: str
    #: Whether a task that does not fit may be θ-readjusted onto the chosen pair (EDL with DVFS).
    readjust: bool

    def order(self, deadline_s: FloatArray, time_s: FloatArray) -> IntArray:
        """Processing order of a batch (indices into the batch)."""
        ...

    def choose(self, pool: PairPool, now_s: float, time_s: float, deadline_s: float, initial: bool) -> int:
        """A pair for the task, or −1 when a new server must be turned on."""
        ...


def fits_mask(
    pool: PairPool, now_s: float, time_s: float, deadline_s: float, *, ignore_now: bool = False
) -> npt.NDArray[np.bool_]:
    """ON pairs on which the task, started at ``max(mu, now)``, ends by its deadline.

    ``ignore_now`` tests ``mu + t <= deadline`` (the authors' online best/worst fit); their code has no
    round-off slack, so reproduction mode has none either.
    """
    mu = pool.mu_on[: pool.opened]
    slack = 0.0 if pool.authors_order else FIT_ATOL_S
    start = mu if ignore_now else np.maximum(mu, now_s)
    return start + time_s <= deadline_s + slack


def _edf(deadline_s: FloatArray, time_s: FloatArray) -> IntArray:
    return np.argsort(deadline_s, kind="stable").astype(np.int64)


class Edl:
    """EDF order; only the lightest ON pair (smallest finish time μ) is tried; θ-readjustment allowed."""

    name = "edl"
    readjust = True

    def order(self, deadline_s: FloatArray, time_s: FloatArray) -> IntArray:
        return _edf(deadline_s, time_s)

    def choose(self, pool: PairPool, now_s: float, time_s: float, deadline_s: float, initial: bool) -> int:
        if pool.opened == 0:
            return -1
        pair = pool.pick_min(pool.mu_on)
        return pair if np.isfinite(pool.mu_on[pair]) else -1


class _LoadFit:
    """EDF order; among fitting ON pairs the one of largest (best fit) or smallest (worst fit) load."""

    readjust = False

    def __init__(self, name: str, largest: bool) -> None:
        self.name = name
        self.largest = largest

    def order(self, deadline_s: FloatArray, time_s: FloatArray) -> IntArray:
        return _edf(deadline_s, time_s)

    def choose(self, pool: PairPool, now_s: float, time_s: float, deadline_s: float, initial: bool) -> int:
        if pool.opened == 0:
            return -1
        fits = fits_mask(pool, now_s, time_s, deadline_s, ignore_now=pool.authors_order)
        if not fits.any():
            return -1
        load = pool.load[: pool.opened]
        if self.largest:
            return pool.pick_max(np.where(fits, load, -np.inf))
        return pool.pick_min(np.where(fits, load, np.inf))


class _FirstFit:
    """First fitting ON pair in creation order; LPT order (longest t̂ first) or EDF order."""

    readjust = False

    def __init__(self, name: str, longest_first: bool) -> None:
        self.name = name
        self.longest_first = longest_first

    def order(self, deadline_s: FloatArray, time_s: FloatArray) -> IntArray:
        if self.longest_first:
            return np.argsort(-time_s, kind="stable").astype(np.int64)
        return _edf(deadline_s, time_s)

    def choose(self, pool: PairPool, now_s: float, time_s: float, deadline_s: float, initial: bool) -> int:
        if pool.opened == 0:
            return -1
        return pool.pick_first(fits_mask(pool, now_s, time_s, deadline_s))


class Bin:
    """BIN: EDF order; worst fit for the initial batch (T = 0), first fit afterwards."""

    name = "bin"
    readjust = False

    def __init__(self) -> None:
        self._worst = _LoadFit("edf-wf", largest=False)
        self._first = _FirstFit("edf-ff", longest_first=False)

    def order(self, deadline_s: FloatArray, time_s: FloatArray) -> IntArray:
        return _edf(deadline_s, time_s)

    def choose(self, pool: PairPool, now_s: float, time_s: float, deadline_s: float, initial: bool) -> int:
        rule = self._worst if initial else self._first
        return rule.choose(pool, now_s, time_s, deadline_s, initial)


ALGORITHMS: Registry[PairRule] = Registry("DVFS scheduling algorithm")
ALGORITHMS.register("edl")(Edl)
ALGORITHMS.register("edf-bf")(lambda: _LoadFit("edf-bf", largest=True))
ALGORITHMS.register("edf-wf")(lambda: _LoadFit("edf-wf", largest=False))
ALGORITHMS.register("lpt-ff")(lambda: _FirstFit("lpt-ff", longest_first=True))
ALGORITHMS.register("bin")(Bin)
