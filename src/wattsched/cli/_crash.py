"""Crash reports: what an unexpected exception leaves behind for a bug report.

The CLI prints one line naming the report and exits 1; the report holds the traceback, the version
(package and a digest of its source), Python, the platform and the command line. Reports go to
``$WATTSCHED_CRASH_DIR`` when set, else the system's temporary folder.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CRASH_DIR_ENV", "source_digest", "write_crash_report"]

#: Environment variable naming the folder crash reports are written to.
CRASH_DIR_ENV = "WATTSCHED_CRASH_DIR"


def source_digest() -> str:
    """SHA-256 (first 16 hex digits) of the package's ``*.py`` files, relative path and bytes in path order:
    tells apart two installs of the same version with different code."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def write_crash_report(error: BaseException, argv: Sequence[str], version: str) -> Path:
    """Write the report of ``error`` (raised by ``wattsched argv``) and return its path."""
    folder = Path(os.environ.get(CRASH_DIR_ENV) or tempfile.gettempdir())
    stamp = time.strftime("%Y%m%dT%H%M%S")
    try:
        code = source_digest()
    except OSError as exc:  # the report must be written even if the package cannot be read
        code = f"unknown ({type(exc).__name__})"
    text = "\n".join(
        [
            "wattsched crash report",
            f"version: {version}",
            f"code: {code}",
            f"python: {sys.version.split()[0]} ({sys.executable})",
            f"platform: {platform.platform()}",
            f"command: wattsched {shlex.join(argv)}",
            f"cwd: {os.getcwd()}",
            "",
            "".join(traceback.format_exception(error)),
        ]
    )
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f"wattsched-crash-{stamp}-", suffix=".txt", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    return Path(name)
