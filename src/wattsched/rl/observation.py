"""The DQN state as a pure function of a simulator snapshot: concatenated one-hots.

P1's state (102 inputs on P1's GPU), always present: configuration (one per configuration of
the GPU: 12 on the A100-40GB) | hour of day (24) | for each of the first m = 3 unfinished jobs by deadline:
relative deadline bin (10 + "no job") and mean remaining duration bin (10 + "no job"). Both continuous
features are in minutes and binned with left-closed edges ``[-100, 0, 0.05, 0.2, 0.5, 1, 5, 10, 20, 30,
+inf)``; values below -100 fall into the first bin.

P1's hour and per-job blocks can be dropped (``n_hours = 0``, ``jobs_observed = 0``). Queue features (ours,
each off at 0 / ``False``, which gives P1's state exactly), appended in this order:

* ``count_bins``: one-hot of the number of unfinished (arrived, not completed) jobs, ``0 .. count_bins - 2``,
  the last bin holding every larger count. P1's three job slots only tell 0, 1, 2 or "3 or more" jobs apart;
  the number of jobs is what decides how many slices pay off.
* ``training_bins``: the same for unfinished *training* jobs (the long ones; traces without kinds count 0).
* ``waiting_bins``: the same for jobs that wait for a slice.
* ``slice_busy``: one flag per slice position of the current configuration (``max_slices`` positions, in the
  configuration's placement order), 1 when a job runs there.
* ``hourly_arrivals`` (24 expected arrival counts, one per hour of day; empty: off): one input, not a
  one-hot, the expected number of arrivals in the next hour ``[now, now + 1 h)`` from that day profile (the
  generator's, piecewise constant per hour) divided by the largest hourly count, so in ``[0, 1]``. It tells
  the agent where in the hour it is and whether the load is about to rise or fall; it uses no actual future
  arrival.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.units import SECONDS_PER_MINUTE
from wattsched.workload.job import JobKind

__all__ = [
    "DEFAULT_BIN_EDGES_MIN",
    "JobFeatures",
    "ObservationSpec",
    "QueueFeatures",
    "encode_observation",
    "expected_arrivals_next_hour",
    "job_features",
    "queue_features",
    "snapshot_observation",
]

#: Lower edges of the 10 bins, in minutes (the last bin is open to +inf).
DEFAULT_BIN_EDGES_MIN: tuple[float, ...] = (-100.0, 0.0, 0.05, 0.2, 0.5, 1.0, 5.0, 10.0, 20.0, 30.0)


@dataclass(frozen=True)
class JobFeatures:
    """The two continuous features of one job, in seconds."""

    relative_deadline_s: float
    mean_remaining_s: float


class QueueFeatures(NamedTuple):
    """Counts over the unfinished jobs of a snapshot, and the busy slice positions."""

    unfinished: int
    training: int
    waiting: int
    busy_slices: tuple[int, ...] = ()


def _default_configurations() -> tuple[int | str, ...]:
    return load_gpu(None).configuration_ids


@dataclass(frozen=True)
class ObservationSpec:
    """Sizes of the one-hot blocks; ``configurations`` are the GPU's ids (default P1's A100-40GB).

    The queue blocks (``count_bins``, ``training_bins``, ``waiting_bins``, ``slice_busy``) default to off:
    the default spec is P1's 102-input state. ``n_hours = 0`` drops the hour block, ``jobs_observed = 0`` the
    per-job blocks (the configuration block always stays: the mask reads it).
    """

    configurations: tuple[int | str, ...] = field(default_factory=_default_configurations)
    n_hours: int = 24
    jobs_observed: int = 3
    bin_edges_min: tuple[float, ...] = DEFAULT_BIN_EDGES_MIN
    count_bins: int = 0
    training_bins: int = 0
    waiting_bins: int = 0
    slice_busy: bool = False
    #: Slice positions of the ``slice_busy`` block (the most slices any configuration of the GPU has).
    max_slices: int = 7
    #: Expected arrivals per hour of day (24 values) for the arrival-forecast input; ``()``: no forecast.
    hourly_arrivals: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for name in ("count_bins", "training_bins", "waiting_bins"):
            value = getattr(self, name)
            if value < 0 or value == 1:
                raise ValueError(f"{name} must be 0 (off) or >= 2, got {value}")
        if self.max_slices < 1:
            raise ValueError(f"max_slices must be >= 1, got {self.max_slices}")
        if self.n_hours < 0 or self.jobs_observed < 0:
            raise ValueError("n_hours and jobs_observed must be >= 0 (0: block off)")
        if self.hourly_arrivals:
            counts = tuple(float(c) for c in self.hourly_arrivals)
            if len(counts) != 24 or min(counts) < 0 or max(counts) <= 0:
                raise ValueError("hourly_arrivals needs 24 counts >= 0, not all 0")
            object.__setattr__(self, "hourly_arrivals", counts)

    @classmethod
    def for_gpu(cls, gpu: MigGpu | str | None, **blocks: Any) -> ObservationSpec:
        """The spec of a GPU: one configuration bin per configuration it lists; ``blocks`` sets the queue
        blocks (``count_bins=...``)."""
        resolved = load_gpu(gpu)
        ids = resolved.configuration_ids
        max_slices = max(len(resolved.configuration(c).slices) for c in ids)
        return cls(configurations=ids, max_slices=max_slices, **blocks)

    @cached_property
    def n_configurations(self) -> int:
        return len(self.configurations)

    @cached_property
    def bins_per_feature(self) -> int:
        """Value bins plus the "no job" bin."""
        return len(self.bin_edges_min) + 1

    @cached_property
    def p1_size(self) -> int:
        """Inputs of P1's part of the state."""
        return self.n_configurations + self.n_hours + self.jobs_observed * 2 * self.bins_per_feature

    @cached_property
    def size(self) -> int:
        busy = self.max_slices if self.slice_busy else 0
        forecast = 1 if self.hourly_arrivals else 0
        return self.p1_size + self.count_bins + self.training_bins + self.waiting_bins + busy + forecast

    @cached_property
    def uses_queue(self) -> bool:
        """Whether any queue block is on (the observation then needs :class:`QueueFeatures`)."""
        return bool(self.count_bins or self.training_bins or self.waiting_bins or self.slice_busy)

    @cached_property
    def peak_arrivals(self) -> float:
        """The largest of ``hourly_arrivals`` (the forecast input's scale); 0 without a forecast."""
        return max(self.hourly_arrivals, default=0.0)


def expected_arrivals_next_hour(time_s: float, hourly_arrivals: Sequence[float]) -> float:
    """Expected arrivals in ``[time_s, time_s + 3600)`` under a profile of ``hourly_arrivals[h]`` arrivals in
    hour ``h`` of the day (constant within the hour; days wrap around): the rest of this hour's count plus the
    matching share of the next hour's."""
    hour, into_s = divmod(float(time_s), 3600.0)
    share = into_s / 3600.0
    now, after = hourly_arrivals[int(hour) % 24], hourly_arrivals[(int(hour) + 1) % 24]
    return float(now * (1.0 - share) + after * share)


def bin_index(value_min: float, edges_min: Sequence[float]) -> int:
    """Index of the left-closed bin holding ``value_min`` (below the first edge: bin 0)."""
    return max(bisect.bisect_right(edges_min, value_min) - 1, 0)


def job_features(
    now_s: float, jobs: Iterable[tuple[float, float, float, Sequence[float]]], count: int = 3
) -> list[JobFeatures]:
    """Features of the first ``count`` unfinished jobs by deadline (ties: earlier arrival, then input order).

    Each job is ``(arrival_s, deadline_s, remaining_fraction, durations_s)``; the mean remaining duration is
    taken over the GPU's MIG compute sizes (``durations_s`` without its last entry, the MIG-disabled time).
    """
    ranked = sorted(enumerate(jobs), key=lambda item: (item[1][1], item[1][0], item[0]))
    features = []
    for _, (_, deadline_s, fraction, durations_s) in ranked[:count]:
        sizes = len(durations_s) - 1
        mean_s = fraction * math.fsum(durations_s[:sizes]) / sizes
        features.append(JobFeatures(deadline_s - now_s, mean_s))
    return features


def queue_features(jobs: Iterable[Any]) -> QueueFeatures:
    """Counts of a snapshot's unfinished jobs (``JobView``: ``kind``, ``slice_index``)."""
    unfinished = training = waiting = 0
    busy = []
    for job in jobs:
        unfinished += 1
        training += job.kind is JobKind.TRAINING
        if job.slice_index is None:
            waiting += 1
        else:
            busy.append(int(job.slice_index))
    return QueueFeatures(unfinished, training, waiting, tuple(sorted(busy)))


def _one_hot_count(vector: np.ndarray, offset: int, bins: int, count: int) -> int:
    if bins:
        vector[offset + min(count, bins - 1)] = 1.0
    return offset + bins


def encode_observation(
    configuration: int | str,
    time_s: float,
    features: Sequence[JobFeatures],
    spec: ObservationSpec | None = None,
    queue: QueueFeatures | None = None,
) -> np.ndarray:
    """The float32 one-hot vector; ``configuration`` is one of ``spec.configurations``; jobs beyond
    ``len(features)`` are "no job". ``queue`` is needed when a queue block of ``spec`` is on."""
    spec = spec or ObservationSpec()
    if configuration not in spec.configurations:
        raise ValueError(f"configuration must be one of {list(spec.configurations)}, got {configuration!r}")
    vector = np.zeros(spec.size, dtype=np.float32)
    vector[spec.configurations.index(configuration)] = 1.0
    offset = spec.n_configurations
    if spec.n_hours:
        vector[offset + int(time_s // 3600.0) % spec.n_hours] = 1.0
    offset += spec.n_hours
    width = spec.bins_per_feature
    no_job = width - 1
    for slot in range(spec.jobs_observed):
        if slot < len(features):
            item = features[slot]
            deadline_bin = bin_index(item.relative_deadline_s / SECONDS_PER_MINUTE, spec.bin_edges_min)
            duration_bin = bin_index(item.mean_remaining_s / SECONDS_PER_MINUTE, spec.bin_edges_min)
        else:
            deadline_bin = duration_bin = no_job
        vector[offset + deadline_bin] = 1.0
        vector[offset + width + duration_bin] = 1.0
        offset += 2 * width
    if spec.hourly_arrivals:
        vector[-1] = expected_arrivals_next_hour(time_s, spec.hourly_arrivals) / spec.peak_arrivals
    if not spec.uses_queue:
        return vector
    if queue is None:
        raise ValueError("this observation spec has queue blocks: pass queue=QueueFeatures(...)")
    offset = _one_hot_count(vector, offset, spec.count_bins, queue.unfinished)
    offset = _one_hot_count(vector, offset, spec.training_bins, queue.training)
    offset = _one_hot_count(vector, offset, spec.waiting_bins, queue.waiting)
    if spec.slice_busy:
        for position in queue.busy_slices:
            if not 0 <= position < spec.max_slices:
                raise ValueError(f"busy slice position {position} outside 0..{spec.max_slices - 1}")
            vector[offset + position] = 1.0
    return vector


def snapshot_observation(snapshot: Any, spec: ObservationSpec | None = None) -> np.ndarray:
    """The observation of a simulator snapshot (``SimSnapshot``: now_s, configuration, unfinished jobs)."""
    spec = spec or ObservationSpec()
    now_s = float(snapshot.now_s)
    rows = ((j.arrival_s, j.deadline_s, j.remaining_fraction, j.durations_s) for j in snapshot.jobs)
    queue = queue_features(snapshot.jobs) if spec.uses_queue else None
    return encode_observation(
        snapshot.configuration, now_s, job_features(now_s, rows, spec.jobs_observed), spec, queue
    )
