"""Headless Chromium for the report's browser tests (tests/report/test_report.py, test_report_images.py,
test_viewer.py, test_viewer_large.py), and waiting for a page's script."""

from __future__ import annotations

import os
import tempfile
import time

import pytest

#: Debian's chromium and chromium-driver (.ci/run installs them)
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def browser(tmp):
    """Headless Chromium with Selenium, or skip with the reason."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1200,900",
        "--hide-scrollbars",
        f"--user-data-dir={tempfile.mkdtemp(dir=tmp)}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def wait(d, script, *args, timeout=10.0):
    """Run ``script`` in the page until it returns something true (the viewer inflates its data asynchronously);
    its last value after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        value = d.execute_script(script, *args)
        if value or time.monotonic() > end:
            return value
        time.sleep(0.05)
