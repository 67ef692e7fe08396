"""The P2 task generator (§B.5.2-B.5.3) and task files (CONTRACT §6): round trips and one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wattsched.dvfs.tasks import (
    TASK_COLUMNS,
    GeneratorSpec,
    generate_offline,
    generate_online,
    read_tasks,
    task_utilisation,
    tasks_to_frame,
    write_tasks,
)
from wattsched.errors import InputError


def test_offline_generator_ranges_and_utilisation() -> None:
    tasks = generate_offline(1.0, 2048, seed=1)
    assert len(tasks) == 2048 and np.all(tasks.arrival_s == 0)
    model = tasks.model
    p_star = model.default_power_w
    assert p_star.min() >= 175 - 1e-9 and p_star.max() <= 206 + 1e-9 and np.allclose(p_star, np.round(p_star))
    assert np.all((model.gamma_w / p_star >= 0.1) & (model.gamma_w / p_star <= 0.2))
    assert np.all((model.p0_w / p_star >= 0.2) & (model.p0_w / p_star <= 0.41))
    assert np.all((model.delta >= 0.07) & (model.delta <= 0.91))
    t_star_slots = model.default_time_s / 60.0
    assert t_star_slots.min() >= 1.76 * 10 and t_star_slots.max() <= 8.56 * 50
    assert t_star_slots.mean() == pytest.approx(155, rel=0.05)  # papers.md: mean ~155 slots
    u = model.default_time_s / tasks.window_s
    assert u.min() >= 0.25 and u.max() <= 0.75
    assert task_utilisation(tasks, 2048) == pytest.approx(1.0, abs=0.03)


def test_online_generator_initial_batch_and_exact_count() -> None:
    tasks = generate_online(1.6, 2048, seed=2)
    slots = tasks.arrival_s / 60.0
    assert np.sum(slots == 0) == 819  # floor(0.4 x 2048)
    assert np.sum(slots > 0) == round(1.6 * 2048)  # resampled to sum exactly to n
    assert slots.max() <= 1439 and np.allclose(slots, np.round(slots))
    assert task_utilisation(tasks, 2048) == pytest.approx(1.6, abs=0.05)
    u = tasks.model.default_time_s / tasks.window_s
    assert u.min() >= 0.15 and u.max() <= 0.85


def test_generators_are_deterministic_per_seed_and_scale_with_slot() -> None:
    a, b = generate_online(0.4, 256, 9), generate_online(0.4, 256, 9)
    pd.testing.assert_frame_equal(tasks_to_frame(a), tasks_to_frame(b))
    assert not tasks_to_frame(generate_online(0.4, 256, 10)).equals(tasks_to_frame(a))
    fast = generate_offline(0.5, 64, 3, GeneratorSpec(slot_s=1.0))
    slow = generate_offline(0.5, 64, 3)
    np.testing.assert_allclose(slow.model.d_s, 60 * fast.model.d_s)
    np.testing.assert_allclose(slow.deadline_s, 60 * fast.deadline_s)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    tasks = generate_online(0.2, 64, 4, GeneratorSpec(horizon_slots=100))
    path = tmp_path / f"tasks{suffix}"
    write_tasks(tasks, path)
    back = read_tasks(path)
    assert back.task_id == tasks.task_id
    pd.testing.assert_frame_equal(tasks_to_frame(back), tasks_to_frame(tasks))
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind


def _write(tmp_path: Path, frame: pd.DataFrame) -> Path:
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    return path


def _good() -> pd.DataFrame:
    return tasks_to_frame(generate_offline(0.01, 300, 1))


@pytest.mark.parametrize(
    ("edit", "row", "column"),
    [
        (lambda f: f.drop(columns=["delta"]), None, "delta"),
        (lambda f: f.assign(c_w=f["c_w"].astype(object).where(f.index != 1, "abc")), 2, "c_w"),
        (lambda f: f.assign(t0_s=f["t0_s"].where(f.index != 0, np.nan)), 1, "t0_s"),
        (lambda f: f.assign(d_s=f["d_s"].where(f.index != 2, -1.0)), 3, "d_s"),
        (
            lambda f: f.assign(deadline_s=f["deadline_s"].where(f.index != 1, 0.0), arrival_s=1.0),
            2,
            "deadline_s",
        ),
        (lambda f: f.assign(task_id=["a", "b", "a"]), 3, "task_id"),
        (lambda f: f.assign(delta=f["delta"].where(f.index != 0, 1.5)), 1, "delta"),
    ],
)
def test_bad_rows_name_file_row_and_column(
    tmp_path: Path, edit: Callable[[pd.DataFrame], pd.DataFrame], row: int | None, column: str
) -> None:
    frame = edit(_good().head(3))
    path = _write(tmp_path, frame)
    with pytest.raises(InputError) as info:
        read_tasks(path)
    error = info.value
    assert error.path == str(path) and error.column == column and error.row == row
    assert "\n" not in str(error) and str(path) in str(error)


def test_empty_and_bad_suffix(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        read_tasks(empty)
    header_only = tmp_path / "header.csv"
    header_only.write_text(",".join(TASK_COLUMNS) + "\n")
    with pytest.raises(InputError, match="no tasks"):
        read_tasks(header_only)
    with pytest.raises(InputError, match="unsupported file suffix"):
        read_tasks(tmp_path / "tasks.json")
    with pytest.raises(InputError, match="unsupported file suffix"):
        write_tasks(generate_offline(0.01, 100, 1), tmp_path / "tasks.txt")
