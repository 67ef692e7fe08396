"""The shipped DVFS checker runs over every registered pair rule, and catches a broken one."""

from __future__ import annotations

from typing import Any

import pytest

from wattsched.dvfs.baselines import ALGORITHMS
from wattsched.dvfs.checks import check_pair_rule
from wattsched.mig.checks import CheckError


@pytest.mark.parametrize("name", ALGORITHMS.available())
def test_every_registered_pair_rule_passes_its_checker(name: str) -> None:
    check_pair_rule(name, seeds=1)


class _CramsEverythingOnPairZero:
    """Ignores fit: always the first ON pair, so tasks queue behind each other and miss their deadlines."""

    name = "cram"
    readjust = False

    def __init__(self) -> None:
        self._inner = ALGORITHMS.make("edf-bf")

    def order(self, deadline_s: Any, time_s: Any) -> Any:
        return self._inner.order(deadline_s, time_s)

    def choose(self, pool: Any, now_s: float, time_s: float, deadline_s: float, initial: bool) -> int:
        return 0 if pool.opened else -1


def test_the_checker_catches_a_rule_that_misses_deadlines() -> None:
    with pytest.raises(CheckError, match="missed a deadline"):
        check_pair_rule(_CramsEverythingOnPairZero(), seeds=1)
