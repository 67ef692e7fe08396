"""P1's Table II findings that name configurations, as data (``p1_findings.toml``), and the configurations
of uniform slice size derived from the catalogue."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["paper_findings", "uniform_configurations"]


@cache
def paper_findings() -> dict[str, Any]:
    """P1's findings that name configurations (``p1_findings.toml``: ids of P1's A100-40GB numbering)."""
    text = resources.files("wattsched.studies").joinpath("p1_findings.toml").read_text("utf-8")
    return tomllib.loads(text)


def uniform_configurations() -> tuple[str, ...]:
    """Configurations of P1's GPU whose slices all have one compute size (there EDF-FS ≡ EDF-SS and
    LLF ≡ LALF, docs/concepts/mig-model.md), derived from the catalogue."""
    from wattsched.hardware.catalogue import load_gpu

    gpu = load_gpu(paper_findings()["gpu"])
    return tuple(str(c.ident) for c in gpu.configurations if len({s.compute for s in c.slices}) == 1)
