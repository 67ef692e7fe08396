"""The project's licence and citation files agree with pyproject.toml (issue 13 item 7)."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import yaml

import wattsched

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_license_file_is_the_licence_pyproject_names() -> None:
    assert PYPROJECT["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_citation_names_the_software_and_both_papers() -> None:
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == PYPROJECT["version"] == wattsched.__version__
    assert cff["license"] == PYPROJECT["license"]
    dois = {ref["doi"]: ref for ref in cff["references"]}
    assert set(dois) == {"10.1109/CCGRID64434.2025.00066", "10.1109/TPDS.2022.3181096"}
    assert [a["family-names"] for a in dois["10.1109/CCGRID64434.2025.00066"]["authors"]][:1] == ["Lipe"]
    assert [a["family-names"] for a in dois["10.1109/TPDS.2022.3181096"]["authors"]][:2] == ["Mei", "Wang"]
    for ref in cff["references"]:
        assert ref["title"] and ref["year"] and ref["authors"]


def test_scratch_folder_of_the_readme_tour_is_ignored() -> None:
    done = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "scratch/day.parquet"], check=False)
    assert done.returncode == 0
    assert "mkdir -p scratch && cd scratch" in (ROOT / "README.md").read_text(encoding="utf-8")
