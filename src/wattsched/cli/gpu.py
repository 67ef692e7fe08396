"""`wattsched gpu` on a real GPU (or a replayed snapshot): info, record, snapshot, calibrate
(docs/howto/nvml.md).

All of them only read the GPU; ``fake-snapshot`` writes fake GPUs of a catalogue entry to a state file, which
``--backend fake:FILE`` then serves with its changes kept in the file. ``--backend nvml|fake:FILE`` (default
``$WATTSCHED_GPU_BACKEND``, else nvml).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wattsched.cli._output import check_suffix, json_text, print_json, write_text
from wattsched.cli._parsing import OneLineErrorParser, add_gpu_option, int_at_least, resolve_gpu
from wattsched.hardware._gpu_toml import parse_gpu
from wattsched.hardware._toml import read_toml
from wattsched.hardware.catalogue import available
from wattsched.hardware.gpu import GpuBackend, GpuError, open_backend

__all__ = ["add_backend_option", "add_parser", "catalogue_match", "opened"]


def add_backend_option(parser: argparse.ArgumentParser) -> None:
    """``--backend`` as every real-GPU command takes it."""
    parser.add_argument(
        "--backend", metavar="nvml|fake:FILE", help="GPU backend (default: $WATTSCHED_GPU_BACKEND, else nvml)"
    )


def opened(args: argparse.Namespace) -> GpuBackend:
    """The backend of ``args.backend``, with ``args.index`` (when the command has one) checked."""
    backend = open_backend(args.backend)
    index = getattr(args, "index", None)
    if index is not None and index >= backend.device_count():
        count = backend.device_count()
        backend.close()
        raise GpuError(f"no GPU with index {index} ({backend.name} has {count}: 0..{count - 1})")
    return backend


def add_parser(groups: argparse._SubParsersAction) -> None:
    parser = groups.add_parser("gpu", help="real GPUs through NVML: info, record, snapshot, calibrate")
    commands = parser.add_subparsers(
        dest="gpu_command", metavar="COMMAND", required=True, parser_class=OneLineErrorParser
    )

    info = commands.add_parser(
        "info", help="name, driver, memory, MIG mode and profiles, clocks, power limits"
    )
    info.add_argument("--json", action="store_true", help="print one JSON object")
    record = commands.add_parser(
        "record", help="write the NVML read-outs as a JSON snapshot (fake:FILE replays it)"
    )
    record.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE.json",
        help="the NVML read-outs (replay them with --backend fake:FILE.json)",
    )
    snapshot = commands.add_parser(
        "snapshot", help="write a catalogue entry (TOML) usable as --gpu FILE.toml"
    )
    snapshot.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE.toml",
        help="catalogue entry to write (use it as --gpu FILE.toml)",
    )
    snapshot.add_argument(
        "--power-curve",
        metavar="FILE.csv",
        help="power curves measured by 'gpu calibrate' (default: a linear estimate)",
    )
    calibrate = commands.add_parser(
        "calibrate", help="measure power against busy SMs (read-only; CuPy or PyTorch)"
    )
    calibrate.add_argument(
        "-o", "--output", required=True, metavar="FILE.csv", help="power curve to write (busy SMs -> W)"
    )
    calibrate.add_argument(
        "--quick", action="store_true", help="0.5 s settle + 1.5 s per level (default 1 + 4 s)"
    )
    fake = commands.add_parser(
        "fake-snapshot",
        help="write fake MIG GPUs of a catalogue GPU (a state file: --backend fake:FILE changes it)",
        description="Write a fake-GPU state file of COUNT catalogue GPUs in MIG mode, each holding the "
        "instances of one configuration. --backend fake:FILE serves it like real GPUs, and changes "
        "(mig plan --apply, dvfs apply) are kept in the file, so a later command sees them: a rehearsal of "
        "repartitions without a GPU.",
    )
    add_gpu_option(fake)
    fake.add_argument("--count", type=int_at_least(1), default=1, help="GPUs in the file (default 1)")
    fake.add_argument(
        "--config", metavar="C", help="configuration of every GPU (default: the GPU's static configuration)"
    )
    fake.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the GPUs' UUIDs (default 0)")
    fake.add_argument("-o", "--output", required=True, metavar="FILE.json", help="state file to write")
    fake.set_defaults(func=_fake_snapshot)
    for command, func in ((info, _info), (record, _record), (snapshot, _snapshot), (calibrate, _calibrate)):
        add_backend_option(command)
        if command is not record:
            command.add_argument("--index", type=int_at_least(0), default=0, help="GPU index (default 0)")
        command.set_defaults(func=func)


def _fake_snapshot(args: argparse.Namespace) -> int:
    from wattsched.hardware.gpu.fake_state import FakeGpuState

    check_suffix(args.output, (".json",))
    gpu = resolve_gpu(args)
    ident: int | str = gpu.role("static") if args.config is None else args.config
    ident = int(ident) if isinstance(ident, str) and ident.isdigit() else ident
    configuration = gpu.configuration(ident)  # ConfigError lists the valid ids
    FakeGpuState.create(args.output, [(gpu, configuration.ident)] * args.count, seed=args.seed)
    print(
        f"wrote {args.count} fake {gpu.name} GPU(s) in configuration {configuration.ident} to "
        f"{args.output}; use --backend fake:{args.output}",
        file=sys.stderr,
    )
    return 0


def catalogue_match(name: str, memory_total_bytes: int) -> dict[str, Any]:
    """The catalogue id this GPU would have, and whether the catalogue has it."""
    from wattsched.hardware.gpu.snapshot import catalogue_id

    ident = catalogue_id(name, memory_total_bytes)
    known = ident in available("gpu")
    return {"catalogue": ident if known else None, "catalogue_id": ident}


def gpu_info(backend: GpuBackend, index: int) -> dict[str, Any]:
    """The JSON of ``gpu info`` (docs/howto/nvml.md keys: name, mig_mode, profiles, power_limit_w, ...)."""
    identity = backend.identity(index)
    limits = backend.power_limits(index)
    clocks = backend.clocks(index)
    current, pending = backend.mig_mode(index)
    names = {p.nvml_id: p.name for p in backend.profiles(index)}
    counter_j = backend.energy_j(index)  # J since the driver loaded; None without a counter
    return {
        "backend": backend.name,
        "index": index,
        "gpu_count": backend.device_count(),
        "name": identity.name,
        "driver": identity.driver,
        "memory_total_bytes": identity.memory_total_bytes,
        "memory_mb": identity.memory_total_bytes // 2**20,
        "multiprocessor_count": identity.multiprocessor_count,
        "mig_mode": current,
        "mig_mode_pending": pending,
        "profiles": [
            {
                "name": p.name,
                "nvml_id": p.nvml_id,
                "compute": p.compute,
                "memory_slots": p.memory_slots,
                "sms": p.sms,
                "memory_mb": p.memory_mb,
                "placements": [list(x) for x in p.placements],
                "media": p.media,
            }
            for p in backend.profiles(index)
        ],
        "mig_instances": [
            {
                "instance_id": i.instance_id,
                "profile": names.get(i.profile_id, str(i.profile_id)),
                "start": i.start,
                "size": i.size,
            }
            for i in backend.gpu_instances(index)
        ],
        "power_w": backend.power_w(index),
        "energy_counter": counter_j is not None,
        "energy_counter_j": counter_j,
        "power_limit_w": limits.enforced_w,
        "power_limit_default_w": limits.default_w,
        "power_limit_min_w": limits.min_w,
        "power_limit_max_w": limits.max_w,
        "supported_clocks_mhz": {str(m): list(f) for m, f in backend.supported_clocks_mhz(index).items()},
        "clocks_mhz": {
            "sm": clocks.sm_now_mhz,
            "mem": clocks.mem_now_mhz,
            "sm_max": clocks.sm_max_mhz,
            "mem_max": clocks.mem_max_mhz,
            "sm_default": clocks.sm_default_mhz,
            "mem_default": clocks.mem_default_mhz,
        },
        **catalogue_match(identity.name, identity.memory_total_bytes),
    }


def _info(args: argparse.Namespace) -> int:
    backend = opened(args)
    try:
        info = gpu_info(backend, args.index)
    finally:
        backend.close()
    if args.json:
        print_json(info)
        return 0
    clocks = info["supported_clocks_mhz"]
    lines = [
        f"GPU {info['index']} of {info['gpu_count']}: {info['name']} "
        f"(driver {info['driver']}, {info['backend']})",
        f"memory            {info['memory_mb']:,} MiB, {info['multiprocessor_count'] or '?'} SMs",
        f"MIG mode          {_on(info['mig_mode'])} (pending: {_on(info['mig_mode_pending'])})",
        f"power             {info['power_w']:.1f} W now, limit {info['power_limit_w']:g} W "
        f"(range {info['power_limit_min_w']:g}-{info['power_limit_max_w']:g} W), "
        f"energy counter: {'yes' if info['energy_counter'] else 'no'}",
        "clocks            "
        + "; ".join(
            f"memory {m} MHz: {len(f)} SM clocks {min(f)}-{max(f)} MHz" for m, f in clocks.items() if f
        ),
        f"catalogue         {info['catalogue'] or 'not in the catalogue'} (id {info['catalogue_id']})",
        f"MIG profiles      {len(info['profiles'])}",
    ]
    for p in info["profiles"]:
        places = " ".join(f"{s}:{n}" for s, n in p["placements"])
        lines.append(
            f"  {p['name']:<14} id {p['nvml_id']:>2}  {p['compute']} compute, {p['memory_slots']} memory "
            f"slots, {p['sms']} SMs, {p['memory_mb']:,} MB  placements {places}"
        )
    for i in info["mig_instances"]:
        lines.append(f"  instance {i['instance_id']}: {i['profile']} at {i['start']}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def _record(args: argparse.Namespace) -> int:
    from wattsched.hardware.gpu.snapshot import record_machine

    check_suffix(args.output, (".json",))
    backend = opened(args)
    try:
        facts = record_machine(backend)
    finally:
        backend.close()
    write_text(args.output, json_text(facts))
    print(f"recorded {len(facts.get('devices', [facts]))} GPU(s) to {args.output}", file=sys.stderr)
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    from wattsched.hardware.gpu.calibrate import curves_from_csv
    from wattsched.hardware.gpu.snapshot import catalogue_toml, record_facts

    check_suffix(args.output, (".toml",))
    backend = opened(args)
    try:
        facts = record_facts(backend, args.index)
        units = max((p.compute for p in backend.profiles(args.index)), default=None)
    finally:
        backend.close()
    curves = curves_from_csv(args.power_curve, units) if args.power_curve else []
    text = catalogue_toml(facts, where=backend.name, curves=curves)
    _check_entry(text, args.output)
    write_text(args.output, text)
    print(f"wrote the catalogue entry of {facts['name']} to {args.output}", file=sys.stderr)
    return 0


def _check_entry(text: str, where: str) -> None:
    """Parse the entry as ``--gpu FILE.toml`` will, before it is written."""
    parse_gpu(read_toml(text, where=where, is_text=True), where)


def _calibrate(args: argparse.Namespace) -> int:
    from wattsched.hardware.gpu.calibrate import CalibrationSettings, ReplayLoad, calibrate, curves_to_csv
    from wattsched.hardware.gpu.fake import FakeBackend

    check_suffix(args.output, (".csv",))
    backend = opened(args)
    try:
        identity = backend.identity(args.index)
        profiles = backend.profiles(args.index)
        units = max((p.compute for p in profiles), default=7)
        sms = identity.multiprocessor_count or max((p.sms for p in profiles), default=0)
        if not sms:
            raise GpuError(f"GPU {args.index}: NVML gives no SM count, so busy fractions cannot be set")
        settings = CalibrationSettings.quick() if args.quick else CalibrationSettings()
        if isinstance(backend, FakeBackend):  # replay: nothing runs, so the wait is virtual
            clock = backend.use_virtual_clock()
            load: Any = ReplayLoad(backend, args.index, units, sms)
            results = calibrate(
                backend,
                args.index,
                load,
                units=units,
                sms=sms,
                settings=settings,
                clock=clock.now,
                sleep=clock.sleep,
                progress=sys.stderr.isatty(),
            )
        else:  # pragma: no cover - needs a CUDA GPU (scripts/device_check.sh)
            from wattsched.hardware.gpu.loads import choose_load

            if backend.mig_mode(args.index)[0]:
                raise GpuError(f"GPU {args.index} is in MIG mode: calibrate needs the whole card (MIG off)")
            load = choose_load(args.index)
            try:
                results = calibrate(
                    backend,
                    args.index,
                    load,
                    units=units,
                    sms=sms,
                    settings=settings,
                    progress=sys.stderr.isatty(),
                )
            finally:
                load.close()
    finally:
        backend.close()
    write_text(args.output, curves_to_csv(results))
    print(f"wrote {len(results)} levels ({load.name} load) to {args.output}", file=sys.stderr)
    return 0
