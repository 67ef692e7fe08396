"""The presets of CONTRACT §4: their values, their workloads and unknown names."""

from __future__ import annotations

import pytest

from wattsched.errors import UnknownNameError
from wattsched.experiments.presets import DEFAULT_PRESET, PRESETS, get_preset, preset_names
from wattsched.workload.arrivals import PROFILES
from wattsched.workload.generators import generate_jobs


def test_the_contract_values() -> None:
    paper, literal = get_preset("paper"), get_preset("literal")
    assert (paper.rate_multiplier, paper.table2_hours) == (2.5, 8.0)
    assert (literal.rate_multiplier, literal.table2_hours) == (1.0, 24.0)
    for preset in (paper, literal):
        assert preset.table2_rate_per_min == 0.5 and preset.static_role == "static"
    assert DEFAULT_PRESET == "paper" and preset_names() == ["paper", "literal"]
    assert get_preset(paper) is paper


def test_jobs_per_day_and_the_peak() -> None:
    # 60·Σλ(h) = 207.2 jobs/day at multiplier 1 (papers.md §A.3.1); x2.5 = 518
    assert get_preset("literal").expected_jobs_per_day() == pytest.approx(207.2, abs=0.5)
    assert get_preset("paper").expected_jobs_per_day() == pytest.approx(2.5 * 207.2, abs=1.5)
    # the Fig. 5 peak (0.201/min) times 2.5 is Table II's 0.5/min (to the profile's three digits)
    peak = max(PROFILES.make("alibaba-day").rates_per_min)
    assert peak * PRESETS["paper"].rate_multiplier == pytest.approx(0.5, abs=0.003)


def test_workloads() -> None:
    paper = get_preset("paper")
    day = paper.day_workload()
    assert (day.profile, day.rate_multiplier, day.hours, day.deadline_rule) == (
        "alibaba-day",
        2.5,
        24.0,
        "p1",
    )
    queue = paper.queue_workload(deadline_rule="slice-aware")
    assert (queue.rate_per_min, queue.hours, queue.deadline_rule) == (0.5, 8.0, "slice-aware")
    assert get_preset("literal").queue_workload(0.1, 0.2).hours == 24.0
    # a paper day holds about 2.5x the jobs of a literal day with the same seed
    paper_jobs = sum(len(generate_jobs(paper.day_workload(), s)) for s in range(5))
    literal_jobs = sum(len(generate_jobs(get_preset("literal").day_workload(), s)) for s in range(5))
    assert 2.2 < paper_jobs / literal_jobs < 2.8


def test_unknown_preset_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="unknown preset 'bogus'; valid names: literal, paper"):
        get_preset("bogus")
