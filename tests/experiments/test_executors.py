from __future__ import annotations

import pytest
from experiments_fakes import FakeCell, FakeStudy, fake_rows

from wattsched.errors import ConfigError, UnknownNameError
from wattsched.experiments.executors import EXECUTORS, CellFailedError, LocalExecutor

CELLS = [FakeCell(i, 3) for i in range(8)]
EXPECTED = {cell.key: fake_rows(cell) for cell in CELLS}


def collect(executor, study, cells=CELLS):
    return {cells[index].key: rows for index, rows in executor.run(study.run_cell, cells)}


@pytest.mark.parametrize("workers", [1, 2])
def test_local_executor_returns_every_cell_once(workers: int) -> None:
    executor = LocalExecutor(workers=workers)
    assert collect(executor, FakeStudy()) == EXPECTED


def test_local_failure_names_the_cell_and_keeps_finished_ones() -> None:
    delivered = []
    with pytest.raises(CellFailedError, match=r"c005.*injected failure"):
        for index, _ in LocalExecutor(workers=1).run(FakeStudy(fail_at="c005").run_cell, CELLS):
            delivered.append(CELLS[index].key)
    assert delivered == ["c000", "c001", "c002", "c003", "c004"]  # serial: everything before c005


def test_pool_failure_raises_after_draining() -> None:
    with pytest.raises(CellFailedError, match="c003"):
        list(LocalExecutor(workers=2).run(FakeStudy(fail_at="c003").run_cell, CELLS))


def test_registry_and_worker_validation() -> None:
    assert EXECUTORS.available() == ["local", "ray"]
    with pytest.raises(UnknownNameError, match="valid names: local, ray"):
        EXECUTORS.make("dask")
    with pytest.raises(ConfigError, match="workers"):
        LocalExecutor(workers=0)
