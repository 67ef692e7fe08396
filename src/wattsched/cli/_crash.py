"""Crash reports: what an unexpected exception leaves behind for a bug report.

The CLI prints one line naming the report and exits 1; the report holds the traceback, the version (package
and code digest), Python, the platform and the command line. Reports go to ``$WATTSCHED_CRASH_DIR`` when set,
else the system's temporary folder.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CRASH_DIR_ENV", "write_crash_report"]

#: Environment variable naming the folder crash reports are written to.
CRASH_DIR_ENV = "WATTSCHED_CRASH_DIR"


def write_crash_report(error: BaseException, argv: Sequence[str], version: str) -> Path:
    """Write the report of ``error`` (raised by ``wattsched argv``) and return its path."""
    folder = Path(os.environ.get(CRASH_DIR_ENV) or tempfile.gettempdir())
    stamp = time.strftime("%Y%m%dT%H%M%S")
    try:
        from wattsched.experiments.store import code_version

        code = code_version()
    except Exception as exc:  # the report must be written even if the package is broken
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
