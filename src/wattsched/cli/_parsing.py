"""Argument-parser plumbing shared by every command group."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["OneLineErrorParser"]


class OneLineErrorParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line on stderr with exit status 2, like every other user error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"wattsched: error: {self.prog}: {message}\n")
