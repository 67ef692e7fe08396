"""The calibration kernels' launch loop (what runs without a GPU): rate, stop, and errors surfaced."""

from __future__ import annotations

import time

import pytest

from wattsched.hardware.gpu import GpuError
from wattsched.hardware.gpu.loads import _Looper


def test_looper_reports_work_per_second() -> None:
    looper = _Looper()
    assert looper.halt() is None  # nothing started

    def launch() -> float:
        time.sleep(0.01)
        return 2.0  # e.g. TFLOP per launch

    looper.run(launch)
    time.sleep(0.2)
    rate = looper.halt()
    assert rate is not None and 100 < rate <= 200  # 2 per launch, at most 100 launches a second
    assert looper.halt() is None  # stopped once


def test_a_failing_kernel_is_one_gpu_error() -> None:
    looper = _Looper()

    def launch() -> float:
        raise RuntimeError("cudaErrorLaunchFailure")

    looper.run(launch)
    time.sleep(0.05)
    with pytest.raises(GpuError, match="the calibration kernel failed: cudaErrorLaunchFailure"):
        looper.halt()
