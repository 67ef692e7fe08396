"""Hardware as data: the GPU catalogue (MIG GPUs and DVFS GPU models), one loader family for all of it.

``available("gpu")`` lists the catalogue, ``load_gpu("h200-141gb")`` (or a path to a ``.toml`` entry) gives a
:class:`MigGpu` with its profiles, derived configurations, power model and clocks.
"""

from __future__ import annotations

from wattsched.hardware._toml import CatalogueError
from wattsched.hardware.catalogue import available, load, load_gpu
from wattsched.hardware.mig import NO_MIG, Clocks, Configuration, InstanceProfile, MigGpu, Slice
from wattsched.hardware.power import PowerCurve, PowerModel, PowerTable

__all__ = [
    "NO_MIG",
    "CatalogueError",
    "Clocks",
    "Configuration",
    "InstanceProfile",
    "MigGpu",
    "PowerCurve",
    "PowerModel",
    "PowerTable",
    "Slice",
    "available",
    "load",
    "load_gpu",
]
