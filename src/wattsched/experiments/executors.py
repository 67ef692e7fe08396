"""Executors: run a pure cell function over many cells, locally (process pool) or on Ray.

Every executor yields ``(index, rows)`` pairs as cells finish, in completion order; the runner stores them
and orders the final results by cell key, so the executor never changes what ends up on disk.
"""

from __future__ import annotations

import concurrent.futures as futures
import logging
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from wattsched.errors import ConfigError, WattschedError
from wattsched.registry import Registry

__all__ = ["EXECUTORS", "CellFailedError", "Executor", "LocalExecutor", "RayExecutor", "default_workers"]

log = logging.getLogger(__name__)

CellFunction = Callable[[Any], Any]


class CellFailedError(WattschedError):
    """A cell raised; the message names the cell. Cells that finished before it are still delivered."""

    def __init__(self, key: str, cause: BaseException) -> None:
        self.key = key
        self.cause = cause
        super().__init__(f"cell '{key}' failed: {type(cause).__name__}: {cause}")


class Executor(Protocol):
    """Runs ``fn(cell)`` for each cell and yields ``(index into cells, result)`` as they finish."""

    name: str
    workers: int

    def run(self, fn: CellFunction, cells: Sequence[Any]) -> Iterator[tuple[int, Any]]: ...

    def close(self) -> None: ...


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _check_workers(workers: int | None) -> int:
    if workers is None:
        return default_workers()
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    return workers


def _key(cell: Any) -> str:
    return str(getattr(cell, "key", cell))


class LocalExecutor:
    """A process pool of ``workers`` processes; with one worker the cells run in this process."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = _check_workers(workers)

    def run(self, fn: CellFunction, cells: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        if self.workers == 1 or len(cells) <= 1:
            for index, cell in enumerate(cells):
                try:
                    result = fn(cell)
                except Exception as exc:
                    raise CellFailedError(_key(cell), exc) from exc
                yield index, result
            return
        # fork where available: workers inherit the imported modules (fast start, no re-import).
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        with futures.ProcessPoolExecutor(
            max_workers=min(self.workers, len(cells)), mp_context=context
        ) as pool:
            pending = {pool.submit(fn, cell): index for index, cell in enumerate(cells)}
            failure: CellFailedError | None = None
            try:
                for future in futures.as_completed(pending):
                    index = pending[future]
                    if future.cancelled():  # dropped after a failure: it never ran
                        continue
                    error = future.exception()
                    if error is None:
                        yield index, future.result()
                    elif failure is None:
                        failure = CellFailedError(_key(cells[index]), error)
                        for other in pending:  # let running cells finish; drop those not started
                            other.cancel()
            finally:
                for other in pending:
                    other.cancel()
            if failure is not None:
                raise failure

    def close(self) -> None:
        return None


def _ray_call(fn: CellFunction, cell: Any) -> Any:
    return fn(cell)


class RayExecutor:
    """Ray tasks, one per cell. Connects to ``address`` or starts a local instance with ``workers`` CPUs."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        self.workers = _check_workers(workers)
        self.address = address
        self._started = False

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError:
            raise ConfigError("the ray executor needs Ray: pip install 'wattsched[ray]'") from None
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address:
                kwargs["address"] = self.address
            else:
                # A local instance talks to itself only: keep its services on the loopback interface.
                kwargs["num_cpus"] = self.workers
                kwargs["_node_ip_address"] = "127.0.0.1"
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(f"cannot start or reach Ray ({self.address or 'local'}): {exc}") from None
            self._started = True
        return ray

    def run(self, fn: CellFunction, cells: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        if not cells:
            return
        ray = self._ray()
        module = getattr(fn, "__module__", None)
        _pickle_by_value_if_local(ray, fn)
        log.debug("ray: %d cells of %s", len(cells), module)
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_call)
        fn_ref = ray.put(fn)
        refs = {remote.remote(fn_ref, cell): index for index, cell in enumerate(cells)}
        waiting = list(refs)
        failure: CellFailedError | None = None
        try:
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1)
                for ref in done:
                    index = refs[ref]
                    try:
                        result = ray.get(ref)
                    except Exception as exc:
                        cause = getattr(exc, "cause", None) or exc
                        if failure is None:
                            failure = CellFailedError(_key(cells[index]), cause)
                            for other in waiting:
                                ray.cancel(other)
                        continue
                    yield index, result
        finally:
            for other in waiting:
                ray.cancel(other)
        if failure is not None:
            raise failure

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


def _pickle_by_value_if_local(ray: Any, fn: CellFunction) -> None:
    """Ship code that Ray workers cannot import (scripts, test modules) by value instead of by name."""
    import importlib.util
    import sys

    owner = getattr(fn, "__self__", None)
    module_name = getattr(type(owner) if owner is not None else fn, "__module__", None)
    if not module_name or module_name == "__main__" or module_name.startswith("wattsched."):
        return
    module = sys.modules.get(module_name)
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        spec = None
    if module is not None and (spec is None or "site-packages" not in str(spec.origin)):
        ray.cloudpickle.register_pickle_by_value(module)


EXECUTORS: Registry[Executor] = Registry("executor")
EXECUTORS.register("local")(LocalExecutor)
EXECUTORS.register("ray")(RayExecutor)
