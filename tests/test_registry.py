"""Registry.make checks a factory's options: an unknown or missing one is one line naming the kind, the name
and the valid options (with a did-you-mean), never Python's TypeError."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from wattsched.errors import ConfigError
from wattsched.mig.partition import PARTITIONERS
from wattsched.registry import Registry


@dataclass
class _Widget:
    size: int = 1
    colour: str = "red"
    _hidden: int = 0


def _registry() -> Registry[Any]:
    widgets: Registry[Any] = Registry("widget")
    widgets.register("plain")(_Widget)

    @widgets.register("passing", options_of=_Widget)
    def _passing(label: str = "", **options: Any) -> _Widget:
        return _Widget(**options)

    @widgets.register("open")
    def _open(**options: Any) -> dict[str, Any]:
        return options

    @widgets.register("needs")
    def _needs(path: str, verbose: bool = False) -> str:
        return path

    return widgets


def test_an_unknown_option_is_one_line_with_a_suggestion_and_the_valid_ones() -> None:
    widgets = _registry()
    assert widgets.make("plain", size=3).size == 3
    with pytest.raises(
        ConfigError,
        match=r"^unknown option 'colur' for widget 'plain' \(did you mean 'colour'\?\); valid: size, colour$",
    ):
        widgets.make("plain", colur="blue")
    with pytest.raises(
        ConfigError, match=r"^unknown option 'weight' for widget 'plain'; valid: size, colour$"
    ):
        widgets.make("plain", weight=2)
    with pytest.raises(ConfigError, match="unknown option '_hidden'"):
        widgets.make("plain", _hidden=1)  # a private field is no option


def test_options_passed_on_are_checked_against_what_they_go_to() -> None:
    widgets = _registry()
    assert widgets.make("passing", label="x", colour="blue").colour == "blue"
    with pytest.raises(ConfigError, match=r"valid: label, size, colour$"):
        widgets.make("passing", sise=2)
    assert widgets.make("open", anything=1) == {"anything": 1}  # nothing to check against


def test_a_missing_required_option_is_named() -> None:
    widgets = _registry()
    with pytest.raises(ConfigError, match=r"^widget 'needs' needs the option 'path'; valid: path, verbose$"):
        widgets.make("needs", verbose=True)


def test_every_built_in_partitioner_checks_its_options() -> None:
    with pytest.raises(
        ConfigError, match=r"'day_config' for repartitioning policy 'day-night' \(did you mean"
    ):
        PARTITIONERS.make("day-night", day_config=3)
    for name in ("static", "no-mig", "lookahead", "rollout"):
        with pytest.raises(
            ConfigError, match=rf"^unknown option 'colour' for repartitioning policy '{name}'"
        ):
            PARTITIONERS.make(name, colour=3)
    assert PARTITIONERS.make("lookahead", max_jobs=3).max_jobs == 3  # type: ignore[attr-defined]
    assert PARTITIONERS.make("rollout", scenarios=1).scenarios == 1  # type: ignore[attr-defined]
