"""mig-parted YAML: our configurations out and back in, every one placed by the GPU's placement rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from test_mig_plan import A100, P1, h200_geometry

from wattsched.errors import ConfigError, InputError
from wattsched.hardware.catalogue import available, load_gpu
from wattsched.hardware.mig_parted import (
    config_name,
    dump_document,
    export_document,
    import_layouts,
    parse_document,
)
from wattsched.hardware.mig_plan import GpuLayouts, layout_counts, parse_layout


def test_export_matches_mig_parted_format() -> None:
    document = export_document("a100-40gb", [(3, parse_layout(P1[3], A100)), ("no-mig", None)])
    text = dump_document(document)
    assert yaml.safe_load(text) == {
        "version": "v1",
        "mig-configs": {
            "wattsched-a100-40gb-3": [
                {"devices": "all", "mig-enabled": True,
                 "mig-devices": {"4g.20gb": 1, "2g.10gb": 1, "1g.10gb": 1}},
            ],
            "wattsched-a100-40gb-no-mig": [{"devices": "all", "mig-enabled": False}],
        },
    }  # fmt: skip
    assert text.startswith("version: v1\nmig-configs:\n  wattsched-a100-40gb-3:\n")


def test_round_trip_of_every_p1_configuration() -> None:
    layouts = {ident: parse_layout(text, A100) for ident, text in P1.items()}
    text = dump_document(export_document("a100-40gb", list(layouts.items())))
    imported = import_layouts(parse_document(text, "p1.yaml"), A100)
    assert [item.name for item in imported] == [config_name("a100-40gb", ident) for ident in P1]
    for item, (ident, layout) in zip(imported, layouts.items(), strict=True):
        assert item.devices == "all" and item.layout is not None
        assert layout_counts(item.layout) == layout_counts(layout), ident
        A100.check(item.layout)
    # Counts carry no placements, but every P1 configuration comes back exactly where it was.
    assert [item.layout for item in imported] == list(layouts.values())


def test_round_trip_of_every_derived_layout(repo_data: Path) -> None:
    for geometry in (A100, h200_geometry(repo_data)):
        layouts = geometry.layouts()
        document = export_document(geometry.name, list(enumerate(layouts, start=1)))
        imported = import_layouts(parse_document(dump_document(document), "x.yaml"), geometry)
        for item, layout in zip(imported, layouts, strict=True):
            assert item.layout is not None and layout_counts(item.layout) == layout_counts(layout)


def test_nvidia_example_and_one_config() -> None:
    # The shape of nvidia-mig-parted's own examples: device lists, an all-disabled config, zero counts.
    text = """
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  custom:
    - devices: [0, 1]
      mig-enabled: true
      mig-devices:
        "1g.5gb": 2
        "2g.10gb": 1
        "3g.20gb": 1
        "7g.40gb": 0
"""
    configs = parse_document(text, "ex.yaml")
    (custom,) = import_layouts(configs, A100, only="custom")
    assert custom.devices == (0, 1)
    # 3g.20gb at 0 leaves one 1-slot placement after 2g.10gb@4, so the placer backtracks to P1's config 7.
    assert custom.layout == parse_layout(P1[7], A100)
    disabled = import_layouts(configs, A100, only="all-disabled")
    assert disabled[0].layout is None
    with pytest.raises(ConfigError, match="no config 'other' in the file; it has: all-disabled, custom"):
        import_layouts(configs, A100, only="other")


def test_counts_that_cannot_be_placed() -> None:
    text = "version: v1\nmig-configs:\n  big:\n    - devices: all\n      mig-enabled: true\n" \
           "      mig-devices: {4g.20gb: 1, 3g.20gb: 1, 1g.5gb: 1}\n"  # fmt: skip
    with pytest.raises(
        ConfigError, match=r"config 'big': 1 x 4g.20gb, 1 x 3g.20gb, 1 x 1g.5gb cannot be placed"
    ):
        import_layouts(parse_document(text, "big.yaml"), A100)
    unknown = text.replace("4g.20gb: 1, 3g.20gb: 1, 1g.5gb: 1", "1g.18gb: 1")
    with pytest.raises(ConfigError, match=re.escape("config 'big': a100-40gb has no MIG profile '1g.18gb'")):
        import_layouts(parse_document(unknown, "u.yaml"), A100)


@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("version: v1\nmig-configs: [\n", "not valid YAML at line"),
        ("- a\n- b\n", "expected a mig-parted document"),
        ("version: v2\nmig-configs: {a: []}\n", "unsupported mig-parted version 'v2'"),
        ("version: v1\nmig-configs: {}\n", "non-empty mapping"),
        ("version: v1\nmig-configs: {a: []}\n", "config 'a' must be a non-empty list"),
        ("version: v1\nmig-configs: {a: [{devices: all}]}\n", "'mig-enabled' must be true or false"),
        ("version: v1\nmig-configs: {a: [{devices: gpu0, mig-enabled: true}]}\n", "'devices' must be 'all'"),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {x: -1}}]}\n",
            "counts >= 0",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, mig-devices: {x: 1}}]}\n",
            "with 'mig-enabled: false'",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, extra: 1}]}\n",
            "unknown key(s) extra",
        ),
    ],
)
def test_bad_documents_are_one_input_error(text: str, piece: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_document(text, "bad.yaml")
    assert piece in str(caught.value) and str(caught.value).startswith("bad.yaml: ")


@pytest.mark.parametrize("name", available("gpu"))
def test_round_trip_of_every_catalogue_configuration(name: str) -> None:
    gpu = GpuLayouts.from_catalogue(load_gpu(name))
    chosen = [*gpu.configurations, ("no-mig", None)]
    imported = import_layouts(
        parse_document(dump_document(export_document(name, chosen)), "x.yaml"), gpu.geometry
    )
    assert [item.name for item in imported] == [f"wattsched-{name}-{ident}" for ident, _ in chosen]
    for item, (_, layout) in zip(imported, chosen, strict=True):
        if layout is None:
            assert item.layout is None
            continue
        assert item.layout is not None and layout_counts(item.layout) == layout_counts(layout)
        gpu.geometry.check(item.layout)
        # The id read back is this configuration's, or an earlier one with the same instance counts.
        match = gpu.ident_of(item.layout)
        assert match is not None
        assert layout_counts(dict(gpu.configurations)[match]) == layout_counts(layout)
