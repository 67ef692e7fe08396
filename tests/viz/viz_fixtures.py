"""Builders shared by the viz tests: a sweep directory of CONTRACT §9's shape and a small reproduce run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

#: Per (configuration, policy): energy (J) of seeds 1, 2, 3; tardiness is energy / 1e4 s, ET energy / 1e6.
ENERGY_J: dict[tuple[str, str], tuple[float, float, float]] = {
    ("3", "edf-fs"): (3.6e6, 7.2e6, 10.8e6),  # 1, 2, 3 kWh: mean 2 kWh, sd 1 kWh
    ("3", "edf-ss"): (3.6e6, 3.6e6, 3.6e6),  # no spread: a zero-width interval
    ("no-mig", "edf-fs"): (7.2e6, 7.2e6, 10.8e6),
    ("no-mig", "edf-ss"): (1.8e6, 3.6e6, 5.4e6),
}


def sweep_runs() -> pd.DataFrame:
    rows = []
    for (configuration, policy), energies in ENERGY_J.items():
        for seed, energy_j in zip((1, 2, 3), energies, strict=True):
            rows.append(
                {
                    "gpu": "a100-40gb",
                    "configuration": configuration,
                    "policy": policy,
                    "seed": seed,
                    "workload": "alibaba-day",
                    "rate_multiplier": 2.5,
                    "energy_j": energy_j,
                    "avg_tardiness_s": energy_j / 1e4,
                    "late_jobs": seed,
                    "preemptions": 10 * seed,
                    "et": energy_j / 1e6,
                }
            )
    return pd.DataFrame(rows)


def make_sweep_dir(folder: Path, runs: pd.DataFrame | None = None, pool: object = None) -> Path:
    """A sweep directory: ``runs.parquet`` (default :func:`sweep_runs`) and ``sweep.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    (runs if runs is not None else sweep_runs()).to_parquet(folder / "runs.parquet", index=False)
    pool = pool if pool is not None else {"a_per_j": 1.5e-7, "mean_energy_j": 5.4e6, "runs": 12}
    (folder / "sweep.json").write_text(json.dumps(pool), encoding="utf-8")
    return folder


def make_small_reproduce(folder: Path) -> Path:
    """A real, small `reproduce` output: Table II with 2 queues of 2 h per condition on 3 configurations."""
    from wattsched.studies import reproduce

    reproduce(
        folder,
        "quick",
        only=["table2"],
        workers=1,
        progress=False,
        study_options={"table2": {"iterations": 2, "hours": 2, "configurations": [1, 3, "no-mig"]}},
    )
    return folder
