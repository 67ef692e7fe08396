"""Regenerate the README's images: a run's Gantt and power figures (`wattsched plot`) and a screenshot of the
interactive report (`wattsched report`) taken in Debian's headless Chromium.

    .venv/bin/python docs/make_images.py RESULTS_DIR    # RESULTS_DIR: the output of `make reproduce`

Writes docs/images/run_gantt.png, docs/images/run_power.png and docs/images/report.png.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMAGES = Path(__file__).resolve().parent / "images"
WATTSCHED = [sys.executable, "-m", "wattsched.cli"]


def plots(work: Path) -> None:
    run = work / "run.parquet"
    subprocess.run(
        [
            *WATTSCHED,
            "mig",
            "run",
            "--config",
            "3",
            "--policy",
            "edf-ss-restricted",
            "--rate",
            "0.5",
            "--hours",
            "2",
            "--seed",
            "1",
            "--timeline-out",
            str(run),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run([*WATTSCHED, "plot", str(run), "--out", str(work)], check=True, stdout=subprocess.DEVNULL)
    for name in ("run_gantt.png", "run_power.png"):
        shutil.copyfile(work / name, IMAGES / name)


def screenshot(results: Path, work: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    subprocess.run([*WATTSCHED, "report", str(results)], check=True, stdout=subprocess.DEVNULL)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={work / 'profile'}",
        "--window-size=1300,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    try:
        driver.get((results / "index.html").resolve().as_uri())
        time.sleep(3)
        driver.execute_script(
            "document.querySelector('#study-table2 h3:last-of-type').scrollIntoView();"
            "window.scrollBy(0, -40);"
        )
        time.sleep(1)
        driver.save_screenshot(str(IMAGES / "report.png"))
    finally:
        driver.quit()


def main() -> None:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        plots(Path(folder))
        screenshot(results, Path(folder))


if __name__ == "__main__":
    main()
