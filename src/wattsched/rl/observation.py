"""The DQN state of papers.md §A.6.1 as a pure function: concatenated one-hots (102 inputs on P1's GPU).

Layout: configuration (one per configuration of the GPU: 12 on the A100-40GB) | hour of day (24) | for each of
the first m = 3 unfinished jobs by deadline:
relative deadline bin (10 + "no job") and mean remaining duration bin (10 + "no job").
Both continuous features are in minutes and binned with left-closed edges
``[-100, 0, 0.05, 0.2, 0.5, 1, 5, 10, 20, 30, +inf)``; values below -100 fall into the first bin.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.mig import MigGpu
from wattsched.units import SECONDS_PER_MINUTE

__all__ = [
    "DEFAULT_BIN_EDGES_MIN",
    "JobFeatures",
    "ObservationSpec",
    "encode_observation",
    "job_features",
    "snapshot_observation",
]

#: Lower edges of the 10 bins, in minutes (the last bin is open to +inf).
DEFAULT_BIN_EDGES_MIN: tuple[float, ...] = (-100.0, 0.0, 0.05, 0.2, 0.5, 1.0, 5.0, 10.0, 20.0, 30.0)


@dataclass(frozen=True)
class JobFeatures:
    """The two continuous features of one job, in seconds."""

    relative_deadline_s: float
    mean_remaining_s: float


def _default_configurations() -> tuple[int | str, ...]:
    return load_gpu(None).configuration_ids


@dataclass(frozen=True)
class ObservationSpec:
    """Sizes of the one-hot blocks; ``configurations`` are the GPU's ids (default P1's A100-40GB)."""

    configurations: tuple[int | str, ...] = field(default_factory=_default_configurations)
    n_hours: int = 24
    jobs_observed: int = 3
    bin_edges_min: tuple[float, ...] = DEFAULT_BIN_EDGES_MIN

    @classmethod
    def for_gpu(cls, gpu: MigGpu | str | None) -> ObservationSpec:
        """The spec of a GPU: one configuration bin per configuration it lists."""
        return cls(configurations=load_gpu(gpu).configuration_ids)

    @property
    def n_configurations(self) -> int:
        return len(self.configurations)

    @property
    def bins_per_feature(self) -> int:
        """Value bins plus the "no job" bin."""
        return len(self.bin_edges_min) + 1

    @property
    def size(self) -> int:
        return self.n_configurations + self.n_hours + self.jobs_observed * 2 * self.bins_per_feature


def bin_index(value_min: float, edges_min: Sequence[float]) -> int:
    """Index of the left-closed bin holding ``value_min`` (below the first edge: bin 0)."""
    index = int(np.searchsorted(np.asarray(edges_min), value_min, side="right")) - 1
    return max(index, 0)


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


def encode_observation(
    configuration: int | str,
    time_s: float,
    features: Sequence[JobFeatures],
    spec: ObservationSpec | None = None,
) -> np.ndarray:
    """The float32 one-hot vector; ``configuration`` is one of ``spec.configurations``; jobs beyond
    ``len(features)`` are "no job"."""
    spec = spec or ObservationSpec()
    if configuration not in spec.configurations:
        raise ValueError(f"configuration must be one of {list(spec.configurations)}, got {configuration!r}")
    vector = np.zeros(spec.size, dtype=np.float32)
    vector[spec.configurations.index(configuration)] = 1.0
    offset = spec.n_configurations
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
    return vector


def snapshot_observation(snapshot: Any, spec: ObservationSpec | None = None) -> np.ndarray:
    """The observation of a simulator snapshot (``SimSnapshot``: now_s, configuration, unfinished jobs)."""
    spec = spec or ObservationSpec()
    now_s = float(snapshot.now_s)
    rows = ((j.arrival_s, j.deadline_s, j.remaining_fraction, j.durations_s) for j in snapshot.jobs)
    return encode_observation(
        snapshot.configuration, now_s, job_features(now_s, rows, spec.jobs_observed), spec
    )
