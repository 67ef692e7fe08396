"""Argument-parser plumbing shared by every command group.

* :class:`OneLineErrorParser`: usage errors are one line with exit status 2, with a "did you mean" for a
  mistyped command, option or choice.
* :class:`DefaultsHelpFormatter`: every option's help shows its default; a command table's sub-commands are
  listed under the titles of their groups (``wattsched --help``).
* :class:`Command` and :func:`add_commands`: commands are declared in tables and a command's options are
  only built when the command line names it, so ``wattsched --help`` and ``wattsched mig run`` import
  only what they use.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, cast

from wattsched.errors import ConfigError, did_you_mean

if TYPE_CHECKING:
    from wattsched.experiments.presets import Preset
    from wattsched.hardware.mig import MigGpu

__all__ = [
    "GLOBAL_FLAGS",
    "Command",
    "CommandGroups",
    "DefaultsHelpFormatter",
    "OneLineErrorParser",
    "add_commands",
    "add_executor_options",
    "add_gpu_option",
    "add_import_window_options",
    "add_lazily",
    "add_preset_options",
    "did_you_mean",
    "int_at_least",
    "non_negative_float",
    "positive_finite_float",
    "repartition_cost",
    "repartition_seconds",
    "resolve_deadline_rule",
    "resolve_gpu",
    "resolve_preset",
    "split_global_flags",
    "split_plugins",
]

#: Flags accepted anywhere on the command line (before a ``--``): verbosity and tracebacks.
GLOBAL_FLAGS: dict[str, str] = {
    "-v": "verbose",
    "--verbose": "verbose",
    "-vv": "verbose2",
    "-q": "quiet",
    "--quiet": "quiet",
    "--debug": "debug",
}


def split_global_flags(argv: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """``argv`` without the :data:`GLOBAL_FLAGS` (wherever they stand before a ``--``) and their counts."""
    counts = {"verbose": 0, "quiet": 0, "debug": 0}
    rest: list[str] = []
    for index, token in enumerate(argv):
        if token == "--":
            rest.extend(argv[index:])
            break
        name = GLOBAL_FLAGS.get(token)
        if name is None:
            rest.append(token)
        elif name == "verbose2":
            counts["verbose"] += 2
        else:
            counts[name] += 1
    return rest, counts


def split_plugins(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its ``--plugin MODULE`` / ``--plugin=MODULE`` options (wherever they stand before a
    ``--``), and the modules they name, in order. A ``--plugin`` without a module is left in place for the
    parser to report."""
    rest: list[str] = []
    modules: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            rest.extend(argv[index:])
            break
        if token.startswith("--plugin="):
            modules.append(token.removeprefix("--plugin="))
        elif token == "--plugin" and index + 1 < len(argv) and not argv[index + 1].startswith("-"):
            modules.append(argv[index + 1])
            index += 1
        else:
            rest.append(token)
        index += 1
    return rest, modules


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that states each option's default, unless the help text already says it or there is none."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or isinstance(action, argparse._CountAction)
            or not action.option_strings
            or default == []
        ):
            return text
        shown = " ".join(map(str, default)) if isinstance(default, list | tuple) else "%(default)s"
        return f"{text} (default: {shown})" if text else f"default: {shown}"

    def _format_action(self, action: argparse.Action) -> str:
        groups: CommandGroups = getattr(action, "command_groups", ())
        if not groups or not isinstance(action, argparse._SubParsersAction):
            return super()._format_action(action)
        # A title line per group, its commands indented below it; argparse measured the column of the help
        # texts with the commands one level deeper than the action, which is where they are written.
        commands = {sub.dest: sub for sub in action._get_subactions()}
        listed = [
            (title, [commands.pop(name) for name in names if name in commands]) for title, names in groups
        ]
        listed.append(("Other commands", list(commands.values())))
        parts: list[str] = []
        for title, subactions in listed:
            if not subactions:
                continue
            parts.append(f"{' ' * self._current_indent}{title}:\n")
            self._indent()
            parts.extend(super(DefaultsHelpFormatter, self)._format_action(sub) for sub in subactions)
            self._dedent()
        return "".join(parts)


_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class OneLineErrorParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line on stderr with exit status 2, like every other user error.

    A mistyped command or choice gets the closest valid name, an unknown option the closest option of the
    command it was given to.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)
        self._parsed: list[str] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._parsed = list(args) if args is not None else []
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"wattsched: error: {self.prog}: {message}{self._suggestion(message)}\n")

    def _suggestion(self, message: str) -> str:
        choice = _CHOICE.search(message)
        if choice:
            return did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
        if message.startswith("unrecognized arguments: "):
            first = message.removeprefix("unrecognized arguments: ").split(" ")[0]
            if first.startswith("-"):
                options = [o for a in self._leaf()._actions for o in a.option_strings if o.startswith("--")]
                return did_you_mean(first.split("=")[0], options)
        if message.startswith("the following arguments are required: "):
            # argparse reports the missing option before the mistyped one that was meant to give it.
            missing = message.removeprefix("the following arguments are required: ").split(", ")
            known = {o for a in self._leaf()._actions for o in a.option_strings}
            for token in self._parsed:
                name = token.split("=")[0]
                if name.startswith("--") and name not in known:
                    hint = did_you_mean(name, missing)
                    if hint:
                        return f"; '{name}' is not an option{hint}"
        return ""

    def _leaf(self) -> argparse.ArgumentParser:
        """The parser of the (sub-)command the parsed command line names."""
        parser: argparse.ArgumentParser = self
        for token in self._parsed:
            groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if groups and token in groups[0].choices:
                parser = groups[0].choices[token]
        return parser


#: Titled groups of command names: ``((title, (name, ...)), ...)``.
CommandGroups = tuple[tuple[str, tuple[str, ...]], ...]


class _GroupedCommands(argparse._SubParsersAction):
    """The sub-commands action of a command table: :class:`DefaultsHelpFormatter` lists the commands under
    the titles of :attr:`command_groups` (none: argparse's plain list)."""

    command_groups: CommandGroups = ()


@dataclass(frozen=True)
class Command:
    """One top-level command: its name, one-line help, and the module whose ``add_parser(subparsers)``
    builds it."""

    name: str
    help: str
    module: str


def add_commands(
    parser: argparse.ArgumentParser,
    commands: Sequence[Command],
    argv: Sequence[str] | None,
    command_groups: CommandGroups = (),
) -> None:
    """Add ``commands`` as sub-commands of ``parser``.

    ``argv`` is the command line (global flags removed): only the command it names is built in full (its
    module imported); the others get their name and help line only. ``argv=None`` builds every command.
    ``command_groups`` titles the commands in the help (a command in no group is listed last, under "Other
    commands").
    """
    global _REST
    titled = {"title": "commands"} if command_groups else {}  # argparse makes a section of any title given
    groups = cast(
        _GroupedCommands,
        parser.add_subparsers(
            dest="command",
            metavar="COMMAND",
            required=True,
            parser_class=OneLineErrorParser,
            action=_GroupedCommands,
            **titled,
        ),
    )
    groups.command_groups = command_groups
    chosen = _first_word(argv)
    _REST = None if argv is None else list(argv[argv.index(chosen) + 1 :]) if chosen is not None else []
    for command in commands:
        if importlib.util.find_spec(command.module) is None:
            continue  # a command of a table whose module this installation lacks
        if argv is None or command.name == chosen:
            importlib.import_module(command.module).add_parser(groups)
        else:
            groups.add_parser(command.name, help=command.help)


#: The command line after the top-level command's name while :func:`add_commands` builds it (``None``: every
#: command is built in full).
_REST: list[str] | None = None


def _first_word(argv: Sequence[str] | None) -> str | None:
    return next((token for token in argv or () if not token.startswith("-")), None)


def add_lazily(
    groups: argparse._SubParsersAction,  # type: ignore[type-arg,unused-ignore]
    commands: dict[str, str],
    target: str,
) -> None:
    """Sub-commands ``commands`` (name -> one-line help) that ``target`` (``"module:function"``, called with
    ``groups``) adds: the module is imported only when the command line names one of them; otherwise each
    gets its name and help line (enough for the group's ``--help``)."""
    if _REST is None or _first_word(_REST) in commands:
        module, _, function = target.partition(":")
        getattr(importlib.import_module(module), function)(groups)
    else:
        for name, text in commands.items():
            groups.add_parser(name, help=text)


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for whole numbers ``>= minimum`` (seeds: 0, counts: 1)."""
    rule = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {rule}, got '{text}'") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {rule}, got {value}")
        return value

    return parse


def positive_finite_float(text: str) -> float:
    """An argparse ``type`` for finite numbers > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def watts(text: str) -> float:
    """An argparse ``type`` for a power in watts > 0: ``300``, ``300W`` or ``300 W``."""
    number = text.strip()
    if number[-1:] in ("W", "w"):
        number = number[:-1].rstrip()
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected watts > 0 (e.g. 300 or 300W), got '{text}'")
    return value


#: ``--power-cap`` given alone: the GPU's own power limit (a float that :func:`watts` never returns, since
#: argparse would pass a string constant through the option's type).
GPU_OWN_CAP = math.inf


def power_cap_w(gpu: Any, requested: float) -> float:
    """The power cap in watts of ``--power-cap`` on ``gpu`` (``requested``: watts, or :data:`GPU_OWN_CAP`).

    A cap must lie in the GPU's power-limit range (``[clocks]`` of its catalogue entry, as NVML reports it)
    where the entry gives one, else above its idle power and at most its own cap; ConfigError naming the
    limits otherwise. A GPU without a cap of its own takes any cap above its idle power."""
    power = gpu.power
    if requested == GPU_OWN_CAP:
        if power.cap_w is None:
            raise ConfigError(f"--power-cap: {gpu.name} has no power limit of its own; give one in watts")
        return float(power.cap_w)
    watts = float(requested)
    if gpu.clocks is not None:
        low, high = gpu.clocks.power_limit_min_w, gpu.clocks.power_limit_max_w
        if not low <= watts <= high:
            raise ConfigError(
                f"--power-cap {watts:g} W is outside {gpu.name}'s power-limit range {low:g}-{high:g} W"
            )
    if watts <= power.idle_w or (power.cap_w is not None and watts > power.cap_w):
        top = f" and at most its limit {power.cap_w:g} W" if power.cap_w is not None else ""
        raise ConfigError(
            f"--power-cap {watts:g} W: {gpu.name} takes a cap above its idle power {power.idle_w:g} W{top}"
        )
    return watts


def non_negative_float(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def add_import_window_options(
    cmd: argparse.ArgumentParser,
    *,
    what: str = "arrivals",
    min_duration: bool = True,
    target_load: str | None,
) -> None:
    """The options every importer shares: a window of the log (``--day`` or ``--start-s``, ``--end-s``), run
    times kept (``--min-duration-s``, ``--max-duration-s``), their scaling (``--duration-scale`` or, with
    ``target_load`` as its help, ``--target-load``) and the deadline slack of jobs without a deadline."""
    window = cmd.add_mutually_exclusive_group()
    window.add_argument(
        "--day", type=int_at_least(0), metavar="N", help=f"keep {what} of day N (day 0: the first one's day)"
    )
    window.add_argument(
        "--start-s", type=non_negative_float, metavar="S", help="window start (trace clock, s)"
    )
    cmd.add_argument("--end-s", type=non_negative_float, metavar="E", help="window end (trace clock, s)")
    if min_duration:
        cmd.add_argument(
            "--min-duration-s",
            type=positive_finite_float,
            metavar="S",
            help="leave out jobs that ran shorter",
        )
    cmd.add_argument(
        "--max-duration-s", type=positive_finite_float, metavar="S", help="leave out jobs that ran longer"
    )
    load = cmd.add_mutually_exclusive_group() if target_load else cmd
    load.add_argument(
        "--duration-scale",
        type=positive_finite_float,
        default=1.0,
        metavar="F",
        help="multiply durations by F",
    )
    if target_load:
        load.add_argument("--target-load", type=positive_finite_float, metavar="L", help=target_load)
    cmd.add_argument(
        "--deadline-slack",
        type=positive_finite_float,
        nargs=2,
        default=(1.0, 1.5),
        metavar=("LO", "HI"),
        help="jobs without a deadline of their own: arrival + U(LO, HI) * dur_7g (1.0 1.5)",
    )


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    """``--executor local|ray``, ``--ray-address ADDR`` and ``--workers N`` (``reproduce``, ``sweep``)."""
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local process pool or Ray (default: local)",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="address of a running Ray cluster (default: start a local one)",
    )
    parser.add_argument(
        "--workers",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="worker processes / Ray CPUs (default: all cores)",
    )


def add_gpu_option(parser: argparse.ArgumentParser) -> None:
    """``--gpu NAME|FILE.toml``: a catalogue entry or file, default ``a100-40gb``."""
    parser.add_argument(
        "--gpu",
        default=None,
        metavar="NAME|FILE.toml",
        help="GPU: a catalogue name (see 'wattsched mig configs --list-gpus') or a catalogue .toml "
        "(default: a100-40gb)",
    )


def resolve_gpu(args: argparse.Namespace) -> MigGpu:
    """The GPU of ``--gpu`` (one-line errors: an unknown name lists the catalogue)."""
    from wattsched.hardware.catalogue import load_gpu

    return load_gpu(getattr(args, "gpu", None))


def add_preset_options(parser: argparse.ArgumentParser, *, default: str | None) -> None:
    """``--preset paper|literal`` and ``--deadline-rule p1|slice-aware``.

    Both are validated when resolved (one-line error, exit 2), so a bad value never reaches a simulation.
    ``default=None``: the command decides (e.g. ``mig evaluate`` takes the model's training workload).
    """
    where = f"default: {default}" if default else "default: see the command"
    parser.set_defaults(preset_default=default)
    parser.add_argument(
        "--preset",
        default=None,
        metavar="NAME",
        help="reading of P1's unstated load: paper (Fig. 5 days x2.5, 8 h Table II queues) or literal "
        f"(x1, 24 h); {where}",
    )
    parser.add_argument(
        "--deadline-rule",
        default=None,
        metavar="RULE",
        help="deadlines a + U(1, 1.5)·dur_ref: p1 (dur_7g, default) or slice-aware (dur_g for a uniformly "
        "drawn compute size g)",
    )


def resolve_preset(args: argparse.Namespace) -> Preset:
    """The preset of ``--preset``, else the command's default (an unknown name lists the valid ones)."""
    from wattsched.experiments.presets import get_preset

    return get_preset(args.preset if args.preset is not None else args.preset_default)


def resolve_deadline_rule(args: argparse.Namespace) -> str:
    """The deadline rule of ``--deadline-rule`` (default ``p1``), checked against the generator's rules."""
    from wattsched.errors import ConfigError
    from wattsched.workload.generators import DEADLINE_RULES

    rule = getattr(args, "deadline_rule", None)
    rule = "p1" if rule is None else rule
    if rule not in DEADLINE_RULES:
        raise ConfigError(
            f"unknown --deadline-rule '{rule}'{did_you_mean(rule, DEADLINE_RULES)}; "
            f"valid: {', '.join(DEADLINE_RULES)}"
        )
    return str(rule)


def repartition_cost(text: str) -> float | str:
    """An argparse type: seconds (a finite number >= 0) or ``measured:STATE`` (a controller's state file)."""
    if text.startswith("measured:"):
        if not text.removeprefix("measured:"):
            raise argparse.ArgumentTypeError("expected measured:STATE, a controller's state file")
        return text
    return non_negative_float(text)


def repartition_seconds(value: float | str, gpu: MigGpu) -> float:
    """``--repartition-s``'s seconds for ``gpu``: the number, or the state file's measured median."""
    if isinstance(value, float):
        return value
    from wattsched.slurm.repartition import measured_repartition_s

    return measured_repartition_s(value.removeprefix("measured:"), gpu)
