from __future__ import annotations

from pathlib import Path

import pytest

from wattsched.errors import ConfigError
from wattsched.experiments.grid import (
    expand_grid,
    group_by_queue,
    load_grid_config,
    queue_seed,
    validate_grid_config,
)

BASE = {
    "name": "mini",
    "seed": 11,
    "hours": 1.0,
    "policies": ["edf-fs", "edf-ss"],
    "configurations": [1, 3, "no-mig"],
    "default_condition": "a",
    "iterations": {"quick": 2, "paper": 5},
    "conditions": [
        {"name": "a", "rate_per_min": 0.5, "inference_share": 0.8},
        {"name": "b", "rate_per_min": 0.1, "inference_share": 0.2},
    ],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seed": -1}, "seed: Input should be greater than or equal to 0"),
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"policies": []}, "policies: "),
        ({"policies": ["llf", "llf"]}, "duplicate entries"),
        ({"default_condition": "z"}, "default_condition 'z' is not one of"),
        (
            {"conditions": [{"name": "a", "rate_per_min": 0, "inference_share": 2}]},
            "conditions.0.rate_per_min",
        ),
    ],
)
def test_invalid_grids_raise_one_line_config_errors(change: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_grid_config({**BASE, **change}, "mini.toml")
    text = str(info.value)
    assert message in text and text.startswith("mini.toml: invalid study configuration")
    assert "\n" not in text


def test_toml_files_and_names(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(ConfigError, match=r"bad\.toml: invalid TOML"):
        load_grid_config(bad)
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read study configuration"):
        load_grid_config(tmp_path / "nope.toml")
    good = tmp_path / "good.toml"
    good.write_text(
        'name = "g"\nseed = 1\nhours = 2.0\npolicies = ["llf"]\nconfigurations = [2]\n'
        'default_condition = "x"\n[iterations]\nquick = 1\npaper = 3\n'
        '[[conditions]]\nname = "x"\nrate_per_min = 0.2\ninference_share = 0.5\n'
    )
    assert load_grid_config(good).iterations_for("paper") == 3
    with pytest.raises(ConfigError, match="unknown scale"):
        load_grid_config(good).iterations_for("huge")


def test_expansion_uses_common_random_numbers() -> None:
    config = validate_grid_config(BASE)
    points = expand_grid(config, "quick")
    assert len(points) == 2 * 2 * 2 * 3  # conditions × iterations × policies × configurations
    groups = group_by_queue(points)
    assert list(groups) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    for (condition, iteration), members in groups.items():
        assert len(members) == 6 and {p.seed for p in members} == {queue_seed(11, condition, iteration)}
    seeds = [members[0].seed for members in groups.values()]
    assert len(set(seeds)) == 4  # distinct queues across iterations and conditions
    # A condition's seeds do not depend on which other conditions exist or their order.
    alone = validate_grid_config({**BASE, "conditions": BASE["conditions"][::-1]})
    assert {(p.condition, p.iteration, p.seed) for p in expand_grid(alone, "quick")} == {
        (p.condition, p.iteration, p.seed) for p in points
    }
    assert len(expand_grid(config, "paper", iterations=1)) == 2 * 1 * 2 * 3


def test_same_seed_gives_the_same_queue() -> None:
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    spec = WorkloadSpec(rate_per_min=0.5, hours=1.0)
    seed = queue_seed(11, "a", 0)
    assert generate_jobs(spec, seed) == generate_jobs(spec, seed)
    assert generate_jobs(spec, seed) != generate_jobs(spec, queue_seed(11, "a", 1))
