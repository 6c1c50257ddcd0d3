"""The dashboard in a real browser (headless Chromium): every chart renders with data, and a
verdict given on the samples page arrives on the reviews topic and in the store."""

import uuid

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from consumers.dashboard.app import create_app
from consumers.dashboard.config import DashboardConfig
from consumers.dashboard.panels import PANELS
from consumers.dashboard.reviews import ReviewPublisher
from infra.platform.topics import Topics
from tests.dashboard import history
from tests.dashboard.browser import PANEL_POINTS_JS, chrome, mark_first_hacked_sample, serving

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def page(run_source, kafka_bootstrap):
    topics = Topics(prefix=f"test-browser-{uuid.uuid4().hex[:8]}.")
    app = create_app(DashboardConfig(store="test", topics=topics, refresh_s=600), run_source,
                     ReviewPublisher(kafka_bootstrap, topics, run_source))
    with serving(app) as url:
        driver = chrome()
        try:
            yield driver, url
        finally:
            driver.quit()


def test_every_chart_renders_with_data(page):
    driver, url = page
    driver.get(url + "/")
    wait = WebDriverWait(driver, 60)
    for panel in PANELS:
        wait.until(lambda d, name=panel.name: d.execute_script(PANEL_POINTS_JS, f"panel-{name}") > 0,
                   f"panel {panel.name} drew no data")
    lines = driver.find_elements(By.CSS_SELECTOR, "#panel-pass_rate .scatterlayer .trace path.js-line")
    assert lines and all(line.get_attribute("d") for line in lines)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#drift-table table tr"))


def test_a_verdict_given_on_the_page_is_stored(page, run_source):
    driver, url = page
    card = mark_first_hacked_sample(driver, url, "swallowed_exception")
    rollout = card.get_attribute("data-rollout")
    assert card.find_element(By.CSS_SELECTOR, ".diff-add").text.startswith("+")
    stored = run_source.store.query("SELECT verdict, hack_class FROM reviews FINAL WHERE rollout_id = {r:String}",
                                    {"r": rollout}).rows
    assert ("hack", "swallowed_exception") in stored


def test_the_charts_follow_the_store_while_the_run_goes_on(run_source):
    app = create_app(DashboardConfig(store="test", refresh_s=1), run_source)
    newer = [{**row, "event_id": f"{row['event_id']}-v9", "rollout_id": f"{row['rollout_id']}-v9",
              "policy_version": 9} for row in history.feedback()[:4]]
    with serving(app) as url:
        driver = chrome()
        try:
            driver.get(url + "/")
            wait = WebDriverWait(driver, 60)
            wait.until(lambda d: d.execute_script(PANEL_POINTS_JS, "panel-pass_rate") > 0)
            versions = driver.execute_script("return document.getElementById('panel-pass_rate').data[0].x")
            assert 9 not in versions
            run_source.insert("feedback", newer)  # what a sink writes while the page is open
            wait.until(lambda d: 9 in d.execute_script("return document.getElementById('panel-pass_rate').data[0].x"))
        finally:
            driver.quit()
