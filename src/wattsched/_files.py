"""Files written whole: through a temporary file in the target's folder, then a rename; and the user's cache
folder (:func:`cache_dir`), kept here, free of heavy imports, for the programs Slurm runs.

A temporary file is made with mode 0600 (``tempfile.mkstemp``); :func:`publish` gives it the mode a plain
``open()`` would have given (0666 less the user's umask) before renaming it into place, so that what
wattsched writes is as readable as any other file the user makes.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "publish"]


def cache_dir() -> Path:
    """``$WATTSCHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/wattsched``, else ``~/.cache/wattsched``."""
    given = os.environ.get("WATTSCHED_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wattsched"


def _umask() -> int:
    # Reading the umask means setting it: done once, at import, rather than in a writer that may run beside
    # other threads creating files (which would see the temporary 0 mask).
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def publish(temp: str | Path, target: str | Path) -> None:
    """Give the finished temporary file ``temp`` the user's default file mode and rename it to ``target``."""
    os.chmod(temp, 0o666 & ~_UMASK)
    os.replace(temp, target)
