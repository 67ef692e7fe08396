"""Shared fixtures. Real data is read from the repository's ``data/`` folder (``data/README.md``); the few
files no licence lets the repository ship are looked for in ``data/`` and in ``../shared/data`` beside the
checkout, and the tests that need them skip, naming the file, when they are absent (also under ``CI=true``: a
CI checkout has no copy of them, unlike a missing Slurm, which fails there)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The data shipped with the repository.
REPO_DATA = REPO_ROOT / "data"
#: Where files that may not be redistributed are looked for, in order (same layout as ``data/``).
UNSHIPPED_DATA_DIRS = (REPO_DATA, REPO_ROOT.parent / "shared" / "data")

# The default run (CI) is derandomised so that it is reproducible; the slow run explores afresh each time.
settings.register_profile(
    "default",
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "slow", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def repo_data() -> Path:
    """The repository's ``data/`` folder."""
    return REPO_DATA


def unshipped_file(relative: str) -> Path:
    """The path of a data file the repository may not ship (``relative`` to a data folder, e.g.
    ``traces/openb_pod_list_default.csv``); skips the calling test, with the reason, when no copy is found."""
    for folder in UNSHIPPED_DATA_DIRS:
        if (folder / relative).is_file():
            return folder / relative
    pytest.skip(
        f"needs data/{relative} or ../shared/data/{relative} (not redistributable: no licence; "
        "data/README.md says where to get it)"
    )


@pytest.fixture(scope="session")
def unshipped() -> Callable[[str], Path]:
    """:func:`unshipped_file`, for tests: ``unshipped("traces/openb_pod_list_default.csv")``."""
    return unshipped_file


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Trained models cached by the tests (``wattsched.rl.cache``) go to a folder of this run, never to the
    user's cache; subprocesses inherit it. The Slurm root filesystems stay where they were (the user's cache,
    or CI's): each takes a minute to build, and one built by a test worker serves the others (its build is
    locked across processes)."""
    from wattsched.slurm.roots import root_path

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WATTSCHED_SLURM_ROOTS", str(root_path("any").parent))
        patch.setenv("WATTSCHED_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield
