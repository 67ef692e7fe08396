"""Reading catalogue TOML files: one reader, one error shape (file and dotted field in every message).

Every hardware fact file goes through :func:`read_toml` and a :class:`Table`, so a wrong value anywhere says
the
same thing: ``FILE: field 'power.idle_w': expected a number >= 0, got -3``. Unknown keys are errors too (a
typo
must not silently fall back to a default).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wattsched.errors import InputError

__all__ = ["CatalogueError", "Table", "read_toml"]


class CatalogueError(InputError):
    """A catalogue file that cannot be read or is invalid; names the file and the dotted field."""

    def __init__(self, message: str, *, path: str, field: str | None = None) -> None:
        self.field = field
        text = f"field '{field}': {message}" if field else message
        super().__init__(text, path=path)


def read_toml(text_or_path: str | Path, *, where: str | None = None, is_text: bool = False) -> dict[str, Any]:
    """Parse a TOML file (or ``text`` when ``is_text``); every failure is a :class:`CatalogueError`."""
    label = where if where is not None else str(text_or_path)
    if is_text:
        text = str(text_or_path)
    else:
        path = Path(text_or_path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CatalogueError("file not found", path=label) from None
        except IsADirectoryError:
            raise CatalogueError("is a directory, not a file", path=label) from None
        except UnicodeDecodeError as exc:
            raise CatalogueError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=label) from None
        except OSError as exc:
            raise CatalogueError(f"cannot read: {exc.strerror}", path=label) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"invalid TOML: {' '.join(str(exc).split())}", path=label) from None


class Table:
    """A TOML table with typed, validated accessors; ``prefix`` is its dotted name for messages."""

    def __init__(self, data: Any, where: str, prefix: str = "") -> None:
        if not isinstance(data, dict):
            raise CatalogueError(
                f"expected a table, got {type(data).__name__}", path=where, field=prefix or None
            )
        self.data: dict[str, Any] = data
        self.where = where
        self.prefix = prefix

    def field(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def error(self, key: str, message: str) -> CatalogueError:
        return CatalogueError(message, path=self.where, field=self.field(key))

    def check_keys(self, allowed: Iterable[str]) -> None:
        """Reject keys outside ``allowed`` (typos must not fall back to defaults)."""
        allowed = set(allowed)
        unknown = sorted(k for k in self.data if k not in allowed)
        if unknown:
            raise CatalogueError(
                f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}",
                path=self.where,
                field=self.prefix or None,
            )

    def has(self, key: str) -> bool:
        return key in self.data

    def table(self, key: str, *, required: bool = True) -> Table | None:
        if key not in self.data:
            if required:
                raise self.error(key, "missing table")
            return None
        return Table(self.data[key], self.where, self.field(key))

    def tables(self, key: str) -> list[Table]:
        """An array of tables (``[[key]]``)."""
        value = self.data.get(key)
        if not isinstance(value, list) or not value:
            raise self.error(key, "missing or empty array of tables")
        return [Table(item, self.where, f"{self.field(key)}[{i}]") for i, item in enumerate(value)]

    def string(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str) or not value:
            raise self.error(key, f"expected a non-empty string, got {value!r}")
        return value

    def boolean(self, key: str, default: bool | None = None) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def integer(
        self, key: str, default: int | None = None, *, low: int | None = None, high: int | None = None
    ) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {value!r}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.error(key, f"expected an integer in [{low}, {high}], got {value}")
        return value

    def number(
        self,
        key: str,
        default: float | None = None,
        *,
        low: float | None = None,
        high: float | None = None,
        positive: bool = False,
    ) -> float:
        value = self.data.get(key, default)
        return _number(value, self, key, low, high, positive)

    def numbers(
        self, key: str, *, length: int | None = None, low: float | None = None, positive: bool = False
    ) -> tuple[float, ...]:
        value = self.data.get(key)
        if not isinstance(value, list) or not value:
            raise self.error(key, f"expected a non-empty list of numbers, got {value!r}")
        if length is not None and len(value) != length:
            raise self.error(key, f"expected {length} values, got {len(value)}")
        return tuple(_number(v, self, key, low, None, positive) for v in value)

    def integers(self, key: str) -> tuple[int, ...]:
        value = self.data.get(key)
        if (
            not isinstance(value, list)
            or not value
            or any(isinstance(v, bool) or not isinstance(v, int) for v in value)
        ):
            raise self.error(key, f"expected a non-empty list of integers, got {value!r}")
        return tuple(value)

    def strings(self, key: str, default: list[str] | None = None) -> tuple[str, ...]:
        value = self.data.get(key, default)
        if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
            raise self.error(key, f"expected a list of strings, got {value!r}")
        return tuple(value)


def _number(
    value: Any, table: Table, key: str, low: float | None, high: float | None, positive: bool
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise table.error(key, f"expected a finite number, got {value!r}")
    if positive and value <= 0:
        raise table.error(key, f"expected a number > 0, got {value!r}")
    if low is not None and value < low:
        raise table.error(key, f"expected a number >= {low:g}, got {value!r}")
    if high is not None and value > high:
        raise table.error(key, f"expected a number <= {high:g}, got {value!r}")
    return float(value)
