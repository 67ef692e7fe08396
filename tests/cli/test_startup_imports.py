"""Start-up (issue 13 item 5), not timed: the CLI imports the heavy libraries only where a command uses them.

Each check runs in a fresh interpreter and reads ``sys.modules`` after the command; the time itself is
measured by ``benchmarks/bench_startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "pyarrow", "matplotlib", "scipy", "plotly", "torch", "ray", "stable_baselines3", "tqdm")
PROBE = """
import contextlib, io, json, sys
from wattsched.cli import main
out = io.StringIO()
code = None
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as stop:
        code = stop.code
heavy = sorted(name for name in {heavy} if name in sys.modules)
print(json.dumps({{"code": code, "heavy": heavy, "out": out.getvalue()}}))
"""


def loaded(argv: list[str]) -> dict[str, object]:
    """Exit status, heavy modules imported and stdout of ``wattsched argv`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=repr(HEAVY)), *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_import_of_the_package_and_the_cli_is_light() -> None:
    code = f"import sys, wattsched, wattsched.cli; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["mig", "--help"],
        ["dvfs", "run", "--help"],
        ["mig", "run", "--help"],
        ["mig", "configs", "--json"],
    ],
)
def test_help_and_listing_import_no_heavy_library(argv: list[str]) -> None:
    probe = loaded(argv)
    assert probe["code"] == 0
    assert probe["heavy"] == [], probe["heavy"]
    assert probe["out"]


def test_mig_run_json_imports_no_heavy_library() -> None:
    probe = loaded(
        [
            "mig",
            "run",
            "--config",
            "3",
            "--policy",
            "edf-fs",
            "--rate",
            "0.2",
            "--hours",
            "1",
            "--seed",
            "1",
            "--json",
        ]
    )
    assert probe["code"] == 0
    assert probe["heavy"] == []
    assert json.loads(str(probe["out"]))["jobs"] > 0


def test_a_command_that_needs_pandas_still_gets_it(tmp_path: object) -> None:
    out = f"{tmp_path}/t.csv"
    probe = loaded(["mig", "generate", "--rate", "0.2", "--hours", "1", "-o", out])
    assert probe["code"] == 0 and "pandas" in probe["heavy"]  # lazy, not removed


def test_public_names_resolve_lazily() -> None:
    code = (
        "import sys, wattsched.experiments as ex; before = 'pandas' in sys.modules; "
        "from wattsched.experiments import StudyStore; "
        "print(before, 'pandas' in sys.modules, callable(StudyStore), 'StudyStore' in dir(ex))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True", "True"]
