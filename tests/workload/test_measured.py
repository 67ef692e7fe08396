"""The measured slice-speed library: exact read-back, S(1) = 1, the missing-size rule, bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wattsched.errors import InputError
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import P1_SIZES as COMPUTE_SIZES
from wattsched.workload.job import Scaling
from wattsched.workload.measured import MeasuredLibrary, fill_speedups, load_slice_speeds

HEADER = "source,model,kind,batch_size,slice_g,throughput_or_time,unit\n"


@pytest.fixture(scope="module")
def speeds_path(repo_data: Path) -> Path:
    return repo_data / "mig-profiles" / "slice_speed.csv"


@pytest.fixture(scope="module")
def library(speeds_path: Path) -> MeasuredLibrary:
    return load_slice_speeds(speeds_path)


def test_real_curves_read_back_exactly(speeds_path: Path, library: MeasuredLibrary) -> None:
    raw = pd.read_csv(speeds_path)
    # Expected, computed here: throughput (samples/s) where a group has it, else time per work inverted.
    for (source, model, kind, batch), group in raw.groupby(["source", "model", "kind", "batch_size"]):
        name = f"{source}:{model}:{kind}:b{batch}"
        thr = group[group["unit"] == "samples/s"]
        use = thr if len(thr) else group
        speed = (
            use.set_index("slice_g")["throughput_or_time"]
            if len(thr)
            else 1.0 / use.set_index("slice_g")["throughput_or_time"]
        )
        if len(speed) < 2:
            assert name in library.dropped
            continue
        curve = library.curves[name]
        assert curve.kind == Scaling.MEASURED and curve.speedups[0] == 1.0
        if 1 in speed.index:
            for g, s in speed.items():
                assert curve.speedup(int(g)) == pytest.approx(s / speed[1], rel=1e-12)


def test_library_shape(library: MeasuredLibrary) -> None:
    # 11 ParvaGPU inference models + 8 MISO training models (README).
    assert len(library.models()) == 18  # "bert" is in both sources
    assert len(library.per_model()) == 19
    assert all(c.speedups[0] == 1.0 for c in library.curves.values())
    assert {name.split(":")[2] for name in library.curves} == {"inference", "training"}
    assert len(library.select(kind="training")) + len(library.select(kind="inference")) == len(
        library.entries
    )


def test_miso_bert_has_no_1g_and_follows_the_rule(library: MeasuredLibrary, speeds_path: Path) -> None:
    raw = pd.read_csv(speeds_path)
    rows = raw[(raw["source"] == "miso") & (raw["model"] == "bert") & (raw["batch_size"] == 4)]
    t = rows.set_index("slice_g")["throughput_or_time"]  # s/iter at 2g, 3g, 4g, 7g; no 1g (does not fit)
    assert 1 not in t.index
    curve = library.curves["miso:bert:training:b4"]
    # Linear below the smallest measured size: speed(1) = speed(2) / 2, so S(2) = 2, S(g) = 2·t(2)/t(g).
    assert curve.speedups == pytest.approx((1.0, 2.0, 2 * t[2] / t[3], 2 * t[2] / t[4], 2 * t[2] / t[7]))


def test_for_model_prefers_most_sizes_then_largest_batch(library: MeasuredLibrary) -> None:
    chosen = library.for_model("resnet50")
    name = chosen.name
    entries = [e for e in library.entries if e.model == "resnet50"]
    best = max(len(e.measured_sizes) for e in entries)
    largest = max(e.batch_size for e in entries if len(e.measured_sizes) == best)
    assert name == f"parvagpu:resnet50:inference:b{largest}"
    assert library.for_model("resnet50", batch_size=1).name == "parvagpu:resnet50:inference:b1"
    with pytest.raises(InputError, match="resnet50"):
        library.for_model("alexnet")


def test_missing_size_rule_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "speeds.csv"
    path.write_text(
        HEADER
        + "\n".join(
            [
                # Only 2g and 4g, as time per iteration: 2g 0.5 s, 4g 0.3 s → speed 2, 3.333...
                "me,a,training,8,2,0.5,s/iter",
                "me,a,training,8,4,0.3,s/iter",
                # 1g and 3g throughput: 10 and 45 samples/s (superlinear measured value is kept).
                "me,b,inference,1,1,10,samples/s",
                "me,b,inference,1,3,45,samples/s",
                # one size only: dropped
                "me,c,inference,1,7,5,samples/s",
            ]
        )
        + "\n"
    )
    library = load_slice_speeds(path)
    a = library.curves["me:a:training:b8"].speedups
    # speed(1) = 2 / 2 = 1; S(2) = 2; S(3) = interp(2, 3.333) / 1 = 2.6667; S(4) = 3.3333;
    # S(7) = flat = 3.3333
    assert a == pytest.approx((1.0, 2.0, 8 / 3, 10 / 3, 10 / 3))
    b = library.curves["me:b:inference:b1"].speedups
    # S(2) = interp(10, 45 at g = 2) / 10 = 2.75 → capped at 2; S(3) = 4.5 measured (kept);
    # S(4) = flat 4.5 → capped at 4; S(7) = 4.5.
    assert b == pytest.approx((1.0, 2.0, 4.5, 4.0, 4.5))
    assert library.dropped == ("me:c:inference:b1",)


def test_fill_speedups_properties() -> None:
    full = {1: 3.0, 2: 5.0, 3: 7.0, 4: 8.0, 7: 9.0}
    assert fill_speedups(full) == pytest.approx(tuple(full[g] / 3.0 for g in COMPUTE_SIZES))
    with pytest.raises(ValueError):
        fill_speedups({4: 1.0})


@pytest.mark.parametrize(
    ("line", "column"),
    [
        ("me,a,training,8,5,0.5,s/iter", "slice_g"),
        ("me,a,training,8,2,-1,s/iter", "throughput_or_time"),
        ("me,a,training,8,2,fast,s/iter", "throughput_or_time"),
        ("me,a,training,8,2,0.5,furlongs", "unit"),
        ("me,a,training,eight,2,0.5,s/iter", "batch_size"),
        ("me,a,training,8,1,0.4,s/iter", "slice_g"),  # duplicate of row 1
    ],
)
def test_bad_rows_name_row_and_column(tmp_path: Path, line: str, column: str) -> None:
    path = tmp_path / "speeds.csv"
    path.write_text(HEADER + "me,a,training,8,1,0.9,s/iter\n" + line + "\n")
    with pytest.raises(InputError, match=f"row 2, column '{column}'") as info:
        load_slice_speeds(path)
    assert str(path) in str(info.value)


def test_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "speeds.csv"
    path.write_text("source,model\nx,y\n")
    with pytest.raises(InputError, match="column 'kind'"):
        load_slice_speeds(path)
    path.write_text(HEADER)
    with pytest.raises(InputError, match="no data rows"):
        load_slice_speeds(path)
    path.write_text(HEADER + "me,c,inference,1,7,5,samples/s\n")
    with pytest.raises(InputError, match="two or more"):
        load_slice_speeds(path)


def test_generated_jobs_draw_measured_curves(library: MeasuredLibrary) -> None:
    curves = library.per_model()
    jobs = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=2.0, curves=curves), seed=1)
    assert jobs and all(j.scaling == Scaling.MEASURED for j in jobs)
    speedups = {c.speedups for c in curves}
    for job in jobs:
        ratio = tuple(job.durations_s[0] / d for d in job.durations_s[:5])
        assert any(np.allclose(ratio, s) for s in speedups)


def test_the_h200_sm_partitions_are_a_slice_speed_library(repo_data: Path) -> None:
    from wattsched.workload.measured import family_of, load_partition_speeds

    path = repo_data / "hardware" / "h200" / "partitions.csv"
    library = load_slice_speeds(path)  # recognised by its header
    assert library.curves == load_partition_speeds(path).curves
    assert library.models() == [
        "gemm_bf16_8192",
        "resnet50_infer_bf16_b64",
        "stream_add_1gib",
        "transformer_infer_bf16",
        "transformer_train_fp32",
    ]
    gemm = library.curves["sm-partitions:gemm_bf16_8192"]
    # 1g, 2g, 4g, 7g of the H200 = 16, 32, 64, 132 SMs (measured); 3g = 60 SMs, between 48 and 64.
    rate = {16: 100.374, 32: 199.934, 48: 300.76, 64: 384.748, 132: 607.737}
    at_60 = rate[48] + (60 - 48) * (rate[64] - rate[48]) / 16
    expected = (1.0, rate[32] / rate[16], at_60 / rate[16], rate[64] / rate[16], rate[132] / rate[16])
    assert gemm.speedups == pytest.approx(expected)
    families = {e.model: family_of(e.curve) for e in library.entries}
    assert families == {
        "gemm_bf16_8192": "linear",
        "resnet50_infer_bf16_b64": "sublinear",
        "stream_add_1gib": "capped",
        "transformer_infer_bf16": "sublinear",
        "transformer_train_fp32": "linear",
    }
    assert {e.kind for e in library.entries if "train" in e.model} == {"training"}
