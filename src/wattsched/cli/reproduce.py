"""`wattsched reproduce`: run the paper reproductions and write report.md, figures/, raw/, summary.json."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from wattsched.cli._parsing import add_executor_options, int_at_least

__all__ = ["add_parser"]

#: Wall time of a whole run by scale in minutes, measured into an empty folder with an empty cache on a 2-core
#: x86 VM with Python 3.11 (quick: 2026-12-07 with ``benchmarks/bench_timings.py --only reproduce``; paper:
#: 2026-12-01, ``make reproduce``'s ``timings.json``, before the quick scale's changes); printed at the start
#: as a rough guide, since a run's time depends on the machine and the workers.
MEASURED_MIN = {"quick": 6.4, "paper": 33}

#: Studies that take the ``preset`` option (the preset of their top-level summary keys).
PRESET_STUDIES: tuple[str, ...] = ("table2", "table3")


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = groups.add_parser(
        "reproduce",
        help="reproduce the papers' tables and figures",
        description="Run every registered study (or --only some) and write DIR/report.md, DIR/figures/*.png, "
        "DIR/raw/<study>.parquet, DIR/summary.json and DIR/index.html (interactive, offline). A re-run into "
        "the same DIR skips finished cells.",
    )
    parser.add_argument(
        "--scale",
        choices=("quick", "paper"),
        default="quick",
        help="quick: a few iterations per setting (minutes); paper: the papers' iteration counts",
    )
    parser.add_argument("--out", type=Path, default=Path("results"), help="output folder (default: results)")
    from wattsched.experiments.presets import DEFAULT_PRESET, preset_names

    parser.add_argument(
        "--preset",
        choices=preset_names(),
        default=DEFAULT_PRESET,
        help="P1 reading of the top-level table2/table3 keys (default: paper). Both presets are "
        "always run and reported under summary.json 'presets'",
    )
    add_executor_options(parser)
    parser.add_argument(
        "--gpu",
        action="append",
        default=None,
        metavar="NAME|FILE.toml",
        help="a GPU compared with P1's A100-40GB in Table II and III at the paper preset (repeatable; "
        "default: h200-141gb); `wattsched mig configs --list-gpus` lists the catalogue",
    )
    parser.add_argument("--only", nargs="+", default=None, metavar="STUDY", help="run only these studies")
    # Test and smoke-run aid: override the number of iterations of every selected study.
    parser.add_argument("--iterations", type=int_at_least(1), default=None, help=argparse.SUPPRESS)
    # ... and set any option of one study's factory, e.g. --study-option table2.hours=1 (value read as JSON).
    parser.add_argument(
        "--study-option", action="append", default=[], metavar="STUDY.KEY=VALUE", help=argparse.SUPPRESS
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from wattsched.experiments.study import STUDIES
    from wattsched.studies import reproduce  # registers the papers' studies

    only = list(dict.fromkeys(args.only)) if args.only else None
    options: dict[str, dict[str, object]] = {}
    if args.iterations is not None:
        for name in only or STUDIES.available():
            options.setdefault(name, {})["iterations"] = args.iterations
    for name in PRESET_STUDIES:
        if only is None or name in only:
            options.setdefault(name, {})["preset"] = args.preset
    if args.gpu is not None:
        for name in PRESET_STUDIES:
            if only is None or name in only:
                options.setdefault(name, {})["gpus"] = list(args.gpu)
    for text in args.study_option:
        study, key, value = _parse_option(text)
        options.setdefault(study, {})[key] = value

    def announce(names: list[str]) -> None:
        studies = f"{len(names)} {'study' if len(names) == 1 else 'studies'}"
        print(
            f"reproducing {studies} ({', '.join(names)}) at {args.scale} scale into {args.out}; "
            f"the whole run took about {MEASURED_MIN[args.scale]} min on a 2-core machine (finished cells in "
            f"{args.out} are reused)",
            file=sys.stderr,
        )

    result = reproduce(
        args.out,
        args.scale,
        only=only,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        study_options=options or None,
        on_start=announce,
    )
    for run in result.runs:
        print(
            f"{run.name}: {run.cells} cells ({run.executed} run, {run.skipped} reused) in {run.wall_s:.1f} s",
            file=sys.stderr,
        )
    print(
        f"wrote {args.out / 'report.md'}, {args.out / 'summary.json'} and {args.out / 'index.html'}",
        file=sys.stderr,
    )
    return 0


def _parse_option(text: str) -> tuple[str, str, object]:
    from wattsched.errors import ConfigError

    target, sep, raw = text.partition("=")
    study, dot, key = target.partition(".")
    if not sep or not dot or not study or not key:
        raise ConfigError(f"--study-option expects STUDY.KEY=VALUE, got '{text}'")
    try:
        value: object = json.loads(raw)
    except ValueError:
        value = raw
    return study, key, value
