"""Exception types. Every error a user can cause is a :class:`WattschedError`.

The CLI prints ``str(error)`` on one line and exits with status 2, so messages must say what was
expected, what arrived, and where (file, row, column) when that is known.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ConfigError", "InputError", "UnknownNameError", "WattschedError", "did_you_mean"]


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the name of ``valid`` closest to ``name``, or ``""`` when none is close
    (:func:`difflib.get_close_matches`, cutoff 0.6)."""
    import difflib  # only when a name is wrong: difflib costs start-up

    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class WattschedError(Exception):
    """Base class for every error a user of wattsched can cause."""


class InputError(WattschedError, ValueError):
    """A malformed input file or value.

    The message names the file, the 1-based data row (header excluded) and the column where known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        self.path = path
        self.row = row
        self.column = column
        self.reason = message
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column '{column}'")
        prefix = ": ".join([", ".join(where)]) + ": " if where else ""
        super().__init__(prefix + message)


class ConfigError(WattschedError, ValueError):
    """An invalid configuration value (CLI option, study file, model parameter)."""


class UnknownNameError(WattschedError, KeyError):
    """A name that is not in a registry; the message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = valid
        super().__init__(
            f"unknown {kind} '{name}'{did_you_mean(name, valid)}; valid names: {', '.join(sorted(valid))}"
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])
