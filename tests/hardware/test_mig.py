from __future__ import annotations

import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.hardware.mig import NO_MIG, default_profile, load_profile

EXPECTED_SIZES = {
    1: (7,), 2: (4, 3), 3: (4, 2, 1), 4: (4, 1, 1, 1), 5: (3, 3), 6: (2, 2, 3), 7: (2, 1, 1, 3),
    8: (1, 1, 1, 1, 3), 9: (2, 2, 2, 1), 10: (2, 2, 1, 1, 1), 11: (2, 1, 1, 1, 1, 1), 12: (1,) * 7,
}


def test_twelve_configurations_match_paper_table() -> None:
    profile = default_profile()
    assert [c.ident for c in profile.configurations] == list(range(1, 13))
    for config in profile.configurations:
        assert config.compute_sizes == EXPECTED_SIZES[config.ident]
        # memory fills 40 GB everywhere; only config 5 has a hole in compute
        assert sum(s.memory_gb for s in config.slices) == 40
        assert config.total_units == (6 if config.ident == 5 else 7)
    assert profile.configuration(5).slices[1].first_slot == 5


def test_power_curve_and_no_mig() -> None:
    profile = default_profile()
    assert profile.power_w == (40.0, 119.0, 160.0, 205.3, 243.9, 247.7, 248.5, 248.5)
    full = profile.configuration(NO_MIG)
    assert not full.mig_enabled and full.total_units == 7
    assert profile.power(full.total_units) == 248.5
    assert profile.configuration("3") is profile.configuration(3)


def test_unknown_configuration_lists_valid() -> None:
    with pytest.raises(ConfigError, match="valid: 1, 2"):
        default_profile().configuration(13)


def test_bad_profile_file(tmp_path) -> None:
    bad = tmp_path / "gpu.toml"
    bad.write_text('[gpu]\nname="x"\ntotal_units=7\npower_w=[1,2]\n[slice_types]\n[[configuration]]\nid=1\nslices=[]\n')
    with pytest.raises(InputError, match=r"gpu\.toml: power_w needs 8"):
        load_profile(bad)
    overlap = tmp_path / "overlap.toml"
    overlap.write_text(
        '[gpu]\nname="x"\ntotal_units=7\npower_w=[0,1,2,3,4,5,6,7]\n'
        '[slice_types]\n"4g"={compute_units=4,memory_gb=20}\n[[configuration]]\nid=1\nslices=["4g@1","4g@3"]\n'
    )
    with pytest.raises(InputError, match="overlaps"):
        load_profile(overlap)
