"""Writing a command's output: a file's suffix checked before any work, written atomically, one-line errors;
JSON in one style everywhere (:func:`json_text`)."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

from wattsched._files import publish
from wattsched._progress import Progress
from wattsched.errors import ConfigError, InputError

__all__ = ["check_suffix", "check_writable", "json_text", "print_json", "progress_bar", "write_text"]


def check_suffix(path: str, suffixes: tuple[str, ...], option: str = "-o") -> None:
    """ConfigError unless ``path`` ends with one of ``suffixes`` (checked before any work is done)."""
    if not path.lower().endswith(suffixes):
        raise ConfigError(f"{option} {path}: expected a file ending in {' or '.join(suffixes)}")


def check_writable(path: str) -> None:
    """InputError unless ``path`` could be written: not a directory, in a folder that exists (checked before
    any work, so that a long run never ends in a write error)."""
    target = Path(path)
    if target.is_dir():
        raise InputError("cannot write: the path is a directory, expected a file", path=path)
    if not target.parent.is_dir():
        raise InputError("cannot write: the folder does not exist", path=path)


def write_text(path: str, text: str) -> None:
    """Write ``text`` through a temporary file in the target folder and a rename (no partial file)."""
    target = Path(path)
    if target.is_dir():
        raise InputError("cannot write: the path is a directory", path=path)
    import tempfile

    try:
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError("cannot write: the folder does not exist", path=path) from None
    except PermissionError:
        raise InputError("cannot write: permission denied in the folder", path=path) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        publish(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def json_text(value: object) -> str:
    """The one JSON style of every command: one line, keys sorted, a non-finite number written as ``null``
    (JSON has no NaN or infinity), ending in a newline. Tuples become lists, keys become text."""
    return json.dumps(_plain(value), sort_keys=True, allow_nan=False) + "\n"


def print_json(value: object) -> None:
    """Write :func:`json_text` of ``value`` to stdout."""
    sys.stdout.write(json_text(value))


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and callable(value.item) and type(value).__module__ == "numpy":
        return _plain(value.item())  # numpy scalars
    return value


def progress_bar(total: int, unit: str, desc: str) -> Callable[[int], None]:
    """Progress on stderr as a callback taking the count done so far (closed when it reaches ``total``): a
    bar on a terminal, else a plain line every few seconds (:class:`wattsched._progress.Progress`)."""
    return Progress(desc, total, unit).update
