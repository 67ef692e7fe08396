"""The built site in a real browser opened from disk: Debian's headless Chromium driven by Selenium.

The home page and the CLI reference load from ``file://`` with no console error and no request to a server,
and the search (which runs in a web worker, started from disk by the site's iframe stand-in) finds a
command. A screenshot of the search results is saved under the test's tmp folder and its path printed.
Skips without Chromium, its driver or the [docs] extra, unless ``WATTSCHED_REQUIRE_BROWSER`` is set.
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
from docs_fixtures import have_mkdocs

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
LOCAL_SCHEMES = {"file", "data", "blob", "about", "chrome", "chrome-untrusted", "devtools"}

pytestmark = pytest.mark.browser
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the [test] extra)")
_missing = [
    why
    for why, absent in (
        (
            "Debian's chromium and chromium-driver are missing (apt-get install chromium chromium-driver)",
            not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()),
        ),
        ("the [docs] extra (mkdocs, mkdocs-material, mkdocstrings) is missing", not have_mkdocs()),
    )
    if absent
]
if _missing:
    if os.environ.get("WATTSCHED_REQUIRE_BROWSER"):  # set by .ci/run, which installs them
        pytest.fail("; ".join(_missing), pytrace=False)
    pytest.skip("; ".join(_missing), allow_module_level=True)


@pytest.fixture(scope="module")
def site(built_site: Path) -> Path:
    return built_site


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


def _remote_requests(driver: Any) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return [url for url in urls if urlparse(url).scheme not in LOCAL_SCHEMES]


def _open(driver: Any, page: Path) -> None:
    driver.get_log("browser")
    driver.get_log("performance")  # drop what earlier pages logged
    driver.get(page.resolve().as_uri())


def _wait(condition: Any, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def _no_errors(driver: Any) -> None:
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    assert _remote_requests(driver) == []


def test_the_cli_reference_opens_from_disk_without_errors(browser: Any, site: Path) -> None:
    _open(browser, site / "reference" / "cli.html")
    assert _wait(lambda: browser.find_elements("css selector", "#wattsched-mig-run"))
    _no_errors(browser)


def test_offline_search_finds_a_command(browser: Any, site: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, site / "index.html")
    # On a narrow window the search box is behind the header's magnifier button; open it the way a click
    # on that button does, then type.
    button = browser.find_element(By.CSS_SELECTOR, "label.md-header__button[for='__search']")
    if button.is_displayed():
        button.click()
    box = _wait(
        lambda: [
            e for e in browser.find_elements(By.CSS_SELECTOR, "input.md-search__input") if e.is_displayed()
        ]
    )
    assert box, "the search box did not open"
    box[0].send_keys("completion")
    results = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
    meta = browser.find_element(By.CSS_SELECTOR, ".md-search-result__meta").text
    assert results, f"no search results (the search said: {meta!r})"
    titles = " ".join(item.text for item in results)
    assert "completion" in titles.lower()
    _no_errors(browser)
    screenshot = tmp_path / "docs-search.png"
    assert browser.save_screenshot(str(screenshot))
    print(f"screenshot: {screenshot}")
    assert screenshot.stat().st_size > 10_000
