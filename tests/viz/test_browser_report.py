"""The HTML report in a real browser: Debian's headless Chromium driven by Selenium (issue 13, item 3).

Each page (a small real ``reproduce`` run, a sweep directory) must load from ``file://`` with no console
error, draw every Plotly figure, make no network request, and answer clicks (table sort, metric menu). A
screenshot of each is saved under the test's tmp folder and its path printed. The chromedriver path is given
explicitly, so Selenium Manager never downloads anything. Skips where Chromium is not installed; ``.ci/run``
installs ``chromium`` and ``chromium-driver``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from viz_fixtures import make_sweep_dir

from wattsched.viz.html import write_html_report

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
LOCAL_SCHEMES = {"file", "data", "blob", "about", "chrome", "chrome-untrusted", "devtools"}

pytestmark = pytest.mark.browser
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the [test] extra)")
if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
    _why = "Debian's chromium and chromium-driver are missing (apt-get install chromium chromium-driver)"
    if os.environ.get("WATTSCHED_REQUIRE_BROWSER"):  # set by .ci/run, which installs them
        pytest.fail(_why, pytrace=False)
    pytest.skip(_why, allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="wattsched-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


_DRAWN = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).map(function (plot) {
  var visible = (plot._fullData || []).filter(function (t) { return t.visible === true; }).length;
  return {id: plot.id, visible: visible, drawn: plot.querySelectorAll('svg.main-svg .trace').length,
          points: plot.querySelectorAll('svg.main-svg .point, svg.main-svg path.js-line').length};
});
"""


def _open(driver: Any, page: Path) -> list[dict[str, Any]]:
    """Load ``page`` fresh, wait until every figure drew (30 s at most), return the figures' state."""
    driver.get_log("browser")
    driver.get_log("performance")  # drop what earlier pages logged
    driver.get(page.resolve().as_uri())
    expected = page.read_text(encoding="utf-8").count("Plotly.newPlot(")
    deadline = time.monotonic() + 30
    while True:
        figures = driver.execute_script(_DRAWN)
        done = len(figures) == expected and all(f["drawn"] >= max(1, f["visible"]) for f in figures)
        if done or time.monotonic() > deadline:
            return figures
        time.sleep(0.2)


def _requests(driver: Any) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def _check_page(driver: Any, page: Path, screenshot: Path) -> list[dict[str, Any]]:
    figures = _open(driver, page)
    assert figures, "no Plotly figure on the page"
    for figure in figures:
        assert figure["visible"] >= 1 and figure["drawn"] >= figure["visible"], figure
        assert figure["points"] >= 1, figure
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    remote = [u for u in _requests(driver) if urlparse(u).scheme not in LOCAL_SCHEMES]
    assert remote == [], remote
    assert driver.save_screenshot(str(screenshot))
    print(f"screenshot: {screenshot}")
    assert screenshot.stat().st_size > 10_000
    return figures


def test_reproduce_report_loads_offline_and_draws_every_figure(
    browser: Any, small_reproduce: Path, tmp_path: Path
) -> None:
    page = small_reproduce / "index.html"
    figures = _check_page(browser, page, tmp_path / "reproduce-report.png")
    assert len(figures) == page.read_text(encoding="utf-8").count("Plotly.newPlot(")
    # Every PNG figure of the study decoded (an image that failed would have naturalWidth 0).
    sizes = browser.execute_script(
        "return Array.from(document.images).map(function (i) { return i.complete ? i.naturalWidth : 0; });"
    )
    assert sizes and all(width > 100 for width in sizes)


def test_report_of_make_reproduce(browser: Any, tmp_path: Path) -> None:
    """The issue's done-when: ``index.html`` of a full ``make reproduce`` run (every study) in Chromium.
    ``.ci/run`` runs ``make reproduce`` into a temporary folder and names it in ``WATTSCHED_REPORT_DIR``."""
    folder = os.environ.get("WATTSCHED_REPORT_DIR")
    if not folder:
        pytest.skip("WATTSCHED_REPORT_DIR (a `make reproduce` output folder) is not set; .ci/run sets it")
    page = Path(folder) / "index.html"
    assert page.is_file(), f"{page} is missing: `make reproduce` writes it"
    figures = _check_page(browser, page, tmp_path / "make-reproduce-report.png")
    assert len(figures) == page.read_text(encoding="utf-8").count("Plotly.newPlot(")
    studies = [p.stem for p in (Path(folder) / "raw").glob("*.parquet")]
    for study in studies:
        assert browser.find_elements("css selector", f"#study-{study}"), study
    pngs = len(list((Path(folder) / "figures").glob("*.png")))
    sizes = browser.execute_script(
        "return Array.from(document.images).map(function (i) { return i.complete ? i.naturalWidth : 0; });"
    )
    assert len(sizes) >= pngs and all(width > 100 for width in sizes)


def test_sweep_report_answers_clicks(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    page = write_html_report(make_sweep_dir(tmp_path / "sweep"))
    figures = _check_page(browser, page, tmp_path / "sweep-report.png")
    assert [f["id"] for f in figures] == ["figure-1", "figure-2"]
    # Sorting: the group table's ET column, clicked twice, puts the largest mean first.
    table = browser.find_element(By.CSS_SELECTOR, "#sweep-tables table.sortable")
    header = table.find_elements(By.TAG_NAME, "th")[3]
    header.click()
    header.click()
    first = table.find_element(By.CSS_SELECTOR, "tbody tr td:nth-child(4)").text
    assert first == "8.4000"  # configuration no-mig, edf-fs: (7.2 + 7.2 + 10.8) / 3; the next is 7.2
    # The metric menu: choosing the second entry shows the energy bars and relabels the y axis.
    browser.find_element(By.CSS_SELECTOR, "#figure-1 .updatemenu-header").click()
    browser.find_elements(By.CSS_SELECTOR, "#figure-1 .updatemenu-dropdown-button")[1].click()
    title = browser.execute_script("return document.getElementById('figure-1').layout.yaxis.title.text;")
    assert title == "energy (kWh)"
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
