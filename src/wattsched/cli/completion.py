"""`wattsched completion SHELL`: the shell code that makes TAB complete wattsched's commands and options."""

from __future__ import annotations

import argparse
import sys

__all__ = ["SHELLS", "add_parser"]

#: The shells argcomplete writes completion code for.
SHELLS: tuple[str, ...] = ("bash", "zsh", "fish")


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    parser = groups.add_parser(
        "completion",
        help="print the shell code of tab completion (bash, zsh, fish)",
        description="Print the code that makes the shell complete wattsched's commands, options and choices "
        'on TAB. Load it once per shell, e.g. in ~/.bashrc: eval "$(wattsched completion bash)"; zsh: '
        'eval "$(wattsched completion zsh)" (after compinit).',
    )
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="one of: " + ", ".join(SHELLS))
    parser.set_defaults(func=_completion)


def _completion(args: argparse.Namespace) -> int:
    import argcomplete  # only this command and a completion request use it

    sys.stdout.write(argcomplete.shellcode(["wattsched"], shell=args.shell))
    return 0
