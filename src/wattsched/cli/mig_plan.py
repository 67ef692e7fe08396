"""`wattsched mig plan | export | import-config`: repartition plans, NVIDIA's mig-parted YAML
(docs/howto/nvml.md).

``--gpu NAME|FILE.toml`` is a catalogue GPU; ``--from``/``--to`` take its configuration ids (as
``wattsched mig configs --gpu G`` lists them), ``empty`` (no instance), or an explicit layout
``PROFILE@START,...`` (starts in memory slots, as NVML places instances); ``--from current`` reads the
layout GPU ``--index`` of ``--backend`` has now. ``plan`` is a dry run unless ``--apply``, which changes the
GPU of ``--backend`` only behind the guards of :mod:`wattsched.hardware.gpu.apply`.

A rehearsal without a GPU: ``wattsched gpu fake-snapshot --gpu a100-40gb --count 2 -o fake.json`` writes
fake GPUs whose state lives in that file, so ``mig plan ... --apply --backend fake:fake.json`` changes the
file and the next ``mig plan --from current --backend fake:fake.json`` sees the new layout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from wattsched.cli._output import check_suffix, print_json, write_text
from wattsched.cli._parsing import add_gpu_option, int_at_least, resolve_gpu
from wattsched.cli.gpu import add_backend_option, opened
from wattsched.errors import ConfigError, InputError
from wattsched.hardware.mig_plan import (
    NO_MIG,
    GpuLayouts,
    Layout,
    layout_text,
)

__all__ = ["CURRENT", "add_parsers", "configuration_layout", "gpu_layouts"]

#: ``--from current``: the layout the GPU has now, read through ``--backend``.
CURRENT = "current"


def gpu_layouts(args: argparse.Namespace) -> GpuLayouts:
    """The catalogue GPU of ``--gpu`` as the planner sees it."""
    return GpuLayouts.from_catalogue(resolve_gpu(args))


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """Register ``plan``, ``export`` and ``import-config`` under ``wattsched mig``."""
    plan = commands.add_parser("plan", help="steps that repartition a MIG GPU (dry run unless --apply)")
    add_gpu_option(plan)
    plan.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="C1",
        help="configuration id, empty, PROFILE@START,..., or current (the layout of GPU --index of "
        "--backend now)",
    )
    plan.add_argument("--to", dest="target", required=True, metavar="C2", help="as --from")
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.add_argument("--apply", action="store_true", help="carry the plan out on the GPU (root, MIG on)")
    plan.add_argument("--index", type=int_at_least(0), default=0, help="GPU index for --apply (default 0)")
    add_backend_option(plan)
    plan.set_defaults(func=_plan)

    export = commands.add_parser("export", help="write configurations as NVIDIA mig-parted YAML")
    add_gpu_option(export)
    which = export.add_mutually_exclusive_group()
    which.add_argument(
        "--configs", nargs="+", metavar="ID", help="configuration ids (default: all, no-mig too)"
    )
    which.add_argument(
        "--per-gpu",
        nargs="+",
        metavar="ID",
        help="one config giving GPU index i the i-th configuration id (no-mig allowed); one "
        "'devices: all' entry when they are all the same",
    )
    export.add_argument("-o", "--output", required=True, metavar="FILE.yaml", help="mig-parted YAML to write")
    export.set_defaults(func=_export)

    read = commands.add_parser("import-config", help="read a mig-parted YAML into configurations of a GPU")
    read.add_argument("file", metavar="FILE.yaml", help="a mig-parted YAML (version: v1)")
    add_gpu_option(read)
    read.add_argument("--config", metavar="NAME", help="only this mig-parted config (default: all)")
    read.add_argument("--json", action="store_true", help="print one JSON object")
    read.set_defaults(func=_import)


def _plan(args: argparse.Namespace) -> int:
    from wattsched.hardware.mig_plan import plan_repartition

    gpu = gpu_layouts(args)
    if args.source == CURRENT:
        source = _current(args)
        source_id = next((i for i, known in gpu.configurations if sorted(known) == list(source)), None)
    else:
        source_id, source = gpu.layout(args.source, "--from")
    target_id, target = gpu.layout(args.target, "--to")
    steps = plan_repartition(gpu.geometry, source, target)
    summary: dict[str, Any] = {
        "gpu": gpu.name,
        "from": args.source if source_id is None else source_id,
        "to": args.target if target_id is None else target_id,
        "from_layout": layout_text(source),
        "to_layout": layout_text(target),
        "steps": [step.to_dict() for step in steps],
        "kept": [str(i) for i in sorted(set(source) & set(target))],
        "applied": False,
    }
    if args.apply:
        from wattsched.hardware.gpu.apply import apply_plan

        backend = opened(args)
        try:
            done = apply_plan(backend, args.index, source, steps)
        finally:
            backend.close()
        summary.update(applied=True, instance_ids=[d.instance_id for d in done])
    if args.json:
        print_json(summary)
        return 0
    if not steps:
        sys.stdout.write(f"{gpu.name}: already {summary['to_layout']}: no change needed\n")
        return 0
    lines = [
        f"{gpu.name}: {summary['from_layout']} -> {summary['to_layout']} "
        f"({len(steps)} step(s), {len(summary['kept'])} instance(s) kept"
        f"{', applied' if args.apply else ', dry run: add --apply to change the GPU'})"
    ]
    lines += [
        f"  {number}. {step.op:<7} {step.instance.profile} at {step.instance.start} "
        f"(size {step.instance.size})"
        for number, step in enumerate(steps, start=1)
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _current(args: argparse.Namespace) -> Layout:
    """The layout of GPU ``--index`` of ``--backend`` now (``--from current``)."""
    from wattsched.hardware.gpu.apply import current_layout

    backend = opened(args)
    try:
        return current_layout(backend, args.index)[0]
    finally:
        backend.close()


def _export(args: argparse.Namespace) -> int:
    from wattsched.hardware.mig_parted import dump_document, export_document, export_per_device

    check_suffix(args.output, (".yaml", ".yml"))
    gpu = gpu_layouts(args)
    if args.per_gpu is not None:
        per_gpu = [configuration_layout(gpu, text, "--per-gpu") for text in args.per_gpu]
        document = export_per_device(gpu.name, per_gpu)
        write_text(args.output, dump_document(document))
        name = next(iter(document["mig-configs"]))
        print(f"wrote mig-parted config {name} for {len(per_gpu)} GPU(s) to {args.output}", file=sys.stderr)
        return 0
    texts = args.configs or [str(ident) for ident, _ in gpu.configurations] + [NO_MIG]
    chosen = [configuration_layout(gpu, text, "--configs") for text in texts]
    write_text(args.output, dump_document(export_document(gpu.name, chosen)))
    print(f"wrote {len(chosen)} mig-parted config(s) to {args.output}", file=sys.stderr)
    return 0


def configuration_layout(gpu: GpuLayouts, text: str, option: str) -> tuple[int | str, Layout | None]:
    """``(id, layout)`` of configuration id ``text`` of ``gpu`` (``no-mig``: MIG disabled, no layout)."""
    if text == NO_MIG:
        return NO_MIG, None
    ident, layout = gpu.layout(text, option)
    if ident is None:
        raise ConfigError(f"{option} takes configuration ids of {gpu.name}, got '{text}'")
    return ident, layout


def _import(args: argparse.Namespace) -> int:
    from wattsched.hardware.mig_parted import import_layouts, parse_document

    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=args.file) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a mig-parted YAML file", path=args.file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=args.file) from None
    gpu = gpu_layouts(args)
    imported = import_layouts(parse_document(text, args.file), gpu.geometry, only=args.config)
    rows = [
        {
            "name": item.name,
            "devices": item.devices if item.devices == "all" else list(item.devices),
            "mig_enabled": item.layout is not None,
            "layout": None if item.layout is None else layout_text(item.layout),
            "configuration": NO_MIG if item.layout is None else gpu.ident_of(item.layout),
        }
        for item in imported
    ]
    if args.json:
        print_json({"gpu": gpu.name, "file": args.file, "configs": rows})
        return 0
    lines = [f"{gpu.name}: {len(rows)} config(s) from {args.file}"]
    for row in rows:
        match = row["configuration"]
        label = f"configuration {match}" if match is not None else "no configuration of the catalogue"
        indices = row["devices"]
        devices = f" GPU {','.join(map(str, indices))}" if isinstance(indices, list) else ""
        lines.append(f"  {row['name']}{devices}: {row['layout'] or 'MIG disabled'} ({label})")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
