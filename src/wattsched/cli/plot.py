"""`wattsched plot SWEEP_DIR|RUN_FILE`: publication figures (PNG at 200 dpi, SVG, PDF) of a sweep or a run.

A sweep directory (``runs.parquet``, docs/howto/figures-report.md) gives one grouped-bar figure per metric
with 95 % intervals; a run file (``mig run --timeline-out``) gives a Gantt of slice placements and the power
and energy over time. Every figure is drawn before any file is written, so bad input writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["add_parser"]

_FORMATS = ("png", "svg", "pdf")


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    from wattsched.viz.stats import METRICS

    parser = groups.add_parser(
        "plot",
        help="publication figures of a sweep directory or a run file",
        description="SWEEP_DIR: grouped bars per metric with 95 % intervals over seeds, grouped by the "
        "columns that vary (written to SWEEP_DIR/figures by default). RUN_FILE (from `mig run "
        "--timeline-out`): a Gantt of slice placements and the power/energy over time (written beside it).",
    )
    from wattsched.cli._parsing import add_gpu_option

    parser.add_argument(
        "source",
        metavar="SWEEP_DIR|RUN_FILE",
        type=Path,
        help="a sweep folder (runs.parquet) or a run file (mig run --timeline-out)",
    )
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="output folder")
    parser.add_argument(
        "--format",
        dest="formats",
        nargs="+",
        action="extend",
        choices=_FORMATS,
        metavar="FMT",
        help="png (200 dpi), svg, pdf; several allowed (default: png)",
    )
    parser.add_argument(
        "--metric",
        dest="metrics",
        nargs="+",
        action="extend",
        choices=sorted(METRICS),
        metavar="NAME",
        help=f"sweep metrics to draw ({', '.join(METRICS)}; default: every "
        "metric the runs have among et, energy, tardiness)",
    )
    add_gpu_option(parser)  # a run file's GPU: its configurations and power curve
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from wattsched.errors import ConfigError, InputError
    from wattsched.experiments.store import atomic_write_bytes

    formats = list(dict.fromkeys(args.formats or ["png"]))
    source: Path = args.source
    if source.is_dir():
        if args.gpu is not None:
            raise ConfigError("--gpu applies to run files; a sweep's runs name their GPU")
        out = args.out if args.out is not None else source / "figures"
        figures = _sweep_figures(source, args.metrics)
    elif source.exists():
        if args.metrics:
            raise ConfigError("--metric applies to sweep directories, not to a run file")
        out = args.out if args.out is not None else source.parent
        figures = _run_figures(source, args)
    else:
        raise InputError("no such file or directory", path=str(source))
    if out.exists() and not out.is_dir():
        raise InputError("--out is not a directory", path=str(out))
    from wattsched.viz.figures import render

    rendered = {stem: render(figure, formats) for stem, figure in figures}
    out.mkdir(parents=True, exist_ok=True)
    for stem, files in rendered.items():
        for fmt, data in files.items():
            path = out / f"{stem}.{fmt}"
            atomic_write_bytes(path, data)
            print(path)
    return 0


def _sweep_figures(folder: Path, names: list[str] | None) -> list[tuple[str, Figure]]:
    from wattsched.errors import ConfigError
    from wattsched.viz.figures import bar_figure
    from wattsched.viz.stats import METRICS, group_summary
    from wattsched.viz.sweep import read_sweep, split_factors

    sweep = read_sweep(folder)
    available = {m.name for m in sweep.metrics()}
    if names:
        missing = [n for n in dict.fromkeys(names) if n not in available]
        if missing:
            raise ConfigError(
                f"the sweep's runs have no column for metric(s) {', '.join(missing)}; "
                f"available: {', '.join(sorted(available))}"
            )
        chosen = list(dict.fromkeys(names))
    else:
        chosen = [n for n in ("et", "energy", "tardiness") if n in available]
    x, hue = split_factors(sweep.factors)
    figures: list[tuple[str, Figure]] = []
    for name in chosen:
        metric = METRICS[name]
        summary = group_summary(sweep.runs, metric, [c for c in (x, *hue) if c])
        figures.append((f"sweep_{name}", bar_figure(summary, metric, x, hue)))
    return figures


def _run_figures(path: Path, args: argparse.Namespace) -> list[tuple[str, Figure]]:
    from wattsched.cli._parsing import resolve_gpu
    from wattsched.viz.figures import gantt_figure, power_figure
    from wattsched.viz.timeline import power_series, read_timeline

    gpu = resolve_gpu(args)
    timeline = read_timeline(path)
    series = power_series(timeline, gpu)
    stem = path.name.split(".")[0] or "run"
    return [(f"{stem}_gantt", gantt_figure(timeline, gpu)), (f"{stem}_power", power_figure(series))]
