"""The project's licence and citation files agree with pyproject.toml; the shipped data carry their licences;
the words for users cite nothing a user cannot read."""

from __future__ import annotations

import re
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


#: Words for users must not point at the documents the project was specified in, nor at how it was built.
INTERNAL_REFERENCES = re.compile(r"\bCONTRACT\b|papers\.md|§|(?i:\bsessions?\b|\bissue\s*#?\d|\bitem \d+ of)")
#: The folders whose text a user reads: the package (docstrings, messages, report text), the docs, the
#: examples.
USER_FACING = ("src", "docs", "examples")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".lua", ".yaml", ".yml", ".txt", ".cfg", ".html", ".js", ".sh"}


def internal_references(root: Path) -> list[str]:
    """``file:line: text`` of every line under ``root``'s user-facing folders that cites an internal
    document."""
    found = []
    for folder in USER_FACING:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or path.suffix not in TEXT_SUFFIXES or "__pycache__" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                # pytest's fixture scope "session" is a name, not a word for users.
                if INTERNAL_REFERENCES.search(line.replace('scope="session"', "")):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_user_facing_text_cites_no_internal_document() -> None:
    offending = internal_references(ROOT)
    assert offending == [], "internal references in words for users:\n" + "\n".join(offending)


def test_the_internal_reference_check_finds_each_kind(tmp_path: Path) -> None:
    lines = [
        "x = 1  # CONTRACT §4",
        '"""See papers.md for the rule."""',
        "# as the previous session found",
        "# fixed in Issue #12",
        "# item 3 of the list",
        "CONTRACT_KEYS = ()  # a name, not a citation",
        "# an issue of the trace: 12 rows",
        "# the Study contract: cells and rows",
    ]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "module.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = internal_references(tmp_path)
    assert [entry.split(":")[1] for entry in found] == ["1", "2", "3", "4", "5"]
    assert found[0] == "src/module.py:1: x = 1  # CONTRACT §4"


def test_shipped_data_folders_state_source_and_licence() -> None:
    data = ROOT / "data"
    folders = {path.parent for path in data.rglob("*") if path.is_file() and path.name != "README.md"}
    for folder in sorted(folders):
        # The folder's own README, or the nearest one above it inside data/.
        inside = [p for p in (folder, *folder.parents) if p == data or data in p.parents]
        readme = next((p / "README.md" for p in inside if (p / "README.md").is_file()), None)
        assert readme is not None, f"{folder} has no README"
        text = readme.read_text(encoding="utf-8")
        assert re.search(r"licen[cs]e", text, re.IGNORECASE), f"{readme} names no licence"
        assert "source" in text.lower(), f"{readme} names no source"
    # No file that no licence lets us redistribute.
    unlicensed = {
        "openb_pod_list_default.csv",
        "openb_node_list_all_node.csv",
        "gtx1080ti.csv",
        "gtx2070s.csv",
    }
    assert not {p.name for p in data.rglob("*")} & unlicensed
    for licence in ("traces/LICENSE", "mig-profiles/parvagpu/LICENSE", "mig-profiles/miso/LICENSE"):
        assert (data / licence).is_file(), licence
