"""Which GPUs the P1 studies compare with the A100-40GB (``wattsched reproduce --gpu``).

Table II and Table III run P1's GPU (the A100-40GB) in every variant and, at the ``paper`` preset, each
comparison GPU as an extra variant ("P1 on other GPUs" in the report). By default the comparison GPU is the
H200 of the catalogue; ``--gpu NAME|FILE.toml`` (repeatable) replaces that list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from wattsched.hardware.catalogue import DEFAULT_GPU, load_gpu

__all__ = ["P1_GPU", "variant_name", "variants_with_gpus"]

#: The GPU of P1's experiments; every variant that is not a GPU comparison runs on it.
P1_GPU = DEFAULT_GPU


class _OnGpu(Protocol):
    @property
    def gpu(self) -> str: ...


V = TypeVar("V", bound=_OnGpu)


def variants_with_gpus(
    defaults: Sequence[V], gpus: Sequence[str] | None, make: Callable[[str], V]
) -> list[V]:
    """``defaults``, with their GPU comparisons replaced by ``make(g)`` for each of ``gpus`` when given.

    Each GPU must load from the catalogue (a name or a TOML path: an unknown one raises the catalogue's
    error listing the names); duplicates and P1's own GPU are dropped; ``gpus=None`` keeps ``defaults``.
    """
    if gpus is None:
        return list(defaults)
    for gpu in gpus:
        load_gpu(gpu)
    kept = [v for v in defaults if v.gpu == P1_GPU]
    return kept + [make(g) for g in dict.fromkeys(gpus) if g != P1_GPU]


def variant_name(preset: str, deadline_rule: str, gpu: str) -> str:
    """A Table II/III variant's name: the preset, then the deadline rule unless P1's, then the GPU unless P1's
    (``paper``, ``paper+slice-aware``, ``paper+h200-141gb``)."""
    parts = [preset]
    if deadline_rule != "p1":
        parts.append(deadline_rule)
    if gpu != P1_GPU:
        parts.append(gpu)
    return "+".join(parts)
