from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from experiments_fakes import FakeCell, fake_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.errors import ConfigError
from wattsched.experiments import store as store_module
from wattsched.experiments.store import CELL_COLUMN, StudyStore, atomic_write_text, cell_fingerprint

CELLS = [FakeCell(i, 1) for i in range(5)]
FPS = {cell.key: cell_fingerprint(cell, "test") for cell in CELLS}


def finished(cells):
    return [(c.key, FPS[c.key], fake_rows(c)) for c in cells]


def test_roundtrip_orders_rows_by_requested_keys(tmp_path: Path) -> None:
    store = StudyStore(tmp_path, "s", "quick")
    store.append(finished([CELLS[3], CELLS[0]]))
    store.append(finished([CELLS[1]]))
    assert store.done(FPS) == {"c000", "c001", "c003"}
    rows = store.load(["c000", "c001", "c003"])
    assert list(rows[CELL_COLUMN]) == ["c000"] * 3 + ["c001"] * 3 + ["c003"] * 3
    assert list(rows["part"]) == [0, 1, 2] * 3  # rows of a cell keep the cell's order
    assert rows["value"].tolist()[:3] == [r["value"] for r in fake_rows(CELLS[0])]
    # a new store object (a new process) sees the same state through the manifest
    assert StudyStore(tmp_path, "s", "quick").done(FPS) == {"c000", "c001", "c003"}


def test_changed_cell_fingerprint_is_not_done(tmp_path: Path) -> None:
    store = StudyStore(tmp_path, "s", "quick")
    store.append(finished(CELLS[:2]))
    changed = dict(FPS, c001=cell_fingerprint(FakeCell(1, 2), "test"))
    assert store.done(changed) == {"c000"}


def test_unnamed_part_files_are_leftovers_and_removed(tmp_path: Path) -> None:
    store = StudyStore(tmp_path, "s", "quick")
    store.append(finished(CELLS[:1]))
    # A kill after writing a part file but before the manifest named it: the cell is not done.
    orphan = store.parts_dir / "part-000099.parquet"
    pd.DataFrame({CELL_COLUMN: ["c004"], "value": [1.0]}).to_parquet(orphan)
    (store.parts_dir / ".part-000100.parquet.x.tmp").write_bytes(b"half a file")
    reopened = StudyStore(tmp_path, "s", "quick")
    assert reopened.done(FPS) == {"c000"}
    assert sorted(p.name for p in reopened.parts_dir.iterdir()) == ["part-000001.parquet"]


def test_corrupt_manifest_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "s.manifest.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"s\.manifest\.json: unreadable result manifest"):
        StudyStore(tmp_path, "s", "quick")


def test_finalize_writes_ordered_parquet_and_compacts(tmp_path: Path) -> None:
    store = StudyStore(tmp_path, "s", "paper")
    for cell in reversed(CELLS):
        store.append(finished([cell]))
    rows = store.finalize(FPS)
    on_disk = pq.read_table(store.result_path).to_pandas()
    pd.testing.assert_frame_equal(rows, on_disk)
    assert list(on_disk[CELL_COLUMN].unique()) == [c.key for c in CELLS]
    assert [p.name for p in store.parts_dir.iterdir()] == ["part-000006.parquet"]
    manifest = json.loads(store.manifest_path.read_text())
    assert manifest["cells_done"] == sorted(FPS) and manifest["scale"] == "paper"
    assert StudyStore(tmp_path, "s", "paper").done(FPS) == set(FPS)


def test_finalize_refuses_missing_cells(tmp_path: Path) -> None:
    store = StudyStore(tmp_path, "s", "quick")
    store.append(finished(CELLS[:2]))
    with pytest.raises(RuntimeError, match="3 cells are not stored"):
        store.finalize(FPS)


def test_atomic_write_keeps_the_old_file_when_the_move_fails(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "summary.json"
    atomic_write_text(target, "old\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(store_module.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["summary.json"]  # the temporary file is gone too


@settings(max_examples=10)
@given(order=st.permutations(range(5)), cuts=st.sets(st.integers(1, 4)))
def test_any_batching_and_order_gives_the_same_file(order: list[int], cuts: set[int]) -> None:
    """However finished cells are batched and in whatever order they arrive, the result file is the same."""
    import tempfile

    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        reference = StudyStore(Path(first), "s", "quick")
        reference.append(finished(CELLS))
        reference.finalize(FPS)
        store = StudyStore(Path(second), "s", "quick")
        arrived = [CELLS[i] for i in order]
        bounds = [0, *sorted(cuts), 5]
        for start, stop in itertools.pairwise(bounds):
            store.append(finished(arrived[start:stop]))
        store.finalize(FPS)
        assert store.result_path.read_bytes() == reference.result_path.read_bytes()
