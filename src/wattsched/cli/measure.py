"""`wattsched measure -- CMD ...`: a command's GPU energy, time, mean and peak power (docs/howto/nvml.md).

The command's own output is untouched; the report goes to stderr (like ``time``), or with ``--json`` one JSON
object as the last line of stdout (or to ``--output FILE``). The exit status is the command's: 127 when it
does not exist (one line on stderr), 126 when it cannot be executed, 128 + N when signal N ended it.
"""

from __future__ import annotations

import argparse
import sys

from wattsched.cli._output import check_suffix, json_text, print_json, write_text
from wattsched.cli._parsing import positive_finite_float
from wattsched.cli.gpu import add_backend_option
from wattsched.errors import ConfigError

__all__ = ["add_parser"]


def add_parser(groups: argparse._SubParsersAction) -> None:
    parser = groups.add_parser(
        "measure", help="run a command and report its GPU energy (NVML energy counter)"
    )
    add_backend_option(parser)
    parser.add_argument(
        "--interval-s",
        type=positive_finite_float,
        default=0.1,
        metavar="S",
        help="power sampling period in s (default 0.1)",
    )
    parser.add_argument("--gpus", metavar="I,J", help="GPU indices to measure (default: all)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    parser.add_argument("-o", "--output", metavar="FILE.json", help="write the JSON result to FILE")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command to run")
    parser.set_defaults(func=_measure)


def _indices(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        indices = [int(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(f"--gpus must be comma-separated GPU indices, got '{text}'") from None
    if any(i < 0 for i in indices) or len(set(indices)) != len(indices):
        raise ConfigError(f"--gpus must list distinct indices >= 0, got '{text}'")
    return indices


def _measure(args: argparse.Namespace) -> int:
    from wattsched.energy.command import CommandNotRunError, run_measured
    from wattsched.energy.measure import EnergyMeter

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ConfigError(
            "no command to measure: give it after --, e.g. wattsched measure -- python train.py"
        )
    if args.output is not None:
        check_suffix(args.output, (".json",))
    meter = EnergyMeter(args.backend, gpus=_indices(args.gpus), interval_s=args.interval_s)
    try:
        status, result = run_measured(command, meter)
    except CommandNotRunError as exc:
        print(f"wattsched: error: {exc}", file=sys.stderr)
        return exc.exit_status
    summary = {"command": command, "exit_status": status, **result.to_dict()}
    if args.output is not None:
        write_text(args.output, json_text(summary))
    if args.json:
        sys.stdout.flush()
        print_json(summary)
    else:
        lines = [
            f"wattsched measure: {result.energy_j:,.1f} J in {result.time_s:.3f} s, mean "
            f"{result.avg_power_w:.1f} W, peak {result.max_power_w:.1f} W (exit status {status})"
        ]
        lines += [
            f"  GPU {g.index} {g.name}: {g.energy_j:,.1f} J, mean {g.avg_power_w:.1f} W, peak "
            f"{g.max_power_w:.1f} W ({'energy counter' if g.energy_source == 'counter' else 'sampled power'})"
            for g in result.gpus
        ]
        lines += [f"  note: {note}" for note in result.notes]
        print("\n".join(lines), file=sys.stderr)
    return status
