"""Progress on stderr (wattsched._progress): plain lines every few seconds when it is not a terminal."""

from __future__ import annotations

import io

import pytest

from wattsched._progress import Progress, duration_text


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_line_every_five_seconds_and_a_last_one() -> None:
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress("sweep", 400, "cell", stream=stream, clock=clock)
    for done in range(1, 401):
        clock.now += 0.18  # 400 cells in 72 s: a line at 5 s, 10 s, ...
        progress.update(done)
    lines = stream.getvalue().splitlines()
    # First line at the 28th cell (28 * 0.18 = 5.04 s): 7 %, 5 s elapsed, 372 * 0.18 = 66.96 s left.
    assert lines[0] == "sweep: 28/400 cells, 7 %, 5s elapsed, about 1m07s left"
    # 72 s / 5 s: 14 lines while running (at 5.04, 10.08, ... 70.56 s), then the last one at 100 %.
    assert len(lines) == 15 and lines[-1] == "sweep: 400/400 cells, 100 %, 1m12s elapsed"
    assert "\r" not in stream.getvalue()


def test_short_work_writes_nothing_and_a_resumed_run_counts_its_rate_from_now() -> None:
    clock, stream = FakeClock(), io.StringIO()
    quick = Progress("sweep", 10, "cell", stream=stream, clock=clock)
    for done in range(1, 11):
        clock.now += 0.1
        quick.update(done)
    assert stream.getvalue() == ""
    resumed = Progress("sweep", 400, "cell", done=300, stream=stream, clock=clock, interval_s=5.0)
    clock.now += 10.0
    resumed.update(310)  # 10 cells in 10 s: 90 left take 90 s
    assert stream.getvalue() == "sweep: 310/400 cells, 78 %, 10s elapsed, about 1m30s left\n"


def test_a_terminal_gets_a_bar_not_lines() -> None:
    stream = FakeTerminal()
    progress = Progress("cluster", 3, "job", stream=stream, clock=FakeClock(), interval_s=0.0)
    progress.update(3)
    text = stream.getvalue()
    assert "cluster" in text and "3/3" in text and "elapsed" not in text


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (45.4, "45s"), (72, "1m12s"), (7500, "2h05m")])
def test_duration_text(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_cluster_run_writes_progress_lines_to_a_log(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wattsched import _progress
    from wattsched.cli import main

    monkeypatch.setattr(_progress, "INTERVAL_S", 0.0)  # a line at every update of the run
    assert main(["cluster", "run", "--servers", "1", "--gpus-per-server", "2", "--placement", "first-fit",
                 "--partitioner", "static", "--policy", "edf-ss", "--rate", "1", "--hours", "1",
                 "--seed", "1", "--json"]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    jobs = int(__import__("json").loads(out)["jobs"])
    assert err.splitlines() == [f"cluster: {jobs}/{jobs} jobs, 100 %, 0s elapsed"]


def test_a_study_writes_progress_lines_to_a_log(
    tmp_path: object, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wattsched import _progress
    from wattsched.experiments.executors import LocalExecutor
    from wattsched.experiments.runner import run_study

    tests_dir = __import__("pathlib").Path(__file__).parent / "experiments"
    monkeypatch.syspath_prepend(str(tests_dir))
    from experiments_fakes import FakeStudy

    monkeypatch.setattr(_progress, "INTERVAL_S", 0.0)
    run_study(FakeStudy(cells=4), "quick", tmp_path, LocalExecutor(workers=1))  # type: ignore[arg-type]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == [f"fake: {n}/4 cells" for n in (1, 2, 3, 4)]
    assert lines[-1].startswith("fake: 4/4 cells, 100 %, ") and lines[-1].endswith(" elapsed")
