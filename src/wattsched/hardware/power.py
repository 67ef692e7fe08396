"""GPU power as a function of busy compute slices, per workload curve, with a power cap
(docs/concepts/power-models.md).

A :class:`PowerModel` holds one or more *curves* ``P(u)`` (watts with ``u`` busy compute slices, ``u = 0`` is
idle) and says which curve applies to which job kind. The simulator does not read curves directly: it asks for
a :class:`PowerTable`, the watts of every *busy state* it can be in, resolved once per run:

* one curve (the A100-40GB of P1, or any GPU run with a single declared curve or a declared mix): the state is
  ``u`` and the table is the curve — exactly P1's ``P(u)``;
* one curve per job kind (e.g. the H200: inference and training measured separately): the state is
  ``u_inference + (U + 1) · u_training`` and ``P = idle + Σ_k u_k · (P_k(u) − idle) / u`` with ``u`` the total
  busy slices: every busy slice draws its own kind's share at the card's operating point.

The cap: no state draws more than ``cap_w``. With ``throttle=True`` (the engine's power-cap option), a state
whose uncapped power exceeds the cap also runs every busy slice slower by the shared factor
``((cap − idle) / (P − idle)) ** (1 / cap_speed_exponent)`` (dynamic power ∝ clock^α; α is a GPU fact fitted
to
measurements, e.g. the H200's ``concurrent.json``). Without it, power is clamped and speed unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wattsched.errors import ConfigError

__all__ = ["PowerCurve", "PowerModel", "PowerTable"]

#: Job kinds a per-kind model distinguishes (``wattsched.workload.job.JobKind`` values).
KINDS: tuple[str, ...] = ("inference", "training")


@dataclass(frozen=True)
class PowerCurve:
    """``busy_w[u]``: watts with ``u`` busy compute slices, ``u = 0..U`` (``busy_w[0]`` is the idle power)."""

    name: str
    busy_w: tuple[float, ...]
    source: str = ""

    def power(self, busy_units: int) -> float:
        return self.busy_w[busy_units]


@dataclass(frozen=True)
class PowerTable:
    """The watts (and speed factor) of every busy state of one run; see the module docstring."""

    power_w: tuple[float, ...]
    #: Speed factor of every busy slice in each state (1.0: full speed); ``None`` when never throttled.
    speed: tuple[float, ...] | None
    #: State increment per busy compute slice, by job kind (``{"inference": 1, "training": 1}`` for one
    # curve).
    kind_weight: Mapping[str, int]
    #: Compute slices of the GPU (``U``).
    units: int

    @property
    def per_kind(self) -> bool:
        return len(set(self.kind_weight.values())) > 1

    def busy_units(self, state: int) -> int:
        """Total busy compute slices of a state."""
        if not self.per_kind:
            return state
        inference, training = state % (self.units + 1), state // (self.units + 1)
        return inference + training


@dataclass(frozen=True)
class PowerModel:
    """A GPU's power curves; see the module docstring."""

    idle_w: float
    curves: tuple[PowerCurve, ...]
    default_curve: str
    #: ``(job kind, curve name)``: the curve each kind uses when the run does not declare one.
    kind_curves: tuple[tuple[str, str], ...] = ()
    cap_w: float | None = None
    cap_speed_exponent: float = 2.0
    #: Values not measured on the GPU itself (see ``note``).
    estimated: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        names = [c.name for c in self.curves]
        if self.default_curve not in names:
            raise ConfigError(f"default power curve '{self.default_curve}' is not one of {names}")
        for kind, curve in self.kind_curves:
            if kind not in KINDS or curve not in names:
                raise ConfigError(f"power curve for kind '{kind}': '{curve}' must be one of {names}")

    @property
    def curve_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.curves)

    def curve(self, name: str | None = None) -> PowerCurve:
        wanted = self.default_curve if name is None else name
        for curve in self.curves:
            if curve.name == wanted:
                return curve
        raise ConfigError(f"unknown power curve '{wanted}'; valid: {', '.join(self.curve_names)}")

    def power(self, busy_units: int, curve: str | None = None) -> float:
        """Watts with ``busy_units`` busy compute slices on one curve (default curve), capped."""
        watts = self.curve(curve).power(busy_units)
        return min(watts, self.cap_w) if self.cap_w is not None else watts

    def table(
        self, selection: str | Mapping[str, float] | None = None, *, throttle: bool = False
    ) -> PowerTable:
        """The per-state table of a run. ``selection``: ``None`` (per kind when the GPU declares kind curves,
        else the default curve), a curve name, ``"kind"`` (per kind), or a mix ``{curve: weight}``."""
        units = len(self.curves[0].busy_w) - 1
        if selection is None:
            selection = "kind" if self.kind_curves else self.default_curve
        if selection == "kind" and self.kind_curves:
            by_kind = dict(self.kind_curves)
            chosen = {k: self.curve(by_kind.get(k, self.default_curve)) for k in KINDS}
            if chosen["inference"] is not chosen["training"]:
                return self._per_kind_table(chosen, units, throttle)
            return self._single_table(chosen["inference"].busy_w, units, throttle)
        if selection == "kind":
            return self._single_table(self.curve().busy_w, units, throttle)
        if isinstance(selection, str):
            return self._single_table(self.curve(selection).busy_w, units, throttle)
        return self._single_table(self._mix(selection), units, throttle)

    def _mix(self, weights: Mapping[str, float]) -> tuple[float, ...]:
        if not weights or any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
            raise ConfigError(
                f"a power mix needs non-negative weights with a positive sum, got {dict(weights)}"
            )
        total = sum(weights.values())
        curves = {name: self.curve(name).busy_w for name in weights}
        length = len(self.curves[0].busy_w)
        return tuple(sum(weights[n] * curves[n][u] for n in weights) / total for u in range(length))

    def _capped(self, watts: float, throttle: bool) -> tuple[float, float]:
        cap = self.cap_w
        if cap is None or watts <= cap:
            return watts, 1.0
        if not throttle or watts <= self.idle_w:
            return cap, 1.0
        return cap, ((cap - self.idle_w) / (watts - self.idle_w)) ** (1.0 / self.cap_speed_exponent)

    def _single_table(self, busy_w: tuple[float, ...], units: int, throttle: bool) -> PowerTable:
        pairs = [self._capped(w, throttle) for w in busy_w]
        return self._finish(pairs, {k: 1 for k in KINDS}, units)

    def _per_kind_table(self, chosen: Mapping[str, PowerCurve], units: int, throttle: bool) -> PowerTable:
        width = units + 1
        pairs = []
        for state in range(width * width):
            u_inf, u_train = state % width, state // width
            total = u_inf + u_train
            if total == 0:
                watts = self.idle_w
            elif total > units:
                watts = float("nan")  # unreachable: more busy slices than the GPU has
            elif u_train == 0:
                watts = chosen["inference"].busy_w[total]
            elif u_inf == 0:
                watts = chosen["training"].busy_w[total]
            else:
                dynamic = u_inf * (chosen["inference"].busy_w[total] - self.idle_w) + u_train * (
                    chosen["training"].busy_w[total] - self.idle_w
                )
                watts = self.idle_w + dynamic / total
            pairs.append(self._capped(watts, throttle) if watts == watts else (watts, 1.0))
        return self._finish(pairs, {"inference": 1, "training": width}, units)

    @staticmethod
    def _finish(pairs: list[tuple[float, float]], weights: dict[str, int], units: int) -> PowerTable:
        power = tuple(p for p, _ in pairs)
        speeds = tuple(s for _, s in pairs)
        return PowerTable(power, speeds if any(s < 1.0 for s in speeds) else None, weights, units)
