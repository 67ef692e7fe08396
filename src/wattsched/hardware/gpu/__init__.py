"""Real GPUs behind one small interface: the ``nvml`` backend and the ``fake:FILE`` replay
(docs/howto/nvml.md).

``open_backend(spec)`` takes what ``--backend`` takes: ``nvml`` or ``fake:FILE``; ``None`` reads the
environment variable ``WATTSCHED_GPU_BACKEND`` and falls back to ``nvml``. Importing this package never
imports ``pynvml``: the ``nvml`` backend imports it when it is opened.
"""

from __future__ import annotations

import os

from wattsched.errors import ConfigError
from wattsched.hardware.gpu.backend import (
    ClockState,
    GpuBackend,
    GpuError,
    GpuIdentity,
    GpuInstance,
    GpuProcess,
    NvmlProfile,
    PowerLimits,
)

__all__ = [
    "BACKEND_ENV",
    "ClockState",
    "GpuBackend",
    "GpuError",
    "GpuIdentity",
    "GpuInstance",
    "GpuProcess",
    "NvmlProfile",
    "PowerLimits",
    "open_backend",
]

#: The environment variable that chooses the backend when ``--backend`` is not given.
BACKEND_ENV = "WATTSCHED_GPU_BACKEND"


def open_backend(spec: str | None = None) -> GpuBackend:
    """The backend ``spec`` names (``nvml`` | ``fake:FILE``), else ``$WATTSCHED_GPU_BACKEND``, else NVML."""
    where = "--backend"
    if spec is None:
        spec = os.environ.get(BACKEND_ENV) or "nvml"
        where = BACKEND_ENV if BACKEND_ENV in os.environ else where
    if spec == "nvml":
        from wattsched.hardware.gpu.nvml import NvmlBackend

        return NvmlBackend()
    if spec.startswith("fake:") and len(spec) > len("fake:"):
        from wattsched.hardware.gpu.fake import FakeBackend
        from wattsched.hardware.gpu.fake_state import FakeStateBackend, is_state_file

        path = spec.removeprefix("fake:")
        if is_state_file(path):  # a fake GPU that several processes share (the Slurm sandbox's)
            return FakeStateBackend(path)
        return FakeBackend(path)
    raise ConfigError(f"{where} must be 'nvml' or 'fake:FILE', got '{spec}'")
