"""Shared by the documentation tests: where the site's sources are, and how to build the site."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SRC = ROOT / "src"
MKDOCS_YML = ROOT / "mkdocs.yml"


def load_hooks() -> ModuleType:
    """The site's build hook module (``docs/hooks/reference.py``), imported from its file."""
    spec = importlib.util.spec_from_file_location("wattsched_docs_hooks", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_site(site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of this tree into ``site`` (the running interpreter's mkdocs)."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(MKDOCS_YML),
            "--site-dir",
            str(site),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def have_mkdocs() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("mkdocs", "material", "mkdocstrings"))


def bash() -> str | None:
    return shutil.which("bash")
