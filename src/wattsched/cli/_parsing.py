"""Argument-parser plumbing shared by every command group."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from wattsched.experiments.presets import Preset
    from wattsched.hardware.mig import MigGpu

__all__ = [
    "OneLineErrorParser",
    "add_gpu_option",
    "add_preset_options",
    "int_at_least",
    "positive_finite_float",
    "resolve_deadline_rule",
    "resolve_gpu",
    "resolve_preset",
]


class OneLineErrorParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line on stderr with exit status 2, like every other user error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"wattsched: error: {self.prog}: {message}\n")


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for whole numbers ``>= minimum`` (seeds: 0, counts: 1)."""
    rule = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {rule}, got '{text}'") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {rule}, got {value}")
        return value

    return parse


def positive_finite_float(text: str) -> float:
    """An argparse ``type`` for finite numbers > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def add_gpu_option(parser: argparse.ArgumentParser) -> None:
    """``--gpu NAME|FILE.toml`` (CONTRACT §7): a catalogue entry or file, default ``a100-40gb``."""
    parser.add_argument(
        "--gpu", default=None, metavar="NAME|FILE.toml",
        help="GPU: a catalogue name (see 'wattsched mig configs --list-gpus') or a catalogue .toml "
        "(default: a100-40gb)",
    )


def resolve_gpu(args: argparse.Namespace) -> MigGpu:
    """The GPU of ``--gpu`` (one-line errors: an unknown name lists the catalogue)."""
    from wattsched.hardware.catalogue import load_gpu

    return load_gpu(getattr(args, "gpu", None))


def add_preset_options(parser: argparse.ArgumentParser, *, default: str | None) -> None:
    """``--preset paper|literal`` (CONTRACT §4) and ``--deadline-rule p1|slice-aware``.

    Both are validated when resolved (one-line error, exit 2), so a bad value never reaches a simulation.
    ``default=None``: the command decides (e.g. ``mig evaluate`` takes the model's training workload).
    """
    where = f"default: {default}" if default else "default: see the command"
    parser.set_defaults(preset_default=default)
    parser.add_argument(
        "--preset", default=None, metavar="NAME",
        help="P1 reading (CONTRACT §4): paper (Fig. 5 days x2.5, 8 h Table II queues) or literal (x1, 24 h); "
        f"{where}",
    )
    parser.add_argument(
        "--deadline-rule", default=None, metavar="RULE",
        help="deadlines a + U(1, 1.5)·dur_ref: p1 (dur_7g, default) or slice-aware (dur_g for a uniformly "
        "drawn compute size g)",
    )


def resolve_preset(args: argparse.Namespace) -> Preset:
    """The preset of ``--preset``, else the command's default (an unknown name lists the valid ones)."""
    from wattsched.experiments.presets import get_preset

    return get_preset(args.preset if args.preset is not None else args.preset_default)


def resolve_deadline_rule(args: argparse.Namespace) -> str:
    """The deadline rule of ``--deadline-rule`` (default ``p1``), checked against the generator's rules."""
    from wattsched.errors import ConfigError
    from wattsched.workload.generators import DEADLINE_RULES

    rule = getattr(args, "deadline_rule", None)
    rule = "p1" if rule is None else rule
    if rule not in DEADLINE_RULES:
        raise ConfigError(f"unknown --deadline-rule '{rule}'; valid: {', '.join(DEADLINE_RULES)}")
    return str(rule)
