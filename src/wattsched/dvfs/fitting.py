"""Fit the P2 task model to measured (core clock, memory clock, time, power) rows, as the paper did
(P2 Sec. VI), and compute each application's optimal single-task saving ("theoretical bound").

Clocks are normalised to the GPU's default; ``V = g1^-1(f_core)``. Time is fitted on ``[1, 1/f_core,
1/f_mem]`` (coefficients ``t0, d·delta, d·(1−delta)``) and power on ``[1, f_mem, V²·f_core]`` (``p0, gamma,
c``) by non-negative least squares (the authors used a non-negative Lasso with a tiny penalty).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from wattsched.dvfs.model import TaskModel
from wattsched.dvfs.solver import solve
from wattsched.errors import InputError
from wattsched.hardware.dvfs import DvfsGpu
from wattsched.io import cell_text, numeric_column, read_table

__all__ = [
    "MAX_MEASUREMENT",
    "MEASUREMENT_COLUMNS",
    "AppFit",
    "fit_application",
    "fit_measurements",
    "read_measurements",
]

MEASUREMENT_COLUMNS: tuple[str, ...] = ("appName", "coreF", "memF", "time/ms", "power/W")


@dataclass(frozen=True)
class AppFit:
    """Fitted model of one application, its fit errors and optimal single-task savings (fractions)."""

    gpu: str
    app: str
    samples: int
    p0_w: float
    gamma_w: float
    c_w: float
    t0_s: float
    d_s: float
    delta: float
    time_mape: float
    power_mape: float
    saving_wide: float
    saving_narrow: float

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


#: Largest accepted measurement value (MHz, ms, W); beyond it the fit's features overflow float64.
MAX_MEASUREMENT = 1e12


def read_measurements(path: str | Path) -> pd.DataFrame:
    """Read a measurement CSV (the layout of the published GTX 1080 Ti / RTX 2070 SUPER files), validating the
    needed columns: ``appName`` non-empty text, the others numbers in ``(0, MAX_MEASUREMENT]``."""
    where = str(path)
    frame = read_table(path, formats=("csv",))
    for column in MEASUREMENT_COLUMNS:
        if column not in frame.columns:
            raise InputError(
                f"missing column; a measurement file needs {', '.join(MEASUREMENT_COLUMNS)}",
                path=where,
                column=column,
            )
    if frame.empty:
        raise InputError("no measurement rows (header only)", path=where)
    names = frame["appName"].astype(str).str.strip()
    empty = np.flatnonzero((names == "").to_numpy())
    if empty.size:
        raise InputError("empty appName", path=where, row=int(empty[0]) + 1, column="appName")
    frame = frame.assign(appName=names)
    problems: list[tuple[int, int, str, str]] = []
    for position, column in enumerate(MEASUREMENT_COLUMNS[1:]):
        values, _ = numeric_column(frame, column)
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~(np.isfinite(values) & (values > 0) & (values <= MAX_MEASUREMENT)))
        if bad.size:
            problems.append((int(bad[0]), position, column, cell_text(frame, column, int(bad[0]))))
        frame[column] = values
    if problems:
        row, _, column, text = min(problems)
        raise InputError(
            f"expected a number in (0, {MAX_MEASUREMENT:g}], got {text}",
            path=where,
            row=row + 1,
            column=column,
        )
    return frame


def _mape(measured: np.ndarray, fitted: np.ndarray) -> float:
    return float(np.mean(np.abs(fitted - measured) / measured))


def fit_application(rows: pd.DataFrame, gpu: DvfsGpu, app: str) -> AppFit:
    """NNLS fit of one application's rows; savings are ``1 − E_opt/E(1,1,1)`` without a deadline."""
    fc = rows["coreF"].to_numpy(float) / gpu.core_clock_mhz
    fm = rows["memF"].to_numpy(float) / gpu.memory_clock_mhz
    time_s = rows["time/ms"].to_numpy(float) / 1000.0
    power_w = rows["power/W"].to_numpy(float)
    v = np.asarray(gpu.coupling.v_min_for(fc))
    time_x = np.column_stack([np.ones_like(fc), 1.0 / fc, 1.0 / fm])
    power_x = np.column_stack([np.ones_like(fc), fm, v * v * fc])
    (t0, d_core, d_mem), _ = nnls(time_x, time_s)
    (p0, gamma, c), _ = nnls(power_x, power_w)
    d = d_core + d_mem
    delta = d_core / d if d > 0 else 1.0
    model = TaskModel(*(np.array([x], dtype=float) for x in (p0, gamma, c, t0, d, delta)))
    default_j = float(model.default_power_w[0] * model.default_time_s[0])
    savings = []
    for interval in (gpu.wide, gpu.narrow):
        best = solve(model, np.inf, interval)
        savings.append(1.0 - float(best.energy_j[0]) / default_j if default_j > 0 else 0.0)
    return AppFit(
        gpu.name,
        app,
        len(rows),
        float(p0),
        float(gamma),
        float(c),
        float(t0),
        float(d),
        float(delta),
        _mape(time_s, time_x @ np.array([t0, d_core, d_mem])),
        _mape(power_w, power_x @ np.array([p0, gamma, c])),
        savings[0],
        savings[1],
    )


def fit_measurements(path: str | Path, gpu: DvfsGpu) -> list[AppFit]:
    """Fit every application (``appName``) of a measurement file, in file order."""
    frame = read_measurements(path)
    return [fit_application(rows, gpu, str(app)) for app, rows in frame.groupby("appName", sort=False)]
