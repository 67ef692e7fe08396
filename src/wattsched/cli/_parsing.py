"""Argument-parser plumbing shared by every command group."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from wattsched.hardware.mig import MigGpu

__all__ = ["OneLineErrorParser", "add_gpu_option", "int_at_least", "positive_finite_float", "resolve_gpu"]


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
