"""Every DVFS cluster constant lives in the catalogue: ClusterConfig() and the reproduction mode read it."""

from __future__ import annotations

from pathlib import Path

from wattsched.dvfs import ClusterConfig
from wattsched.dvfs.hkbu import HKBU_IDLE_POWER_W, HKBU_TURN_ON_W_SLOT_PER_SERVER, hkbu_configs
from wattsched.hardware import catalogue
from wattsched.hardware.dvfs import default_dvfs_gpu


def test_cluster_config_defaults_are_the_catalogue_entry() -> None:
    data = default_dvfs_gpu().cluster
    config = ClusterConfig()
    assert (
        config.idle_power_w,
        config.turn_on_j_per_pair,
        config.slot_s,
        config.drs_idle_slots,
        config.pairs,
    ) == (data.idle_power_w, data.turn_on_j_per_pair, data.slot_s, data.drs_idle_slots, data.pairs)
    assert (config.idle_power_w, config.turn_on_j_per_pair) == (37.0, 90.0 * 60.0)  # CONTRACT §6
    assert (HKBU_IDLE_POWER_W, HKBU_TURN_ON_W_SLOT_PER_SERVER) == (85.0, 200.0)
    cluster, _ = hkbu_configs(pairs_per_server=4)
    assert cluster.idle_power_w == 85.0 and cluster.turn_on_j_per_pair == 200.0 * 60.0 / 4


def test_no_dvfs_module_spells_the_cluster_constants() -> None:
    # The numbers appear only in data (and in prose); code reads them from the catalogue.
    root = Path(catalogue.__file__).parents[1] / "dvfs"
    for path in root.glob("*.py"):
        code = [
            line.split("#")[0] for line in path.read_text().splitlines() if not line.strip().startswith("#")
        ]
        for needle in ("= 37.0", "= 85.0", "= 200.0", "90.0 * 60.0"):
            assert not any(needle in line for line in code), (path.name, needle)
