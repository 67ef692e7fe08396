"""The offline HTML report (wattsched.viz.html) of a sweep and of a small real reproduce run: one file, no
network reference, every table and figure of the inputs, deterministic. The browser test loads the same pages
in Chromium (test_browser_report.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from viz_fixtures import make_sweep_dir

from wattsched.errors import InputError
from wattsched.experiments.study import STUDY_VIEWS
from wattsched.studies.views import with_et
from wattsched.viz.html import build_html_report, summary_tables, table_html, write_html_report

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def _main(page: str) -> str:
    """The page body without the inlined plotly.js (which holds strings of its own)."""
    return page.split("<main>", 1)[1].split("</main>", 1)[0]


def _figures(page: str) -> list[str]:
    return re.findall(r'Plotly\.newPlot\(\s*"(figure-\d+)"', page)


def assert_self_contained(page: str) -> None:
    """No tag loads anything: no external script, stylesheet, image, frame or font."""
    assert "<script src" not in page and "<link" not in page and "<iframe" not in page
    assert not re.search(r'<img[^>]+src="(?!data:)', page)
    assert "@import" not in page and "url(http" not in page


def test_sweep_page_has_every_figure_and_table(tmp_path: Path) -> None:
    folder = make_sweep_dir(tmp_path / "sweep")
    path = write_html_report(folder)
    page = path.read_text(encoding="utf-8")
    assert path == folder / "index.html"
    assert_self_contained(page)
    assert page.count("<script>") >= 3 and "plotly.js" in page[:200_000].lower()
    assert _figures(page) == ["figure-1", "figure-2"]  # bars with a metric menu, run scatter
    assert page.count('<table class="sortable">') == 3  # pool, group summary, every run
    assert "ET (P1 Sec. IV-A, lower is better)" in page and "energy (kWh)" in page
    assert "<code>policy</code>: edf-fs, edf-ss" in page and "12 runs" in page


def test_sweep_group_table_holds_the_hand_computed_means(tmp_path: Path) -> None:
    page = build_html_report(make_sweep_dir(tmp_path / "sweep"))
    table = page.split('id="sweep-tables"')[1]
    first_row = re.search(r"<tbody><tr>(.*?)</tr>", table)
    assert first_row is not None
    cells = re.findall(r"<td>(.*?)</td>", first_row.group(1))
    # policy edf-fs, configuration 3, 3 runs, ET mean 7.2 (3.6, 7.2, 10.8 MJ / 1e6), energy 2 kWh.
    assert cells[:4] == ["edf-fs", "3", "3", "7.2000"]
    assert "2.0000" in cells


def test_sweep_group_table_clips_intervals_at_zero_and_says_so(tmp_path: Path) -> None:
    page = build_html_report(make_sweep_dir(tmp_path / "sweep"))
    table = page.split('id="sweep-tables"')[1].split("<details>")[0]
    header = re.findall(r"<th[^>]*>(.*?)</th>", table)
    first_row = re.search(r"<tbody><tr>(.*?)</tr>", table)
    assert first_row is not None
    row = dict(zip(header, re.findall(r"<td>(.*?)</td>", first_row.group(1)), strict=True))
    # ET 3.6, 7.2, 10.8: 7.2 ± 4.3027 * 3.6 / sqrt(3) = 7.2 ± 8.9429, so [-1.7429, 16.1429]; ET is never
    # negative, so the low end is 0 and the row says it was clipped.
    assert row["et 95 % low"] == "0.0000" and row["et 95 % high"] == "16.1429"
    assert row["et low clipped at 0"] == "yes"
    overview = page.split('id="sweep"')[1].split("</section>")[0]
    assert "an interval reaching below 0 is clipped at 0" in overview


def test_page_is_deterministic(tmp_path: Path) -> None:
    folder = make_sweep_dir(tmp_path / "sweep")
    assert build_html_report(folder) == build_html_report(folder)


def test_reproduce_page_holds_every_section_figure_and_view(small_reproduce: Path) -> None:
    folder = small_reproduce
    page = (folder / "index.html").read_text(encoding="utf-8")  # reproduce wrote it
    assert page == build_html_report(folder)
    assert_self_contained(page)
    figures = sorted(p.name for p in (folder / "figures").glob("*.png"))
    assert figures and _main(page).count("data:image/png;base64,") == len(figures)
    rows = pd.read_parquet(folder / "raw" / "table2.parquet")
    assert len(_figures(page)) == 1 + rows["condition"].nunique()  # Table II view + one per condition
    markdown_tables = (folder / "sections" / "table2.md").read_text(encoding="utf-8").count("\n|---")
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert page.count('<table class="sortable">') >= markdown_tables + len(summary)
    assert "Table II — in-configuration scheduling" in page and "Key figures" in page


def test_table2_view_reproduces_the_summary_et(small_reproduce: Path) -> None:
    from wattsched.studies.table2_analysis import PAPER_POLICIES

    rows = pd.read_parquet(small_reproduce / "raw" / "table2.parquet")
    main = rows[rows["variant"] == "paper"]  # the default preset's rows fill summary.json's top level
    frame = with_et(main, ["condition"], column="policy", pool=PAPER_POLICIES)
    ours = frame[frame["condition"] == "default"].groupby("policy")["et"].mean().to_dict()
    summary = json.loads((small_reproduce / "summary.json").read_text(encoding="utf-8"))
    assert ours == pytest.approx(summary["table2"], rel=1e-12)
    assert next(title for title, _ in STUDY_VIEWS.make("table2", rows=rows)).startswith("Table II")


def test_markdown_images_inline_and_a_missing_one_is_a_note(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    (folder / "sections").mkdir(parents=True)
    (folder / "figures").mkdir()
    (folder / "figures" / "a.png").write_bytes(PNG_1PX)
    (folder / "sections" / "demo.md").write_text(
        "## Demo <study>\n\nText & reasoning.\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n"
        "![A](figures/a.png) ![B](figures/b.png) ![C](../../etc/passwd)\n",
        encoding="utf-8",
    )
    (folder / "summary.json").write_text(json.dumps({"demo": {"k": 1, "nested": {"a": {"x": 1.5}}}}))
    page = build_html_report(folder)
    assert_self_contained(page)
    assert "<h2>Demo &lt;study&gt;</h2>" in page and "Text &amp; reasoning." in page
    assert _main(page).count("data:image/png;base64,") == 1
    assert "[figure not found: figures/b.png]" in page and "[figure not found: ../../etc/passwd]" in page
    assert '<table class="sortable">\n<thead>' in page or '<table class="sortable"><thead>' in page


def test_summary_tables_shape_json_blocks() -> None:
    tables = dict(
        summary_tables(
            {
                "edf-fs": 1.5,
                "detail": {"edf-fs": {"energy_j": 2.0, "runs": 3}},
                "deep": {"x": {"y": {"z": 1}}},
            },
            "table2",
        )
    )
    assert tables["table2"].to_dict("list") == {"key": ["edf-fs"], "value": [1.5]}
    assert tables["table2/detail"].columns.tolist() == ["", "energy_j", "runs"]
    assert "table2/deep/x" in tables


def test_table_html_escapes_and_formats() -> None:
    text = table_html(pd.DataFrame({"<a>": ["<b>"], "v": [1234567.0], "n": [float("nan")], "i": [3]}))
    assert "&lt;a&gt;" in text and "&lt;b&gt;" in text and "1.23e+06" in text and "n/a" in text
    assert "<td>3</td>" in text


def test_a_folder_that_is_neither_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a reproduce or sweep directory"):
        build_html_report(tmp_path)
    with pytest.raises(InputError, match="not a directory"):
        build_html_report(tmp_path / "absent")


def test_a_study_that_ran_no_cell_has_no_view_and_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from wattsched.io import write_table
    from wattsched.viz.html import _study_views

    path = tmp_path / "real-workloads.parquet"
    write_table(pd.DataFrame(), path)
    with caplog.at_level("WARNING"):
        assert _study_views(path, "real-workloads") == []
    assert "no interactive view" not in caplog.text
