"""`wattsched advise`: every way to run a cluster's GPUs on one job trace, the trade-off, and a plan.

    wattsched advise --trace FILE --servers N --gpus-per-server G --gpu NAME [--max-late-share X]
        [--max-tardiness DURATION] [--workers N] [--json] [-o DIR]

The settings compared, the budget, the Pareto rule and the baseline are those of
:mod:`wattsched.cluster.advise`. The JSON (``--json``, and ``DIR/advice.json``) holds ``pareto`` (every
setting evaluated, lowest energy first, each with ``pareto``: whether it is on the front, and
``meets_budget``), ``recommended`` (with ``savings_kwh`` / ``savings_share`` against the baseline and the
per-GPU configuration or partitioner) and ``baseline``. With ``-o DIR``: ``advice.json``, ``pareto.png``,
``mig-parted.yaml`` (the recommended MIG layout per GPU index), ``schedule.csv`` (time of day →
configuration, when the recommendation switches layouts by the clock), ``clocks.json`` (the SM clock to
lock, when clock levels are recommended) and ``slurm-power.conf`` (``SuspendTime``, when power states are).
No setting meets the budget: one line naming the closest, exit status 2.

Cost: a day of 874 jobs on 2 x 2 H100s is 114 settings, about 7 s of CPU (the two lookahead runs about 3 s
of it); ``--workers`` spreads the settings over processes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from wattsched.cli._output import json_text, print_json, progress_bar, write_text
from wattsched.cli._parsing import int_at_least
from wattsched.errors import ConfigError, InputError

__all__ = ["add_parser"]


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got '{text}'") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text}")
    return value


def _duration(text: str) -> float:
    from wattsched.slurm.annotations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (e.g. 90s, 10m, 1h30m or plain seconds)") from None


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = groups.add_parser(
        "advise",
        help="compare MIG layouts, partitioners, placements, clocks and power states on a trace; "
        "recommend the lowest-energy one within a tardiness budget",
    )
    parser.add_argument("--trace", required=True, metavar="FILE", help="job trace ('wattsched schema trace')")
    parser.add_argument("--servers", required=True, type=int_at_least(1), metavar="N", help="servers")
    parser.add_argument(
        "--gpus-per-server", required=True, type=int_at_least(1), metavar="G", help="GPUs per server"
    )
    parser.add_argument("--gpu", required=True, metavar="NAME|FILE.toml", help="catalogue GPU (h100-80gb)")
    parser.add_argument(
        "--max-late-share",
        type=_share,
        default=0.05,
        metavar="X",
        help="largest share of jobs finishing after their deadline (default 0.05)",
    )
    parser.add_argument(
        "--max-tardiness",
        type=_duration,
        default=None,
        metavar="DURATION",
        help="no job may finish more than this after its deadline (e.g. 10m; default: no limit)",
    )
    parser.add_argument(
        "--workers",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="worker processes (default: all cores)",
    )
    parser.add_argument("--json", action="store_true", help="print the advice as one JSON object")
    parser.add_argument(
        "-o", "--output", metavar="DIR", help="write the advice, the figure and the plan here"
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from wattsched.cli._model import model_notes
    from wattsched.cli.cluster import trace_jobs
    from wattsched.cluster.advise import Budget, advise, settings_count
    from wattsched.cluster.spec import ClusterSpec, PowerStates
    from wattsched.experiments.executors import LocalExecutor
    from wattsched.workload.traces import require_sizes

    out_dir = _output_dir(args.output)
    spec = ClusterSpec.homogeneous(args.servers, args.gpus_per_server, args.gpu)
    gpu = spec.gpu_models()[0]  # an unknown --gpu lists the catalogue
    budget = Budget(args.max_late_share, args.max_tardiness)
    jobs, horizon_s = trace_jobs(args.trace, args.gpus_per_server)
    require_sizes(jobs, gpu.compute_sizes, args.trace)
    notes = model_notes([gpu])
    executor = LocalExecutor(args.workers)
    advice = advise(
        jobs,
        spec,
        budget,
        horizon_s=horizon_s,
        power=PowerStates(),
        run=executor.run,
        progress=progress_bar(settings_count(gpu), "setting", "advise"),
    )
    _warn(notes, gpu)
    if advice.recommended is None:
        closest = advice.closest
        raise ConfigError(
            f"no setting meets the budget ({_budget_text(budget)}); the closest is {closest.setting.label}: "
            f"{100 * closest.late_share:.1f} % late, worst job {closest.max_tardiness_s:.0f} s late, "
            f"{closest.energy_kwh:.3f} kWh"
        )
    summary = _summary(args, gpu, spec, advice, notes, len(jobs), horizon_s)
    if out_dir is not None:
        summary["files"] = _write_plan(out_dir, gpu, advice, summary)
    if args.json:
        print_json(summary)
    else:
        sys.stdout.write(_text(summary))
    return 0


def _output_dir(text: str | None) -> Path | None:
    if text is None:
        return None
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise InputError("-o: exists and is not a directory", path=text)
    if not path.parent.is_dir():
        raise InputError("-o: the parent folder does not exist", path=text)
    path.mkdir(exist_ok=True)
    return path


def _warn(notes: Any, gpu: Any) -> None:
    import logging

    notes.warn()  # the estimated power model, if it is one
    if gpu.clocks is None:
        logging.getLogger("wattsched.cli").warning(
            "%s has no clock table: clock levels were not compared (clocks: unsupported)", gpu.name
        )


def _budget_text(budget: Any) -> str:
    text = f"at most {100 * budget.max_late_share:g} % late"
    if budget.max_tardiness_s is not None:
        text += f", no job more than {budget.max_tardiness_s:g} s late"
    return text


def _summary(
    args: argparse.Namespace, gpu: Any, spec: Any, advice: Any, notes: Any, jobs: int, horizon_s: float
) -> dict[str, Any]:
    from wattsched.cluster.advise import lock_clock_mhz, suspend_time_s
    from wattsched.cluster.spec import PowerStates

    rows = []
    for outcome, front, meets in zip(advice.outcomes, advice.pareto, advice.meets, strict=True):
        rows.append({**outcome.to_dict(), "pareto": front, "meets_budget": meets})
    rows.sort(key=lambda r: (r["energy_j"], r["late_share"], r["avg_tardiness_s"]))
    best, base = advice.recommended, advice.baseline
    recommended = {
        **best.to_dict(),
        "savings_kwh": base.energy_kwh - best.energy_kwh,
        "savings_share": (base.energy_j - best.energy_j) / base.energy_j if base.energy_j else 0.0,
        "gpus": _per_gpu(gpu, best.setting, spec.gpus, args.gpus_per_server),
    }
    if best.setting.clocks:
        recommended["lock_sm_mhz"] = lock_clock_mhz(best)
    if best.setting.power_states:
        recommended["suspend_time_s"] = suspend_time_s(gpu, args.gpus_per_server, PowerStates())
    return {
        "gpu": gpu.name,
        "servers": args.servers,
        "gpus_per_server": args.gpus_per_server,
        "gpus": spec.gpus,
        "trace": args.trace,
        "jobs": jobs,
        "horizon_s": horizon_s,
        "budget": advice.budget.to_dict(),
        "power_model": notes.power_model,
        "clocks": True if gpu.clocks is not None else "unsupported",
        "settings": len(rows),
        "pareto_settings": sum(r["pareto"] for r in rows),
        "pareto": rows,
        "recommended": recommended,
        "baseline": base.to_dict(),
    }


def _per_gpu(gpu: Any, setting: Any, gpus: int, per_server: int) -> list[dict[str, Any]]:
    """What each GPU index runs: its configuration (held all day) or its partitioner."""
    out = []
    for index in range(gpus):
        entry: dict[str, Any] = {"index": index, "server": index // per_server}
        if setting.partitioner == "static":
            entry["configuration"] = setting.configuration
        elif setting.partitioner == "no-mig":
            entry["configuration"] = "no-mig"
        else:
            entry["partitioner"] = setting.partitioner
            if setting.partitioner == "day-night":
                entry.update(day=str(gpu.role("day")), night=str(gpu.role("night")))
            else:  # it decides from the queue, so there is no schedule to write down
                entry["how"] = (
                    "repartitioned online at job arrivals and completions, no fixed schedule; "
                    f"'wattsched mig day --partitioner {setting.partitioner} --live --index "
                    f"{index}' rehearses it on a trace"
                )
        out.append(entry)
    return out


# ---------------------------------------------------------------------- the plan's files
def _write_plan(out_dir: Path, gpu: Any, advice: Any, summary: dict[str, Any]) -> dict[str, str]:
    from wattsched.experiments.store import atomic_write_bytes
    from wattsched.viz.figures import render
    from wattsched.viz.pareto import pareto_figure

    best = summary["recommended"]
    files: dict[str, str] = {}
    figure = pareto_figure(
        summary["pareto"],
        recommended=best["label"],
        baseline=summary["baseline"]["label"],
        max_late_share=advice.budget.max_late_share,
        title=f"{summary['gpus']} x {gpu.name}, {summary['jobs']} jobs",
    )
    files["figure"] = str(out_dir / "pareto.png")
    atomic_write_bytes(out_dir / "pareto.png", render(figure)["png"])
    files["mig_parted"] = str(out_dir / "mig-parted.yaml")
    write_text(files["mig_parted"], _mig_parted(gpu, best["gpus"]))
    schedule = _schedule(gpu, advice.recommended.setting)
    if schedule is not None:
        files["schedule"] = str(out_dir / "schedule.csv")
        write_text(files["schedule"], schedule)
    mhz = best.get("lock_sm_mhz")
    if mhz is not None:
        files["clocks"] = str(out_dir / "clocks.json")
        indices = ",".join(str(i) for i in range(summary["gpus"]))
        write_text(
            files["clocks"],
            json_text(
                {
                    "lock_sm_mhz": mhz,
                    "clock_levels_mhz": best["clock_levels_mhz"],
                    "command": f"nvidia-smi -i {indices} --lock-gpu-clocks={mhz},{mhz}",
                    "rule": "the level the GPUs spent the most time at in the simulation",
                }
            ),
        )
    if "suspend_time_s" in best:
        files["slurm_power"] = str(out_dir / "slurm-power.conf")
        write_text(
            files["slurm_power"],
            "# Turn a server off after this many idle seconds: floor(turn-on energy / (server idle "
            "power x slot))\n# slots of 60 s, the rule the simulation used.\n"
            f"SuspendTime={best['suspend_time_s']:.0f}\n",
        )
    files["advice"] = str(out_dir / "advice.json")
    write_text(files["advice"], json_text({**summary, "files": files}))
    return files


def _mig_parted(gpu: Any, per_gpu: list[dict[str, Any]]) -> str:
    from wattsched.cli.mig_plan import configuration_layout
    from wattsched.hardware.mig_parted import dump_document, export_document, export_per_device
    from wattsched.hardware.mig_plan import GpuLayouts

    layouts = GpuLayouts.from_catalogue(gpu)
    if all("configuration" in entry for entry in per_gpu):
        chosen = [configuration_layout(layouts, entry["configuration"], "configuration") for entry in per_gpu]
        return str(dump_document(export_per_device(gpu.name, chosen)))
    # A partitioner switches layouts: every layout it may use, one config each, for all GPUs.
    first = per_gpu[0]
    ids = [first["day"], first["night"]] if "day" in first else [str(i) for i, _ in layouts.configurations]
    chosen = [configuration_layout(layouts, ident, "configuration") for ident in dict.fromkeys(ids)]
    return str(dump_document(export_document(gpu.name, chosen)))


def _schedule(gpu: Any, setting: Any) -> str | None:
    """``start,end,configuration,mig_parted_config`` rows of one day, for a partitioner that switches
    layouts by the time of day (``configuration_at``); ``None`` otherwise."""
    from wattsched.hardware.mig_parted import config_name
    from wattsched.mig.partition import PARTITIONERS

    if setting.partitioner in ("static", "no-mig"):
        return None
    partitioner = PARTITIONERS.make(setting.partitioner)
    if not hasattr(partitioner, "configuration_at"):
        return None  # it decides from the queue, not the clock
    partitioner.reset(gpu, 0)
    runs: list[list[Any]] = []
    for minute in range(24 * 60):
        ident = partitioner.configuration_at(minute * 60.0)
        if runs and runs[-1][2] == ident:
            runs[-1][1] = minute + 1
        else:
            runs.append([minute, minute + 1, ident])
    lines = ["start,end,configuration,mig_parted_config"]
    for start, end, ident in runs:
        lines.append(
            f"{start // 60:02d}:{start % 60:02d},{end // 60:02d}:{end % 60:02d},{ident},"
            f"{config_name(gpu.name, ident)}"
        )
    return "\n".join(lines) + "\n"


def _text(summary: dict[str, Any]) -> str:
    best, base = summary["recommended"], summary["baseline"]
    front = [r for r in summary["pareto"] if r["pareto"]]
    lines = [
        f"{summary['settings']} settings of {summary['gpus']} x {summary['gpu']} on {summary['jobs']} jobs "
        f"(power model {summary['power_model']}); Pareto front ({len(front)}):",
        f"  {'energy kWh':>10}  {'late %':>6}  {'mean tard. s':>12}  {'max tard. s':>11}  setting",
    ]
    for row in front:
        mark = " <- recommended" if row["label"] == best["label"] else ""
        lines.append(
            f"  {row['energy_kwh']:10.3f}  {100 * row['late_share']:6.1f}  "
            f"{row['avg_tardiness_s']:12.1f}  {row['max_tardiness_s']:11.1f}  {row['label']}{mark}"
        )
    lines += [
        f"recommended: {best['label']}: {best['energy_kwh']:.3f} kWh, {100 * best['late_share']:.1f} % late",
        f"baseline:    {base['label']}: {base['energy_kwh']:.3f} kWh, {100 * base['late_share']:.1f} % late",
        f"savings:     {best['savings_kwh']:.3f} kWh ({100 * best['savings_share']:.1f} %)",
    ]
    for key, text in summary.get("files", {}).items():
        lines.append(f"wrote {key}: {text}")
    return "\n".join(lines) + "\n"
