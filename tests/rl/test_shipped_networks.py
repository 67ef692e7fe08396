"""The DQNs shipped with the package (``src/wattsched/rl/networks``): each matches its checksums, is the one
its recipe names and loads as a repartitioning policy; a first run with an empty cache uses them instead of
training; and retraining one from its recipe gives the same weights bit for bit (slow: one training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.rl.cache import (
    RECIPE_FILE,
    SHIPPED_DIR,
    recipe_key,
    shipped_model,
    trained_model,
    weights_digest,
)
from wattsched.rl.dqn import DQNConfig, train

FOLDERS = sorted(p for p in SHIPPED_DIR.glob("*") if (p / RECIPE_FILE).is_file())


def _recipe(folder: Path) -> dict:
    return json.loads((folder / RECIPE_FILE).read_text(encoding="utf-8"))


def test_the_quick_table3_networks_are_shipped() -> None:
    from wattsched.studies.table3 import Table3Cell, Table3Study, dqn_config

    cells = [
        c
        for c in Table3Study().cells("quick")
        if isinstance(c, Table3Cell) and c.method and c.method.kind == "dynamic" and not c.method.rollout
    ]
    assert cells
    for cell in cells:
        assert (SHIPPED_DIR / recipe_key(dqn_config(cell))).is_dir(), f"{cell.key}: no shipped network"


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_a_shipped_network_is_its_recipe_and_loads(folder: Path) -> None:
    from wattsched.rl.partitioner import DQNPartitioner

    recipe = _recipe(folder)
    config = DQNConfig.from_json(recipe["config"])
    assert recipe_key(config) == folder.name
    model = shipped_model(config)
    assert model is not None and model.shipped and model.timesteps == recipe["timesteps"]
    assert weights_digest(folder) == recipe["weights_sha256"]
    policy = DQNPartitioner.from_file(model.model_path)
    assert policy.name == "dynamic"


def test_an_empty_cache_takes_the_shipped_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not FOLDERS:
        pytest.fail("no shipped network")
    config = DQNConfig.from_json(_recipe(FOLDERS[0])["config"])
    monkeypatch.setenv("WATTSCHED_CACHE_DIR", str(tmp_path))
    model = trained_model(config)
    assert model.shipped and not model.trained and model.model_path.parent == FOLDERS[0]
    monkeypatch.setenv("WATTSCHED_SHIPPED_NETWORKS", "0")
    assert shipped_model(config) is None


def test_a_file_that_does_not_match_its_checksum_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    import wattsched.rl.cache as cache

    if not FOLDERS:
        pytest.fail("no shipped network")
    copy = tmp_path / FOLDERS[0].name
    shutil.copytree(FOLDERS[0], copy)
    monkeypatch.setattr(cache, "SHIPPED_DIR", tmp_path)
    config = DQNConfig.from_json(_recipe(copy)["config"])
    assert cache.shipped_model(config) is not None
    with open(copy / "dqn_model.zip", "ab") as handle:
        handle.write(b"\0")
    assert cache.shipped_model(config) is None


@pytest.mark.slow
def test_retraining_a_shipped_network_gives_the_same_weights(tmp_path: Path) -> None:
    # the shortest recipe (fewest steps × networks); training is deterministic, so the weights are equal bit
    # for bit unless the simulator or the training changed since it was shipped (then ship again)
    folder = min(FOLDERS, key=lambda p: _recipe(p)["timesteps"])
    recipe = _recipe(folder)
    train(DQNConfig.from_json(recipe["config"]), tmp_path)
    assert weights_digest(tmp_path) == recipe["weights_sha256"]
