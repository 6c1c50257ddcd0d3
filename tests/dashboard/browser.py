"""Headless Chromium driven by selenium, with Debian's chromium and chromium-driver (the
test command installs them): no browser is downloaded at test time."""

from __future__ import annotations

import shutil
import threading
from contextlib import contextmanager

from flask import Flask
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait
from werkzeug.serving import make_server

CHROMEDRIVER = "/usr/bin/chromedriver"


def chrome(width: int = 1400, height: int = 1000) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    # --no-sandbox: the test machine runs as root, where Chromium's own sandbox cannot start
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or CHROMEDRIVER), options=options)


@contextmanager
def serving(app: Flask):
    """``app`` served on a free loopback port in a thread; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


# Plotly keeps a drawn figure's traces on its div as `.data`; a trace with a number drawn
# and an SVG path in its plot means the chart rendered with data.
PANEL_POINTS_JS = """
const div = document.getElementById(arguments[0]);
if (!div || !div.data || !div.querySelector('.main-svg')) return -1;
return div.data.reduce((n, t) => n + (t.y || []).filter(v => v !== null).length, 0);
"""


def mark_first_hacked_sample(driver: webdriver.Chrome, url: str, hack_class: str,
                             pattern: str | None = None) -> WebElement:
    """On the samples page, shows the hacked samples (of `pattern`, if given) and marks the first
    as a hack of `hack_class`; returns its card once the page says the verdict was recorded."""
    driver.get(url + "/samples")
    wait = WebDriverWait(driver, 60)
    Select(driver.find_element(By.ID, "kind")).select_by_visible_text("hacked")
    wanted = ["kind=hacked"]
    if pattern is not None:
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#pattern option[value='{pattern}']"))
        Select(driver.find_element(By.ID, "pattern")).select_by_value(pattern)
        wanted.append(f"pattern={pattern}")
    driver.find_element(By.CSS_SELECTOR, "#filters button[type='submit']").click()
    # the cards on the page are those of the filters `data-shown` names
    wait.until(lambda d: all(w in (d.find_element(By.ID, "samples").get_attribute("data-shown") or "")
                             for w in wanted))
    assert driver.find_elements(By.CSS_SELECTOR, ".sample") and all(
        f.text for f in driver.find_elements(By.CSS_SELECTOR, ".sample .flags"))
    card = driver.find_element(By.CSS_SELECTOR, ".sample")
    card.find_element(By.CSS_SELECTOR, ".hack-class").send_keys(hack_class)
    card.find_element(By.CSS_SELECTOR, ".mark-hack").click()
    status = card.find_element(By.CSS_SELECTOR, ".review-status")
    wait.until(lambda d: status.text.startswith(("recorded", "refused")))
    assert status.text == f"recorded: hack {hack_class}"
    return card
