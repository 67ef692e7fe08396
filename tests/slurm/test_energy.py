"""A GPU's measured energy shared among its busy slices: hand-computed splits, exact sums, the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattsched.errors import InputError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.hardware.mig import MigGpu
from wattsched.slurm.energy import BusySlice, EnergyLedger, split_energy
from wattsched.workload.job import JobKind

A100 = load_gpu("a100-40gb")
Case = tuple[MigGpu, int | str, list[BusySlice], int]
H200 = load_gpu("h200-141gb")
INFERENCE, TRAINING = JobKind.INFERENCE, JobKind.TRAINING


def test_a100_two_busy_slices_by_hand() -> None:
    # Configuration 3: 4g + 2g + 1g; job A on the 4g, job B on the 1g: u = 5, P = 247.7 W, idle 40 W.
    # Idle 40 W by compute slices: 4g 160/7, 2g 80/7, 1g 40/7 W. Above idle, 207.7 W by compute: A 4/5
    # (166.16 W), B 1/5 (41.54 W). A = 160/7 + 166.16 = 13231.2/70 W, B = 3307.8/70 W, idle remainder (the
    # 2g) = 800/70 W; total 17339/70 = 247.7 W.
    busy = [BusySlice("A", 4, INFERENCE), BusySlice("B", 1, TRAINING)]  # one curve: kinds do not matter
    # 100 s at the model's power, 24 770 000 mJ: quotas 18 901 714.29, 4 725 428.57, 1 142 857.14; the
    # millijoule left after rounding down goes to the largest fraction (B's .57).
    split = split_energy(24_770_000, A100, 3, busy)
    assert split.per_job_mj == {"A": 18_901_714, "B": 4_725_429}
    assert split.idle_remainder_mj == 1_142_857
    assert split.model_power_w == 247.7
    # A measurement that is not the model's: only the ratios come from it. 1 000 000 mJ: quotas
    # 763 088.99, 190 772.25, 46 138.76 -> floors leave 2 mJ for the two largest fractions (A, idle).
    split = split_energy(1_000_000, A100, A100.configuration(3), busy)
    assert (split.per_job_mj, split.idle_remainder_mj) == ({"A": 763_089, "B": 190_772}, 46_139)
    assert split.per_job_j == {"A": 763.089, "B": 190.772}


def test_h200_kind_curves_weigh_the_busy_slices() -> None:
    # H200 configuration 3 (4g + 2g + 1g), u = 3 busy: training T on the 2g, inference I on the 1g.
    # Curves at u = 3: transformer-inference 505.2 W, transformer-training 345.2 W; idle 84.4 W.
    # Above idle: I adds 1 * 420.8, T adds 2 * 260.8 = 521.6 (of 942.4); the model draws
    # 84.4 + 942.4 / 3 = 398.53 W. In 21sts of a watt: I = 84.4*3 + 420.8*7 = 3198.8, T = 84.4*6 +
    # 521.6*7 = 4157.6, idle remainder (the 4g) = 84.4*12 = 1012.8; total 8369.2.
    busy = [BusySlice("T", 2, TRAINING), BusySlice("I", 1, INFERENCE)]
    split = split_energy(1_000_000, H200, 3, busy)
    # Quotas 382 210.96, 496 773.89, 121 015.15: the 2 mJ left go to I and T.
    assert split.per_job_mj == {"T": 496_774, "I": 382_211}
    assert split.idle_remainder_mj == 121_015
    assert split.model_power_w == pytest.approx(398.5333333)
    # On one curve the same slices split above-idle power 2 : 1 by compute slices alone.
    single = split_energy(1_000_000, H200, 3, busy, power_curve="transformer-inference")
    assert single.per_job_mj["T"] > split.per_job_mj["T"]
    dynamic_t = single.per_job_mj["T"] - 1_000_000 * 2 * 84.4 / 7 / 505.2
    dynamic_i = single.per_job_mj["I"] - 1_000_000 * 1 * 84.4 / 7 / 505.2
    assert dynamic_t / dynamic_i == pytest.approx(2.0, abs=1e-4)


def test_idle_and_empty_intervals() -> None:
    assert split_energy(7, A100, 3, []).idle_remainder_mj == 7
    split = split_energy(0, A100, 3, [BusySlice("A", 4)])
    assert (split.per_job_mj, split.idle_remainder_mj) == ({"A": 0}, 0)
    # A layout given as compute slices (instances that match no named configuration) works alike.
    assert split_energy(1000, A100, [4, 3], [BusySlice("A", 3)]).per_job_mj["A"] > 0


def test_refusals() -> None:
    with pytest.raises(InputError, match="whole number of mJ >= 0"):
        split_energy(-1, A100, 3, [])
    with pytest.raises(InputError, match=r"busy slices of compute \[3\] are not free slices"):
        split_energy(10, A100, 3, [BusySlice("A", 3)])
    with pytest.raises(InputError, match=r"busy slices of compute \[1\]"):
        split_energy(10, A100, 3, [BusySlice("A", 1), BusySlice("B", 1)])
    with pytest.raises(InputError, match="unknown job kind"):
        split_energy(10, A100, 3, [BusySlice("A", 1, "batch")])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="7 in all"):
        split_energy(10, A100, [4, 4], [])


@st.composite
def intervals(draw: st.DrawFn) -> Case:
    gpu = draw(st.sampled_from([A100, H200]))
    ident = draw(st.sampled_from(gpu.configuration_ids))
    slices = gpu.configuration(ident).slices
    chosen = draw(st.lists(st.booleans(), min_size=len(slices), max_size=len(slices)))
    busy = [
        BusySlice(f"job{n}", s.compute, draw(st.sampled_from(list(JobKind))))
        for n, (s, on) in enumerate(zip(slices, chosen, strict=True))
        if on
    ]
    return gpu, ident, busy, draw(st.integers(min_value=0, max_value=10**13))


@given(intervals())
def test_parts_add_up_to_the_measurement_exactly(
    case: Case,
) -> None:
    gpu, ident, busy, delta_mj = case
    split = split_energy(delta_mj, gpu, ident, busy)
    assert sum(split.per_job_mj.values()) + split.idle_remainder_mj == delta_mj
    assert set(split.per_job_mj) == {b.key for b in busy}
    assert all(mj >= 0 for mj in split.per_job_mj.values()) and split.idle_remainder_mj >= 0
    # Every slice carries its idle share: a busy job never gets less than its compute share of idle power.
    compute = sum(s.compute for s in gpu.configuration(ident).slices)
    idle_w = gpu.power.table().power_w[0]
    for item in busy:
        floor_mj = delta_mj * idle_w * item.compute / compute / split.model_power_w
        assert split.per_job_mj[item.key] >= floor_mj - 1.0 - 1e-9 * delta_mj


def test_ledger_over_the_fake_gpu_equals_its_counter(tmp_path: Path) -> None:
    now = [0.0]
    state = FakeGpuState.create(tmp_path / "gpu.json", [("h200-141gb", 3)], clock=lambda: now[0])
    big, middle, small = state.instances(0)
    ledger = EnergyLedger(H200, 3)
    schedule = [  # (seconds later, {uuid: (job, kind)}) busy from then on
        (0.0, {}),
        (12.5, {big.uuid: ("101", TRAINING)}),
        (30.0, {big.uuid: ("101", TRAINING), small.uuid: ("102", INFERENCE)}),
        (7.25, {small.uuid: ("102", INFERENCE), middle.uuid: ("103", INFERENCE)}),
        (40.0, {middle.uuid: ("103", INFERENCE)}),
        (3.0, {}),
    ]
    first_mj = state.energy_mj(0)
    compute = {i.uuid: i.compute for i in state.instances(0)}
    for later_s, running in schedule:
        now[0] += later_s
        counter_mj = state.energy_mj(0)
        for instance in state.instances(0):
            state.set_busy(instance.uuid, running[instance.uuid][1] if instance.uuid in running else None)
        busy = [BusySlice(job, compute[uuid], kind) for uuid, (job, kind) in running.items()]
        ledger.add(now[0], counter_mj, busy)
    last_mj = state.energy_mj(0)
    assert ledger.attributed_mj == last_mj - first_mj
    assert sum(ledger.per_job_mj.values()) + ledger.idle_remainder_mj == last_mj - first_mj
    assert set(ledger.per_job_mj) == {"101", "102", "103"} and not ledger.unknown
    # Job 101 ran alone on the 4g for 30 s (transformer-training at u = 4: 396.9 W): all of the power above
    # idle and 4/7 of the idle power are its, 30 * (312.5 + 84.4 * 4 / 7) J; then 7.25 s shared with 102.
    alone_j = 30 * (396.9 - 84.4 + 84.4 * 4 / 7)
    assert alone_j < ledger.energy_j("101") < alone_j + 7.25 * 396.9
    assert ledger.per_job_j["103"] == ledger.energy_j("103") and ledger.energy_j("nobody") == 0.0


def test_ledger_counts_a_counter_reset_as_unknown(caplog: pytest.LogCaptureFixture) -> None:
    ledger = EnergyLedger(A100, 3)
    job = [BusySlice("7", 4)]
    # Job 7 on the 4g alone: u = 4, 243.9 W = 160/7 + 203.9 W for the job, 120/7 W idle remainder, so the
    # job's part of 4000 mJ is 4000 * 226.757 / 243.9 = 3718.8 -> 3719 and of 1000 mJ 929.7 -> 930.
    assert ledger.add(0.0, 1_000, job) is None
    assert ledger.add(10.0, 5_000, job) is not None
    assert ledger.add(20.0, 300, job) is None  # the counter went back: a reset, 10..20 s unknown
    split = ledger.add(30.0, 1_300, [])
    assert split is not None and split.per_job_mj == {"7": 930}  # 7 was busy from 20 s to 30 s
    assert ledger.per_job_mj == {"7": 3_719 + 930} and ledger.idle_remainder_mj == 281 + 70
    assert ledger.attributed_mj == 4_000 + 1_000
    assert [(u.start_s, u.end_s) for u in ledger.unknown] == [(10.0, 20.0)] and ledger.unknown_s == 10.0
    assert "went back from 5000 to 300 mJ" in caplog.text
    ledger.add(40.0, 2_300, [])  # an idle interval: all idle remainder
    assert ledger.per_job_mj == {"7": 4_649} and ledger.idle_remainder_mj == 351 + 1_000
    with pytest.raises(InputError, match="time order"):
        ledger.add(39.0, 2_400, [])
    with pytest.raises(InputError, match="not free slices"):
        ledger.add(50.0, 2_400, [BusySlice("8", 3)])
    assert ledger.attributed_mj == (5_000 - 1_000) + (2_300 - 300)  # a refused reading counts nothing
    ledger.add(50.0, 2_400, [BusySlice("8", 3)], layout=2)  # repartitioned to 4g + 3g from 50 s
    # 8 on the 3g alone: u = 3, 205.3 W = 120/7 + 165.3 W for it, 160/7 W idle: 1000 mJ -> 888.7 -> 889.
    assert ledger.add(60.0, 3_400, []) is not None and ledger.per_job_mj["8"] == 889
    # The counter's rise on either side of the reset, nothing more, nothing less.
    assert ledger.attributed_mj == (5_000 - 1_000) + (3_400 - 300)
