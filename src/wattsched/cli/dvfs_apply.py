"""`wattsched dvfs apply` / `dvfs reset`: P2's clock setting on a real GPU, through NVML's locked clocks.

A dry run by default: the command says which supported clock pair it would lock. With ``--apply`` (as root)
it locks the SM and memory clocks (``nvmlDeviceSetGpuLockedClocks`` / ``SetMemoryLockedClocks``);
``dvfs reset --apply`` unlocks them. Clocks come from NVML's supported list: a requested clock is rounded
*up* to the next supported one (a deadline met at the requested speed is still met), and clamped to the
highest. P2's normalised ``f`` (``--f-core`` / ``--f-mem``, as ``dvfs solve`` writes them) is relative to
the GPU's default application clocks (docs/concepts/dvfs.md: f = 1 is the factory default).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wattsched.cli._output import print_json
from wattsched.cli._parsing import int_at_least, positive_finite_float
from wattsched.cli.gpu import add_backend_option, opened
from wattsched.hardware.gpu import GpuBackend, GpuError

__all__ = ["add_parsers", "choose_clock", "require_privileged"]


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """Register ``apply`` and ``reset`` under ``wattsched dvfs``."""
    apply = commands.add_parser("apply", help="lock a GPU's SM and memory clocks (dry run unless --apply)")
    core = apply.add_mutually_exclusive_group(required=True)
    core.add_argument("--gpu-clock-mhz", type=positive_finite_float, metavar="F", help="SM clock in MHz")
    core.add_argument(
        "--f-core",
        type=positive_finite_float,
        metavar="X",
        help="P2's normalised core frequency (1 = default application clock)",
    )
    memory = apply.add_mutually_exclusive_group()
    memory.add_argument(
        "--mem-clock-mhz",
        type=positive_finite_float,
        metavar="M",
        help="memory clock in MHz (default: the default application memory clock)",
    )
    memory.add_argument(
        "--f-mem", type=positive_finite_float, metavar="Y", help="P2's normalised memory frequency"
    )
    reset = commands.add_parser("reset", help="unlock a GPU's clocks (dry run unless --apply)")
    for command, func in ((apply, _apply), (reset, _reset)):
        add_backend_option(command)
        command.add_argument("--index", type=int_at_least(0), default=0, help="GPU index (default 0)")
        command.add_argument("--apply", action="store_true", help="change the GPU (root only)")
        command.add_argument("--json", action="store_true", help="print one JSON object")
        command.set_defaults(func=func)


def choose_clock(supported: list[int] | tuple[int, ...], wanted_mhz: float) -> int:
    """The lowest supported clock >= ``wanted_mhz``, or the highest one (see the module docstring)."""
    if not supported:
        raise GpuError("NVML reports no supported clocks for this GPU")
    above = [c for c in supported if c >= wanted_mhz - 1e-9]
    return min(above) if above else max(supported)


def require_privileged(backend: GpuBackend, what: str) -> None:
    """GpuError unless the backend may change the GPU (root for NVML)."""
    if not backend.privileged():
        raise GpuError(
            f"{what} --apply needs root (NVML refuses clock and MIG changes otherwise); nothing changed"
        )


def _chosen(backend: GpuBackend, args: argparse.Namespace) -> dict[str, Any]:
    clocks = backend.clocks(args.index)
    supported = backend.supported_clocks_mhz(args.index)
    if not supported:
        raise GpuError(f"GPU {args.index}: NVML reports no supported clocks (clocks cannot be locked)")
    default_mem = clocks.mem_default_mhz or max(supported)
    default_sm = clocks.sm_default_mhz or max(max(v) for v in supported.values())
    wanted_mem = (
        args.mem_clock_mhz
        if args.mem_clock_mhz is not None
        else args.f_mem * default_mem
        if args.f_mem is not None
        else default_mem
    )
    mem = choose_clock(sorted(supported), wanted_mem)
    wanted_sm = args.gpu_clock_mhz if args.gpu_clock_mhz is not None else args.f_core * default_sm
    sm = choose_clock(supported[mem], wanted_sm)
    return {
        "index": args.index,
        "requested_sm_mhz": wanted_sm,
        "requested_mem_mhz": wanted_mem,
        "sm_mhz": sm,
        "mem_mhz": mem,
        "f_core": sm / default_sm,
        "f_mem": mem / default_mem,
        "clamped": wanted_sm > max(supported[mem]) + 1e-9 or wanted_mem > max(supported) + 1e-9,
    }


def _report(summary: dict[str, Any], as_json: bool, text: str) -> None:
    if as_json:
        print_json(summary)
    else:
        sys.stdout.write(text + "\n")


def _apply(args: argparse.Namespace) -> int:
    backend = opened(args)
    try:
        summary = _chosen(backend, args)
        if args.apply:
            require_privileged(backend, "dvfs apply")
            backend.set_locked_clocks(args.index, summary["sm_mhz"], summary["mem_mhz"])
        summary["applied"] = bool(args.apply)
    finally:
        backend.close()
    verb = "locked" if args.apply else "would lock (dry run; add --apply)"
    note = " (clamped to the highest supported clock)" if summary["clamped"] else ""
    _report(
        summary,
        args.json,
        f"GPU {args.index}: {verb} SM {summary['sm_mhz']} MHz, memory "
        f"{summary['mem_mhz']} MHz (f_core {summary['f_core']:.3f}, f_mem {summary['f_mem']:.3f}){note}",
    )
    return 0


def _reset(args: argparse.Namespace) -> int:
    backend = opened(args)
    try:
        if args.apply:
            require_privileged(backend, "dvfs reset")
            backend.reset_clocks(args.index)
    finally:
        backend.close()
    verb = "unlocked" if args.apply else "would unlock (dry run; add --apply)"
    _report(
        {"index": args.index, "applied": bool(args.apply)},
        args.json,
        f"GPU {args.index}: {verb} the SM and memory clocks",
    )
    return 0
