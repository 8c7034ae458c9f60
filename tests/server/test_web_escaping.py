"""The web page shows user-controlled strings as text: an Event whose reason, message and
involved object's name carry markup is rendered literally in headless Chromium and nothing in it
executes (no element is created from it, its onerror never runs)."""

from __future__ import annotations

import pytest

from tests.server.test_web_browser import chromium, page  # noqa: F401 (the Chromium fixtures)

pytestmark = pytest.mark.slow
MARKUP = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def test_event_markup_is_shown_as_text_and_never_runs(serve, page):  # noqa: F811
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "evil.1", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "name": "p<b>x</b>", "namespace": "default"},
             "reason": "<i>Evil</i>", "message": MARKUP, "type": "Warning"}
    status, _ = serve.request("POST", "/api/v1/namespaces/default/events", event)
    assert status == 201
    page.goto(serve.url + "/")
    page.wait_for_function("document.querySelector('#events tbody') && "
                           "document.querySelector('#events tbody').textContent.includes('onerror')")
    text = page.locator("#events tbody").inner_text()
    assert MARKUP in text and "<i>Evil</i>" in text and "p<b>x</b>" in text
    assert page.locator("#events tbody img, #events tbody script, #events tbody i, #events tbody b").count() == 0
    assert page.evaluate("window.__pwned") is None
