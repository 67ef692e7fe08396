"""The Python API validates as the CLI does: a bad argument is one clear error (a ValueError subclass of
wattsched's own) naming the argument, never a numpy TypeError from deep inside."""

from __future__ import annotations

import math

import numpy as np
import pytest

import wattsched
from wattsched import WorkloadSpec, generate_jobs, simulate
from wattsched.errors import ConfigError, UnknownNameError, WattschedError

JOBS = generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 1)


@pytest.mark.parametrize("horizon_s", [-5, -1e-9, math.nan, math.inf])
def test_simulate_refuses_a_bad_horizon(horizon_s: float) -> None:
    with pytest.raises(ConfigError, match="horizon_s"):
        simulate(JOBS, 3, "edf-fs", horizon_s=horizon_s)


@pytest.mark.parametrize("seed", ["abc", -1, 1.5, True, None, [1, 2]])
def test_generate_jobs_refuses_a_bad_seed(seed: object) -> None:
    with pytest.raises(ConfigError, match="seed must be a whole number >= 0") as caught:
        generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), seed)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError) and repr(seed) in str(caught.value)


def test_generate_jobs_takes_numpy_seeds_alike() -> None:
    spec = WorkloadSpec(rate_per_min=0.5, hours=1)
    assert generate_jobs(spec, np.int64(7)) == generate_jobs(spec, 7)
    assert generate_jobs(spec, np.random.SeedSequence(7)) == generate_jobs(spec, np.random.SeedSequence(7))


def test_generate_jobs_refuses_a_spec_that_is_not_one() -> None:
    with pytest.raises(ConfigError, match="spec must be a WorkloadSpec, got dict"):
        generate_jobs({"rate_per_min": 1}, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: simulate(JOBS, 3, "edf-fz"), "did you mean 'edf-fs'"),
        (lambda: simulate(JOBS, 99, "edf-fs"), "99"),
        (lambda: simulate(JOBS, 3, "edf-fs", gpu="a100-40g"), "did you mean 'a100-40gb'"),
        (lambda: WorkloadSpec(rate_per_min=-1), "rate"),
        (lambda: WorkloadSpec(profile="alibaba-dya"), "did you mean 'alibaba-day'"),
        (lambda: wattsched.load_gpu("h200"), "h200"),
    ],
)
def test_bad_names_and_values_name_themselves(call: object, named: str) -> None:
    with pytest.raises(WattschedError) as caught:
        call()  # type: ignore[operator]
    assert isinstance(caught.value, ValueError | UnknownNameError) and named in str(caught.value)


@pytest.mark.parametrize(
    ("name", "phrases"),
    [
        ("generate_jobs", ("rate_per_min", "jobs/min", "alibaba-day", "default 24 h", "seconds", "seed")),
        ("simulate", ("edf-fs", "lalf", "no-mig", "a100-40gb", "seconds", "default")),
        ("et_score", ("J", "minutes", "default")),
        ("read_trace", (".csv", ".parquet", "seconds", "row")),
        ("write_trace", (".csv", ".parquet", "atomically")),
        ("load_gpu", ("a100-40gb", "h200-141gb", "default", ".toml")),
        ("available", ('"gpu"', '"dvfs"')),
        ("load", ('"gpu"', '"dvfs"', ".toml")),
    ],
)
def test_public_functions_document_choices_units_and_defaults(name: str, phrases: tuple[str, ...]) -> None:
    doc = getattr(wattsched, name).__doc__ or ""
    missing = [phrase for phrase in phrases if phrase not in doc]
    assert missing == [], doc
