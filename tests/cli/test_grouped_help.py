"""``wattsched --help`` lists the commands in titled groups, each command in exactly one."""

from __future__ import annotations

import re

import pytest

from wattsched.cli import COMMAND_GROUPS, COMMANDS, main


def test_every_command_is_in_exactly_one_group() -> None:
    grouped = [name for _, names in COMMAND_GROUPS for name in names]
    assert sorted(grouped) == sorted(command.name for command in COMMANDS)
    assert len(grouped) == len(set(grouped))


def _help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_help_lists_each_command_once_under_its_group_with_its_help_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _help(capsys, monkeypatch)
    section = text.split("\ncommands:\n", 1)[1]
    lines = section.splitlines()
    helps = {command.name: command.help for command in COMMANDS}
    for title, names in COMMAND_GROUPS:
        start = lines.index(f"  {title}:")
        following = []
        for line in lines[start + 1 :]:
            if not line.startswith("    "):
                break
            following.append(line)
        listed = [match.group(1) for line in following if (match := re.match(r"^    (\S+)\s", line))]
        assert listed == list(names), title
        for name in names:
            first = next(line for line in following if line.startswith(f"    {name} "))
            assert first.split(None, 1)[1] == helps[name][: len(first.split(None, 1)[1])]
    for name in helps:
        assert len(re.findall(rf"^    {re.escape(name)}\s", section, re.MULTILINE)) == 1, name
    assert "Other commands" not in text  # every command has its group


def test_a_command_in_no_group_is_listed_under_other_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from wattsched.cli._parsing import Command, OneLineErrorParser, add_commands

    parser = OneLineErrorParser(prog="demo")
    add_commands(
        parser,
        [
            Command("schema", "kinds of files", "wattsched.cli.schema"),
            Command("measure", "energy of a command", "wattsched.cli.measure"),
        ],
        [],
        (("Data", ("schema",)),),
    )  # no command named: each gets its help line only
    text = parser.format_help()
    expected = r"commands:\n  Data:\n    schema +kinds of files\n  Other commands:\n    measure +energy"
    assert re.search(expected, text), text


def test_a_sub_command_group_keeps_argparse_s_plain_list(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit):
        main(["mig", "--help"])
    text = capsys.readouterr().out
    assert "positional arguments:\n  COMMAND\n    generate" in text
