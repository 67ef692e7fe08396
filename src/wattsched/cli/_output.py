"""Writing a command's output file: suffix checked before any work, written atomically, one-line errors."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from wattsched.errors import ConfigError, InputError

__all__ = ["check_suffix", "write_text"]


def check_suffix(path: str, suffixes: tuple[str, ...], option: str = "-o") -> None:
    """ConfigError unless ``path`` ends with one of ``suffixes`` (checked before any work is done)."""
    if not path.lower().endswith(suffixes):
        raise ConfigError(f"{option} {path}: expected a file ending in {' or '.join(suffixes)}")


def write_text(path: str, text: str) -> None:
    """Write ``text`` through a temporary file in the target folder and a rename (no partial file)."""
    target = Path(path)
    if target.is_dir():
        raise InputError("cannot write: the path is a directory", path=path)
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError("cannot write: the folder does not exist", path=path) from None
    except PermissionError:
        raise InputError("cannot write: permission denied in the folder", path=path) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
