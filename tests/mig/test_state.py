"""The engine's job table (every column declared once) and forks that share no mutable state."""

from __future__ import annotations

import math

from wattsched.mig import MigSimulation
from wattsched.mig import simulator as simulator_module
from wattsched.mig._state import COLUMN_NAMES, NOT_ARRIVED, EngineState
from wattsched.workload.generators import WorkloadSpec, generate_jobs


def _state(n: int, record: bool = True) -> EngineState:
    return EngineState(
        record=record,
        jobs=[None] * n,
        rows=list(range(n)),
        deadline_s=[10.0 * j for j in range(n)],
        durations_s=[(1.0, 2.0)] * n,
        is_inference=[1] * n,
        weight=[1] * n,
    )


def test_columns_start_with_their_declared_values_and_append_keep_truncate_act_on_all() -> None:
    st = _state(3)
    assert set(COLUMN_NAMES) >= {"deadline_s", "remaining", "slice_of", "history", "jobs", "rows", "weight"}
    assert st.remaining == [1.0] * 3 and st.slice_of == [NOT_ARRIVED] * 3 and st.history == [[], [], []]
    assert st.history[0] is not st.history[1]  # one list per job
    assert all(math.isnan(c) for c in st.completed_at_s)
    st.append(jobs=None, rows=3, deadline_s=30.0, durations_s=(1.0, 2.0), is_inference=0, weight=2)
    assert all(len(getattr(st, name)) == 4 for name in COLUMN_NAMES)
    assert st.weight == [1, 1, 1, 2] and st.finish_s[3] == math.inf and st.history[3] == []
    st.keep_rows([1, 3])
    assert st.deadline_s == [10.0, 30.0] and st.rows == [1, 3]
    assert all(len(getattr(st, name)) == 2 for name in COLUMN_NAMES)
    st.truncate(1)
    assert all(len(getattr(st, name)) == 1 for name in COLUMN_NAMES)
    bare = _state(2, record=False)
    assert bare.history is None
    bare.append(jobs=None, rows=2, deadline_s=1.0, durations_s=(1.0, 2.0), is_inference=0, weight=1)
    assert bare.history is None and len(bare) == 3


def _mid_run() -> MigSimulation:
    jobs = generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=2.0), 3)
    sim = MigSimulation(jobs, 3, "llf", record_jobs=True)
    for _ in range(60):
        sim.advance()
    return sim


def test_a_fork_shares_no_column_with_its_parent() -> None:
    sim = _mid_run()
    parent = sim._state
    before = {name: list(getattr(parent, name)) for name in COLUMN_NAMES}
    cells = [list(h) for h in parent.history or []]
    fork = sim.fork()._state
    for name in COLUMN_NAMES:
        column = getattr(fork, name)
        assert column is not getattr(parent, name), name
        column[0] = "changed"
        column.append("added")
        assert getattr(parent, name) == before[name], name
    assert sim._state.history is not None
    fork_history = sim.fork()._state.history
    assert fork_history is not None
    for j, history in enumerate(fork_history):
        history.append((0.0, 0.0, 0, 0))
        assert parent.history is not None and parent.history[j] == cells[j]
    for name in EngineState.__slots__:  # the slices and the waiting queue too
        value = getattr(parent, name)
        if isinstance(value, list):
            assert getattr(fork, name) is not value, name


def test_a_fork_copies_every_attribute_not_declared_shared() -> None:
    sim = _mid_run()
    fork = sim.fork()
    for name in MigSimulation.__slots__:
        value = getattr(sim, name)
        if name in simulator_module._SHARED or isinstance(value, int | float | str | tuple | type(None)):
            continue
        if hasattr(value, "copy") or isinstance(value, list | set | dict):
            assert getattr(fork, name) is not value, name
    fork.add_job(generate_jobs(WorkloadSpec(rate_per_min=1.0, hours=1.0), 9)[0], fork.now_s + 10_000.0)
    assert len(fork._state) == len(sim._state) + 1


def test_every_attribute_of_a_simulation_is_declared_and_set() -> None:
    sim = _mid_run()
    assert set(MigSimulation.__slots__) == set(MigSimulation.__annotations__)
    for other in (sim, sim.fork(arrived_only=True)):
        assert not hasattr(other, "__dict__")
        for name in MigSimulation.__slots__:
            getattr(other, name)  # set (an unset slot raises AttributeError)
