"""One strict build of the site per test session, shared by the build checks and the browser tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_fixtures import build_site, have_mkdocs


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of this tree, built with ``mkdocs build --strict`` (skips without the [docs] extra)."""
    if not have_mkdocs():
        pytest.skip("the [docs] extra (mkdocs, mkdocs-material, mkdocstrings) is missing")
    site = tmp_path_factory.mktemp("docs") / "site"
    done = build_site(site)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
    return site
