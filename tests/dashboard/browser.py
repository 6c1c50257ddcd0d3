"""Headless Chromium driven by selenium, with Debian's chromium and chromium-driver (the
test command installs them): no browser is downloaded at test time."""

from __future__ import annotations

import shutil
import threading
from contextlib import contextmanager

from flask import Flask
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
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
