"""Session fixtures of the viz tests (a real reproduce run is made once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from viz_fixtures import make_small_reproduce


@pytest.fixture(scope="session")
def small_reproduce(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_small_reproduce(tmp_path_factory.mktemp("reproduce"))
