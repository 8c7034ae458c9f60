"""The web page in headless Chromium (Playwright driving the system browser): it loads, shows the
lab cluster, and updates live when a pod is applied; a screenshot goes to test-artifacts/web.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import CEILING_MS, REPO_ROOT

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]

pytestmark = pytest.mark.slow
WAIT_MS = CEILING_MS            # a ceiling (tests/conftest.py), for expect and page actions alike


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium per test module (starting one takes seconds on a loaded machine);
    each test gets a fresh context (no cookies, storage or cache from another test)."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        sync_api.expect.set_options(timeout=WAIT_MS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        yield page
    finally:
        context.close()


def test_page_shows_the_lab_cluster_and_updates_live(lab_serve, page):
    served = lab_serve
    page.goto(served.url + "/")
    expect = pytest.importorskip("playwright.sync_api").expect
    # each pool/model group loads its nodes with a request of its own: wait for every group
    cells = page.locator('.cell[data-node="gpu-node-1"]')
    expect(cells).to_have_count(8, timeout=WAIT_MS)
    expect(page.locator('.cell[data-node="gpu-node-2"]')).to_have_count(4, timeout=WAIT_MS)
    assert page.locator(".cell.occupied").count() == 0
    title = cells.first.get_attribute("title")
    assert title == "GPU 0 whole GPU: free"
    page.wait_for_selector("#live.on")                     # watch streams are open

    served.create_pod("train", gpus=2)                      # no reload from here on
    page.wait_for_selector('.cell.occupied[data-pod="default/train"]', timeout=WAIT_MS)
    held = page.locator('.cell.occupied[data-pod="default/train"]')
    expect(held).to_have_count(2, timeout=WAIT_MS)
    assert "default/train (priority 0)" in held.first.get_attribute("title")
    page.wait_for_function("document.querySelector('#events tbody').textContent"
                           ".includes('Successfully assigned default/train')")
    assert page.locator('#chart polyline[data-series="allocation"]').count() == 1

    page.select_option("#colour-by", "priority")
    assert "priority 0" in page.locator("#legend").inner_text()
    artifacts = REPO_ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    page.screenshot(path=str(artifacts / "web.png"), full_page=True)
    assert (artifacts / "web.png").stat().st_size > 0
