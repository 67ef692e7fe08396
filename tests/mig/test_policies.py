"""Hand-computed schedules for each in-configuration policy (small traces, chosen durations).

Power P(u) for u busy units = 40, 119, 160, 205.3, 243.9, 247.7, 248.5, 248.5 W. Durations are given as
(1g, 2g, 3g, 4g, 7g, full); entries a configuration does not use are set large (9999) so a mistake shows.
Configuration 2 = [4g@0, 3g@4], 3 = [4g@0, 2g@4, 1g.10gb@6], 1 = [7g@0] (slices named by their
NVML memory-slot start).
"""

from __future__ import annotations

import pytest

from wattsched.mig import POLICIES, simulate
from wattsched.mig.policies import LeastAverageLaxityFirst, LeastLaxityFirst
from wattsched.workload.job import Job, JobKind, Scaling

BIG = 9999.0


def job(
    name: str,
    arrival: float,
    deadline: float,
    *,
    d1: float = BIG,
    d2: float = BIG,
    d3: float = BIG,
    d4: float = BIG,
    d7: float = BIG,
    full: float = BIG,
    scaling: Scaling = Scaling.MEASURED,
) -> Job:
    return Job(name, arrival, deadline, JobKind.TRAINING, scaling, (d1, d2, d3, d4, d7), full)


def by_id(result):  # type: ignore[no-untyped-def]
    return {r.job_id: r for r in result.records}


def test_registry_lists_the_five_policies() -> None:
    assert POLICIES.available() == ["edf-fs", "edf-ss", "edf-ss-restricted", "lalf", "llf"]


@pytest.mark.parametrize("policy", ["edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf"])
def test_capped_job_takes_the_smaller_of_equally_fast_slices(policy: str) -> None:
    # A capped (c = 2) job: 100 s on 1g, 50 s on 2g, 3g, 4g. Config 3 = [4g@1, 2g@5, 1g@7].
    # Fastest slice: 2g and 4g tie at 50 s -> smaller compute size -> 2g@5. EDF-SS with d = 50: slices that
    # meet the deadline are 2g and 4g (both 50 s); the slowest of them tie -> smaller size -> 2g@5 again.
    capped = job("c", 0.0, 50.0, d1=100, d2=50, d3=50, d4=50, d7=50, full=50, scaling=Scaling.CAPPED)
    result = simulate([capped], 3, policy, record_jobs=True)
    (record,) = result.records
    assert record.slices == ((0.0, 50.0, 3, 4),)
    # u = 2 for 50 s: 160 W * 50 s.
    assert result.energy_j == pytest.approx(8000.0)
    assert result.end_s == 50.0


def _two_job_trace() -> list[Job]:
    # A: arrives 0, d = 1000, 200 s on 4g, 400 s on 3g. B: arrives 100, d = 150, 100 s on 4g, 200 s on 3g.
    return [job("A", 0, 1000, d3=400, d4=200), job("B", 100, 150, d3=200, d4=100)]


def test_edf_fs_hand_schedule_migrates_to_the_fastest_slice() -> None:
    # t=0: A alone -> fastest slice 4g (200 < 400).
    # t=100: B (d 150) first -> 4g (100 s, ends 200); A (half done) -> 3g: moved, preemption 1; rem 0.5*400.
    # t=200: B done (late by 50). A has 0.5 - 100/400 = 0.25 left: 4g 50 s < 3g 100 s: moves (2).
    # A ends at 250. Energy: [0,100) u=4 243.9*100 + [100,200) u=7 248.5*100 + [200,250) u=4 243.9*50.
    result = simulate(_two_job_trace(), 2, "edf-fs", record_jobs=True)
    a, b = by_id(result)["A"], by_id(result)["B"]
    assert a.slices == ((0.0, 100.0, 2, 0), (100.0, 200.0, 2, 4), (200.0, 250.0, 2, 0))
    assert (a.start_s, a.completion_s, a.preemptions) == (0.0, 250.0, 2)
    assert (b.start_s, b.completion_s, b.tardiness_s, b.preemptions) == (100.0, 200.0, 50.0, 0)
    assert result.energy_j == pytest.approx(24390 + 24850 + 12195)
    assert (result.preemptions, result.late_jobs, result.end_s) == (2, 1, 250.0)
    assert result.avg_tardiness_s == pytest.approx(25.0)
    assert result.max_tardiness_s == pytest.approx(50.0)


def test_edf_ss_hand_schedule_keeps_the_slow_slice() -> None:
    # t=0: A alone; both slices meet d=1000, slowest is 3g (400 s).
    # t=100: B (d 150) first: 4g ends 200 > 150, 3g ends 300 > 150 -> no slice meets -> fastest, 4g.
    #   A: only 3g is left, it is where A runs: no preemption.
    # t=200: B done, 50 s late. A has 0.5 left: 3g ends 400 <= 1000, the slowest that meets: stays.
    # Energy: [0,100) u=3 205.3*100 + [100,200) u=7 248.5*100 + [200,400) u=3 205.3*200 = 86440 J.
    result = simulate(_two_job_trace(), 2, "edf-ss", record_jobs=True)
    a = by_id(result)["A"]
    assert a.slices == ((0.0, 400.0, 2, 4),)
    assert result.preemptions == 0
    assert result.energy_j == pytest.approx(20530 + 24850 + 41060)
    assert result.avg_tardiness_s == pytest.approx(25.0)


def _restricted_trace(b_deadline: float) -> list[Job]:
    # A: d 1000, 4g 200 s / 3g 400 s. C: d 2000, 4g 1000 s / 3g 1500 s. B arrives at 100, 4g 100 s / 3g 120 s.
    return [
        job("A", 0, 1000, d3=400, d4=200),
        job("C", 0, 2000, d3=1500, d4=1000),
        job("B", 100, b_deadline, d3=120, d4=100),
    ]


def test_restricted_edf_ss_preempts_to_save_a_deadline() -> None:
    # t=0: A (d 1000) -> slowest slice meeting its deadline: 3g (ends 400). C -> 4g (ends 1000 <= 2000).
    # t=100: B (d 250) has no free slice. (1) C and A have later deadlines; (2) on 4g B ends 200, on 3g 220,
    #   both <= 250; (3) waiting is late: 4g frees at 1000 (+100), 3g at 400 (+120), both > 250.
    #   Victim = latest deadline = C. B takes 4g (ends 200). C (0.9 left) rejoins: no free slice; it can wait
    #   for 4g (200 + 900 <= 2000), so it does not preempt A.
    # t=200: B done; C -> 4g (200 + 900 = 1100 <= 2000, the only free slice). t=400: A done.
    # Energy: [0,400) u=7 248.5*400 + [400,1100) u=4 243.9*700 = 99400 + 170730 = 270130 J.
    result = simulate(_restricted_trace(250.0), 2, "edf-ss-restricted", record_jobs=True)
    rec = by_id(result)
    assert rec["C"].slices == ((0.0, 100.0, 2, 0), (200.0, 1100.0, 2, 0))
    assert (rec["C"].preemptions, rec["B"].completion_s, rec["A"].completion_s) == (1, 200.0, 400.0)
    assert result.preemptions == 1
    assert result.avg_tardiness_s == 0.0
    assert result.energy_j == pytest.approx(270130.0)


def test_unrestricted_edf_ss_on_the_same_trace_preempts_four_times() -> None:
    # t=100: full re-evaluation: B (d 250) -> slowest meeting slice 3g (ends 220); A (0.75 left) -> 4g
    #   (ends 250): moved, preemption 1; C waits: preemption 2.
    # t=220: B done. A has 0.15 left: 3g ends 280 <= 1000 is the slowest that meets -> moves (3). C -> 4g.
    # t=280: A done. C has 0.9 - 60/1000 = 0.84 left: 3g ends 280 + 1260 = 1540 <= 2000 -> moves (4).
    # Energy: [0,280) u=7 248.5*280 + [280,1540) u=3 205.3*1260 = 69580 + 258678 = 328258 J.
    result = simulate(_restricted_trace(250.0), 2, "edf-ss", record_jobs=True)
    assert result.preemptions == 4
    assert by_id(result)["C"].completion_s == pytest.approx(1540.0)
    assert result.energy_j == pytest.approx(328258.0)


def test_restricted_edf_ss_does_not_preempt_when_waiting_still_meets_the_deadline() -> None:
    # B (d 600) at t=100: condition (3) fails, since it can wait for 3g (free at 400, 400 + 120 = 520 <= 600).
    # t=400: A done; B -> 3g, ends 520. C runs on 4g 0..1000 untouched.
    # Energy: [0,520) u=7 248.5*520 + [520,1000) u=4 243.9*480 = 129220 + 117072 = 246292 J.
    result = simulate(_restricted_trace(600.0), 2, "edf-ss-restricted", record_jobs=True)
    rec = by_id(result)
    assert result.preemptions == 0
    assert (rec["B"].start_s, rec["B"].completion_s, rec["C"].completion_s) == (400.0, 520.0, 1000.0)
    assert result.energy_j == pytest.approx(246292.0)


def test_restricted_edf_ss_does_not_preempt_for_a_hopeless_job() -> None:
    # B (d 150) at t=100: even on 4g it ends at 200 > 150, so condition (2) fails for every victim.
    # It waits; at t=400 no free slice meets its deadline, it takes the fastest free one (3g) and ends at 520,
    # 370 s late. Same slice occupancy as the previous case, so the same 246292 J.
    result = simulate(_restricted_trace(150.0), 2, "edf-ss-restricted", record_jobs=True)
    assert result.preemptions == 0
    assert by_id(result)["B"].tardiness_s == pytest.approx(370.0)
    assert result.energy_j == pytest.approx(246292.0)


def _llf_trace() -> list[Job]:
    # Config 1 (one 7g slice). A: arrives 0, d 620, 500 s. B: arrives 10, d 500, 100 s.
    return [job("A", 0, 620, d7=500), job("B", 10, 500, d7=100)]


def test_llf_critical_laxity_event_preempts() -> None:
    # Laxity = d - t - rem on the 7g slice. A running keeps laxity 620 - 500 = 120. B waits with laxity
    # 490 - t: at t=10 it is 390 > 120, so A keeps the slice; B's critical event is at 400 - 60 = 340.
    # t=340: B (60) < A (120): B preempts A (A 0.32 left = 160 s; A's laxity 120 now falls, event at 400).
    # t=400: A's laxity is 60 and B's (running, 40 s left) is 500 - 400 - 40 = 60: a tie -> earlier arrival,
    #   A preempts B. B's laxity is already 60, so no future event for it. A ends 560, B runs 560..600.
    # u = 7 over [0, 600]: 248.5 * 600 = 149100 J.
    result = simulate(_llf_trace(), 1, "llf", record_jobs=True)
    rec = by_id(result)
    assert rec["A"].slices == ((0.0, 340.0, 1, 0), (400.0, 560.0, 1, 0))
    assert rec["B"].slices == ((340.0, 400.0, 1, 0), (560.0, 600.0, 1, 0))
    assert result.preemptions == 2
    assert rec["B"].tardiness_s == pytest.approx(100.0)
    assert result.energy_j == pytest.approx(149100.0)


def test_llf_without_critical_events_does_not_preempt() -> None:
    # With the cap at 0 no critical event re-evaluates: A runs 0..500, B 500..600 (100 s late).
    result = simulate(_llf_trace(), 1, LeastLaxityFirst(max_critical_events=0), record_jobs=True)
    assert result.preemptions == 0
    assert by_id(result)["A"].completion_s == 500.0
    assert result.avg_tardiness_s == pytest.approx(50.0)


def _lalf_trace() -> list[Job]:
    # Config 2; LALF laxity uses the mean of the 4g and 3g durations.
    # A: d 500, 4g 300 / 3g 600 (mean 450). B: d 400, 4g 200 / 3g 400 (mean 300). C: d 300, 4g 100 / 3g 200
    # (mean 150). All arrive at 0.
    return [
        job("A", 0, 500, d3=600, d4=300),
        job("B", 0, 400, d3=400, d4=200),
        job("C", 0, 300, d3=200, d4=100),
    ]


def test_lalf_critical_events_thrash_until_the_per_job_cap_of_three() -> None:
    # On 4g a job's mean remaining time falls 1.5x faster than the clock, so its laxity RISES by 0.5/s; B on
    # 3g loses 0.25/s; a waiting job loses 1/s. Laxities at t=0: A 50, B 100, C 150 -> A 4g, B 3g, C waits.
    # C event at 150 - 60 = 90:      C 60 < B 77.5 < A 95      -> C takes 4g, A waits (A: 1 preemption)
    # A event at 125:                A 60 < B 68.75 < C 77.5   -> A takes 4g, C waits (C: 1)
    # C event at 142.5:              C 60 < B 64.375 < A 68.75 -> C: 4g (A: 2)
    # A event at 151.25:             A 60 < B 62.1875 < C 64.375 -> A: 4g (C: 2)
    # C event at 155.625 (C's 3rd):  C 60 < B 61.09375 < A 62.1875 -> C: 4g (A: 3)
    # A event at 157.8125 (A's 3rd): A 60 < B 60.546875 < C 61.09375 -> A: 4g (C: 3). C has used its 3
    #   events: it waits until A ends. A: laxity 60 -> 282.1875 s of mean time left = 188.125 s on 4g,
    #   ends 345.9375. C then has 81.09375/150 of its work = 54.0625 s on 4g: ends 400 (100 s late).
    # B runs on 3g 0..400 throughout. u = 7 over [0, 400]: 248.5 * 400 = 99400 J.
    result = simulate(_lalf_trace(), 2, "lalf", record_jobs=True)
    rec = by_id(result)
    assert [s[0] for s in rec["C"].slices] == pytest.approx([90.0, 142.5, 155.625, 345.9375])
    assert [s[0] for s in rec["A"].slices] == pytest.approx([0.0, 125.0, 151.25, 157.8125])
    assert rec["A"].completion_s == pytest.approx(345.9375)
    assert rec["C"].completion_s == pytest.approx(400.0)
    assert (rec["A"].preemptions, rec["B"].preemptions, rec["C"].preemptions) == (3, 0, 3)
    assert result.energy_j == pytest.approx(99400.0)
    # Without the cap the two jobs keep swapping (ever shorter turns); the cap is what stops it.
    uncapped = simulate(_lalf_trace(), 2, LeastAverageLaxityFirst(max_critical_events=10))
    assert uncapped.preemptions > result.preemptions
