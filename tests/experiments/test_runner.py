from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from experiments_fakes import FakeCell, FakeStudy, executed, fake_rows

from wattsched.errors import ConfigError
from wattsched.experiments import runner
from wattsched.experiments.executors import CellFailedError, LocalExecutor, RayExecutor
from wattsched.experiments.runner import reproduce, run_study
from wattsched.registry import Registry

HERE = Path(__file__).resolve().parent
KEYS = [f"c{i:03d}" for i in range(12)]
TINY_TABLE2 = {
    "table2": {"iterations": 1, "hours": 0.5, "configurations": [1, 4], "policies": ["edf-ss", "llf"]}
}


def parquet_bytes(out: Path, study: str = "fake") -> bytes:
    return (out / "raw" / f"{study}.parquet").read_bytes()


def test_rows_are_ordered_by_cell_whatever_the_completion_order(tmp_path: Path) -> None:
    run = run_study(FakeStudy(), "quick", tmp_path, LocalExecutor(workers=2), progress=False)
    assert (run.cells, run.executed, run.skipped) == (12, 12, 0)
    assert list(run.rows["cell"].unique()) == KEYS
    assert run.rows["value"].tolist() == [r["value"] for i in range(12) for r in fake_rows(FakeCell(i, 7))]


def test_resume_after_a_failure_runs_only_the_missing_cells(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    run_study(FakeStudy(), "quick", reference, LocalExecutor(workers=1), progress=False)

    out, logs = tmp_path / "out", tmp_path / "logs"
    logs.mkdir()
    with pytest.raises(CellFailedError, match="c007"):
        run_study(
            FakeStudy(log_dir=str(logs), fail_at="c007"),
            "quick",
            out,
            LocalExecutor(workers=1),
            flush_every_s=3600,
            progress=False,
        )
    assert executed(logs) == KEYS[:8]  # c000..c006 finished, c007 raised
    assert not (out / "raw" / "fake.parquet").exists()

    (logs / "executed.log").unlink()
    run = run_study(FakeStudy(log_dir=str(logs)), "quick", out, LocalExecutor(workers=1), progress=False)
    assert executed(logs) == KEYS[7:]  # only the 5 missing cells ran again
    assert (run.executed, run.skipped) == (5, 7)
    assert parquet_bytes(out) == parquet_bytes(reference)

    (logs / "executed.log").unlink()
    again = run_study(FakeStudy(log_dir=str(logs)), "quick", out, LocalExecutor(workers=2), progress=False)
    assert executed(logs) == [] and again.skipped == 12


KILL_SCRIPT = """
import sys
sys.path.insert(0, {here!r})
from experiments_fakes import FakeStudy
from wattsched.experiments.executors import LocalExecutor
from wattsched.experiments.runner import run_study
run_study(FakeStudy(log_dir={logs!r}, kill_at="c009"), "quick", {out!r}, LocalExecutor(workers=1),
          flush_every_cells=1, progress=False)
"""


def test_a_sigkilled_sweep_resumes_where_it_stopped(tmp_path: Path) -> None:
    out, logs = tmp_path / "out", tmp_path / "logs"
    logs.mkdir()
    script = KILL_SCRIPT.format(here=str(HERE), logs=str(logs), out=str(out))
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert killed.returncode == -9, killed.stderr.decode()
    assert executed(logs) == KEYS[:10]  # the process died inside c009

    (logs / "executed.log").unlink()
    run = run_study(FakeStudy(log_dir=str(logs)), "quick", out, LocalExecutor(workers=2), progress=False)
    assert sorted(executed(logs)) == KEYS[9:]
    reference = tmp_path / "reference"
    run_study(FakeStudy(), "quick", reference, LocalExecutor(workers=2), progress=False)
    assert run.skipped == 9 and parquet_bytes(out) == parquet_bytes(reference)


INTERRUPT_SCRIPT = """
import signal
import sys
# A process started in the background by a shell without job control inherits SIGINT ignored; Ctrl-C's
# default handler is what this test needs.
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {here!r})
from experiments_fakes import FakeStudy
from wattsched.experiments.executors import LocalExecutor
from wattsched.experiments.runner import run_study
try:
    run_study(FakeStudy(log_dir={logs!r}, interrupt_at="c005"), "quick", {out!r}, LocalExecutor(workers=1),
              flush_every_cells=1, progress=False)
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(0)
"""


def test_a_sigint_interrupted_sweep_keeps_its_finished_cells(tmp_path: Path) -> None:
    out, logs = tmp_path / "out", tmp_path / "logs"
    logs.mkdir()
    script = INTERRUPT_SCRIPT.format(here=str(HERE), logs=str(logs), out=str(out))
    interrupted = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert interrupted.returncode == 130, interrupted.stderr.decode()
    assert executed(logs) == KEYS[:6]  # Ctrl-C arrived inside c005
    assert not (out / "raw" / "fake.parquet").exists()  # no final result from an interrupted sweep

    (logs / "executed.log").unlink()
    run = run_study(FakeStudy(log_dir=str(logs)), "quick", out, LocalExecutor(workers=2), progress=False)
    assert run.skipped == 5 and sorted(executed(logs)) == KEYS[5:]  # c000..c004 were kept
    reference = tmp_path / "reference"
    run_study(FakeStudy(), "quick", reference, LocalExecutor(workers=2), progress=False)
    assert parquet_bytes(out) == parquet_bytes(reference)


def test_reproduce_writes_outputs_deterministically(tmp_path: Path) -> None:
    first = reproduce(tmp_path / "a", "quick", only=["fake"], workers=2, progress=False)
    reproduce(tmp_path / "b", "quick", only=["fake"], workers=1, progress=False)
    for name in ("summary.json", "report.md", "raw/fake.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary == first.summary and summary["fake"]["rows"] == 36
    timings = json.loads((tmp_path / "a" / "timings.json").read_text())
    assert timings["fake"]["executed"] == 12 and timings["fake"]["workers"] == 2


def test_reproduce_options_and_unknown_names(tmp_path: Path) -> None:
    result = reproduce(
        tmp_path, "quick", only=["fake"], study_options={"fake": {"iterations": 2}}, workers=1, progress=False
    )
    assert result.summary["fake"]["rows"] == 6
    with pytest.raises(ConfigError, match="unknown study 'nope'"):
        reproduce(tmp_path, "quick", only=["nope"])
    with pytest.raises(ConfigError, match=r"unknown option 'colour' for study 'fake'; valid: .*iterations"):
        reproduce(tmp_path, "quick", only=["fake"], study_options={"fake": {"colour": "red"}})
    with pytest.raises(ConfigError, match="needs --executor ray"):
        reproduce(tmp_path, "quick", only=["fake"], ray_address="127.0.0.1:6379")


def test_reproduce_without_registered_studies_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runner imports no study: with an empty registry it names what is missing instead of writing nothing.
    monkeypatch.setattr(runner, "STUDIES", Registry("study"))
    with pytest.raises(ConfigError, match="no study is registered"):
        reproduce(tmp_path, "quick")
    assert not any(tmp_path.iterdir())


def test_the_experiment_library_imports_no_study() -> None:
    # Every module of wattsched.experiments and the HTML page it writes, in a fresh interpreter.
    code = (
        "import importlib, pkgutil, sys, wattsched.experiments as ex\n"
        "for m in pkgutil.iter_modules(ex.__path__): importlib.import_module(f'{ex.__name__}.{m.name}')\n"
        "import wattsched.viz.html\n"
        "print(sorted(m for m in sys.modules if m.startswith('wattsched.studies')))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


@pytest.mark.ray
def test_ray_and_local_executors_give_identical_results(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    import ray

    import wattsched.studies  # noqa: F401  (registers table2)

    executor = RayExecutor(workers=2)  # starts a real local Ray instance
    try:
        cells = [FakeCell(i, 3) for i in range(6)]
        got = {cells[i].key: rows for i, rows in executor.run(FakeStudy().run_cell, cells)}
        assert got == {cell.key: fake_rows(cell) for cell in cells}
        with pytest.raises(CellFailedError, match="c002"):
            list(executor.run(FakeStudy(fail_at="c002").run_cell, cells))
        # the whole pipeline, reusing the running instance: the fake study and Table II at a tiny scale
        reproduce(
            tmp_path / "ray",
            "quick",
            only=["fake", "table2"],
            executor="ray",
            workers=2,
            study_options=TINY_TABLE2,
            progress=False,
        )
    finally:
        executor.close()
    assert not ray.is_initialized()
    reproduce(
        tmp_path / "local",
        "quick",
        only=["fake", "table2"],
        executor="local",
        workers=2,
        study_options=TINY_TABLE2,
        progress=False,
    )
    for name in ("summary.json", "raw/fake.parquet", "raw/table2.parquet"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
