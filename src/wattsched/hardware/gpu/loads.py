"""Kernels that keep k SMs of a real GPU busy for ``gpu calibrate`` (CuPy or PyTorch, whichever is present).

* :class:`CupyLoad` (preferred, exact): our own CUDA kernels through ``cupy.RawKernel``, one block of 1,024
  threads per busy SM. Each block asks for more than half of an SM's shared memory, so no SM can hold two
  blocks and ``k`` blocks land on ``k`` distinct SMs (the H200 run checked this by reading ``%smid``).
  ``compute``: 8 independent FP32 FMA chains per thread; ``memory``: each block streams its own part of a
  buffer into another.
* :class:`TorchLoad`: a CUDA green context of ``k`` SMs (``torch.cuda.green_contexts``, PyTorch >= 2.9 built
  with green-context support) running an FP32 matrix product with TF32 off (FMA-bound) or a large tensor
  copy. The driver may round ``k`` up to its SM granularity, so the busy fraction is approximate.

One launch is in flight at a time, from a background thread, until ``stop``. These classes need a GPU and
are exercised by ``scripts/device_check.sh``, not by the CPU test suite.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from wattsched.hardware.gpu.backend import GpuError

__all__ = ["CupyLoad", "TorchLoad", "choose_load"]

_THREADS = 1024
_CHAINS = 8
_TARGET_LAUNCH_S = 0.025

_KERNELS = r"""
extern "C" __global__ void fma_chains(float* out, long long iterations) {
    extern __shared__ float reserve[];  // sized by the launch: holds the SM, never read
    float a0 = threadIdx.x * 1e-6f, a1 = a0 + 1.f, a2 = a0 + 2.f, a3 = a0 + 3.f;
    float a4 = a0 + 4.f, a5 = a0 + 5.f, a6 = a0 + 6.f, a7 = a0 + 7.f;
    const float b = 0.9999999f, c = 1e-7f;
    for (long long i = 0; i < iterations; ++i) {
        a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
        a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
    }
    if (threadIdx.x == 0) reserve[0] = a0;
    out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

extern "C" __global__ void stream_copy(const float4* src, float4* dst, long long per_block) {
    extern __shared__ float reserve[];
    const long long base = (long long)blockIdx.x * per_block;
    for (long long i = threadIdx.x; i < per_block; i += blockDim.x) dst[base + i] = src[base + i];
    if (threadIdx.x == 0) reserve[0] = 0.f;
}
"""


class _Looper:
    """Calls ``launch`` (which returns the work done) back to back in a thread until stopped."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.work = 0.0
        self.seconds = 0.0
        self.error: BaseException | None = None

    def run(self, launch: Any) -> None:
        self._stop.clear()
        self.work, self.seconds, self.error = 0.0, 0.0, None

        def loop() -> None:
            start = time.perf_counter()
            try:
                while not self._stop.is_set():
                    self.work += launch()
            except BaseException as exc:  # reported by stop(): a thread must not die silently
                self.error = exc
            self.seconds = time.perf_counter() - start

        self._thread = threading.Thread(target=loop, name="wattsched-load", daemon=True)
        self._thread.start()

    def halt(self) -> float | None:
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self.error is not None:
            raise GpuError(f"the calibration kernel failed: {self.error}")
        return self.work / self.seconds if self.seconds > 0 else None


class CupyLoad:  # pragma: no cover - needs a CUDA GPU (scripts/device_check.sh)
    """FMA and copy kernels with one block per busy SM (see the module docstring)."""

    name = "cupy"

    def __init__(self, cuda_index: int, copy_bytes: int = 2 * 2**30) -> None:
        import cupy  # optional: calibrate only

        self._cp = cupy
        self._device = cupy.cuda.Device(cuda_index)
        self._device.use()
        attributes = self._device.attributes
        per_sm = int(attributes["MaxSharedMemoryPerMultiprocessor"])
        self._shared = min(int(attributes["MaxSharedMemoryPerBlockOptin"]), per_sm // 2 + 1024)
        module = cupy.RawModule(code=_KERNELS)
        self._fma = module.get_function("fma_chains")
        self._copy = module.get_function("stream_copy")
        for kernel in (self._fma, self._copy):
            kernel.max_dynamic_shared_size_bytes = self._shared
        sms = int(attributes["MultiProcessorCount"])
        self._out = cupy.zeros(sms * _THREADS, dtype=cupy.float32)
        vectors = copy_bytes // 16
        self._src = cupy.ones(vectors * 4, dtype=cupy.float32)
        self._dst = cupy.empty_like(self._src)
        self._vectors = vectors
        self._iterations = self._tune_iterations()
        self._looper = _Looper()
        self._unit = ""

    def _fma_launch(self, blocks: int, iterations: int) -> float:
        self._fma((blocks,), (_THREADS,), (self._out, self._cp.int64(iterations)), shared_mem=self._shared)
        self._cp.cuda.get_current_stream().synchronize()
        return 2.0 * _CHAINS * _THREADS * blocks * iterations / 1e12  # TFLOP

    def _tune_iterations(self) -> int:
        trial = 20_000
        self._fma_launch(1, trial)
        start = time.perf_counter()
        self._fma_launch(1, trial)
        elapsed = max(time.perf_counter() - start, 1e-6)
        return max(int(trial * _TARGET_LAUNCH_S / elapsed), 1_000)

    def _copy_launch(self, blocks: int) -> float:
        per_block = self._vectors // blocks
        self._copy(
            (blocks,), (_THREADS,), (self._src, self._dst, self._cp.int64(per_block)), shared_mem=self._shared
        )
        self._cp.cuda.get_current_stream().synchronize()
        return 2.0 * 16 * per_block * blocks / 1e12  # TB read + written

    def start(self, kind: str, busy_sms: int) -> None:
        if busy_sms == 0:
            self._unit = ""
            return
        if kind == "compute":
            self._unit = "tflop_per_s_fp32"
            self._looper.run(lambda: self._fma_launch(busy_sms, self._iterations))
        else:
            self._unit = "tb_per_s_read_plus_write"
            self._looper.run(lambda: self._copy_launch(busy_sms))

    def stop(self) -> tuple[float | None, str]:
        return self._looper.halt(), self._unit

    def close(self) -> None:
        self._looper.halt()


class TorchLoad:  # pragma: no cover - needs a CUDA GPU (scripts/device_check.sh)
    """An FP32 matrix product or a tensor copy on a green context of k SMs (see the module docstring)."""

    name = "torch"

    def __init__(self, cuda_index: int, matrix: int = 4096, copy_bytes: int = 2 * 2**30) -> None:
        import torch  # optional: calibrate only
        from torch.cuda import green_contexts

        if not green_contexts.SUPPORTED:
            raise GpuError(
                "this PyTorch has no CUDA green contexts, so it cannot confine work to k SMs; "
                "install CuPy (pip install cupy-cuda12x) or PyTorch >= 2.9 with CUDA"
            )
        self._torch = torch
        self._green = green_contexts.GreenContext
        self._index = cuda_index
        torch.backends.cuda.matmul.allow_tf32 = False  # FP32 FMA on the CUDA cores, like the CuPy kernel
        device = torch.device("cuda", cuda_index)
        self._a = torch.rand(matrix, matrix, device=device)
        self._b = torch.rand(matrix, matrix, device=device)
        self._c = torch.empty_like(self._a)
        self._src = torch.ones(copy_bytes // 4, device=device)
        self._dst = torch.empty_like(self._src)
        self._matrix = matrix
        self._looper = _Looper()
        self._context: Any = None
        self._unit = ""

    def start(self, kind: str, busy_sms: int) -> None:
        if busy_sms == 0:
            self._unit = ""
            return
        torch = self._torch
        self._context = self._green.create(num_sms=busy_sms, device_id=self._index)
        stream = self._context.Stream()
        n = self._matrix

        def matmul() -> float:
            with torch.cuda.stream(stream):
                torch.mm(self._a, self._b, out=self._c)
            stream.synchronize()
            return 2.0 * n**3 / 1e12

        def copy() -> float:
            with torch.cuda.stream(stream):
                self._dst.copy_(self._src)
            stream.synchronize()
            return 2.0 * self._src.numel() * 4 / 1e12

        self._unit = "tflop_per_s_fp32" if kind == "compute" else "tb_per_s_read_plus_write"
        self._looper.run(matmul if kind == "compute" else copy)

    def stop(self) -> tuple[float | None, str]:
        value = self._looper.halt()
        self._context = None
        return value, self._unit

    def close(self) -> None:
        self._looper.halt()


def choose_load(cuda_index: int) -> Any:  # pragma: no cover - needs a CUDA GPU
    """CuPy if it is installed and sees a GPU, else PyTorch with CUDA, else one clear GpuError."""
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # CUDA numbers GPUs as NVML does
    problems = []
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > cuda_index:
            return CupyLoad(cuda_index)
        problems.append("CuPy sees no such GPU")
    except ImportError:
        problems.append("CuPy is not installed")
    except Exception as exc:  # CUDA errors of any kind: say which and try PyTorch
        problems.append(f"CuPy failed ({exc})")
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.device_count() > cuda_index:
            return TorchLoad(cuda_index)
        problems.append("PyTorch has no CUDA device")
    except ImportError:
        problems.append("PyTorch is not installed")
    raise GpuError("gpu calibrate needs CuPy or PyTorch with CUDA on this GPU: " + "; ".join(problems))
