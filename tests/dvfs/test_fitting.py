"""Model fitting: exact recovery on synthetic rows; fit quality on the real 1080 Ti / 2070S data."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wattsched.dvfs.fitting import fit_application, fit_measurements, read_measurements
from wattsched.errors import InputError
from wattsched.hardware.dvfs import default_dvfs_gpu, load_dvfs_gpu

GPU = default_dvfs_gpu()


def synthetic_rows(p0: float, gamma: float, c: float, t0: float, d: float, delta: float) -> pd.DataFrame:
    core = np.repeat([1600.0, 1700, 1800, 1900, 2000], 4)
    mem = np.tile([4000.0, 4500, 5000, 5500], 5)
    fc, fm = core / 1800, mem / 5000
    v = 2 * (fc - 0.5) ** 2 + 0.5
    time_ms = 1000 * (t0 + d * (delta / fc + (1 - delta) / fm))
    power = p0 + gamma * fm + c * v * v * fc
    return pd.DataFrame(
        {"appName": "synthetic", "coreF": core, "memF": mem, "time/ms": time_ms, "power/W": power}
    )


def test_exact_model_data_is_recovered() -> None:
    fit = fit_application(synthetic_rows(60.0, 25.0, 110.0, 0.002, 0.010, 0.4), GPU, "synthetic")
    assert (fit.p0_w, fit.gamma_w, fit.c_w) == pytest.approx((60.0, 25.0, 110.0), rel=1e-8)
    assert (fit.t0_s, fit.d_s, fit.delta) == pytest.approx((0.002, 0.010, 0.4), rel=1e-8)
    assert fit.time_mape < 1e-10 and fit.power_mape < 1e-10
    assert 0 < fit.saving_narrow < fit.saving_wide  # the wide interval contains the narrow one


@pytest.mark.parametrize(
    ("name", "gpu", "apps"), [("gtx1080ti.csv", "gtx1080ti", 30), ("gtx2070s.csv", "rtx2070s", 20)]
)
def test_real_measurements_fit_well(unshipped: Callable[[str], Path], name: str, gpu: str, apps: int) -> None:
    fits = fit_measurements(unshipped(f"dvfs-measurements/{name}"), load_dvfs_gpu(gpu))
    assert len(fits) == apps and all(f.samples == 20 for f in fits)
    assert np.mean([f.time_mape for f in fits]) < 0.02
    assert np.mean([f.power_mape for f in fits]) < 0.02
    assert max(f.time_mape for f in fits) < 0.06
    wide, narrow = load_dvfs_gpu(gpu).wide, load_dvfs_gpu(gpu).narrow
    nested = wide.v_max >= narrow.v_max and wide.f_mem_max >= narrow.f_mem_max  # 1080 Ti yes; 2070S no
    for f in fits:
        assert min(f.p0_w, f.gamma_w, f.c_w, f.t0_s, f.d_s) >= 0 and 0 <= f.delta <= 1
        assert -1e-9 <= f.saving_narrow < 0.5 and -1e-9 <= f.saving_wide < 0.5
        if nested:
            assert f.saving_narrow <= f.saving_wide + 1e-9


def test_measurement_errors(tmp_path: Path) -> None:
    rows = synthetic_rows(60.0, 25.0, 110.0, 0.002, 0.010, 0.4)
    bad = tmp_path / "m.csv"
    rows.drop(columns=["memF"]).to_csv(bad, index=False)
    with pytest.raises(InputError, match="memF"):
        read_measurements(bad)
    rows.assign(**{"power/W": rows["power/W"].where(rows.index != 4, -1.0)}).to_csv(bad, index=False)
    with pytest.raises(InputError) as info:
        read_measurements(bad)
    assert info.value.row == 5 and info.value.column == "power/W"
    with pytest.raises(InputError, match=r"unsupported file suffix .*use \.csv"):
        read_measurements(tmp_path / "m.parquet")
