"""The web page on a test-sized but realistic cluster, in headless Chromium (Playwright driving
the system browser): 73 nodes in three NodePools plus a hand-made node whose GPU-model
annotation carries markup, about 300 pods in four namespaces over three clock steps, a few
pending. Node groups open and close, a group longer than a page loads its next page when its
end scrolls into view, the filters and the search box narrow the nodes to what the summary
endpoint says matches, the legend lists the namespaces in Okabe-Ito colours, and the chart has
time and percentage ticks and a hover read-out. Markup is shown as text and never runs.

Every check waits for the state it names (Playwright's ``expect``, the suite's ceiling); after
a filter changes, for the page's own signal that the filtered view is complete (``<body
data-filtered>``, set by app.js) before counting nodes. Screenshots go to ``test-artifacts/``
(ignored by git)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.conftest import CEILING_MS, REPO_ROOT, gpusched_executable, run_process
from tests.server.conftest import Served, start_serve, stops_cleanly
from tests.server.test_web_browser import chromium, page  # noqa: F401 (the Chromium fixtures)

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.slow
WAIT_MS = CEILING_MS
MARKUP = '<img src=x onerror="window.__pwned=1">'
POOLS = (("a100", "A100-40GB", 8, 55), ("h100", "H100-80GB", 8, 10), ("t4", "T4", 4, 8))
NAMESPACES = ("team-a", "team-b", "team-c", "team-d")
OKABE_ITO = {"rgb(230, 159, 0)", "rgb(86, 180, 233)", "rgb(0, 158, 115)", "rgb(240, 228, 66)",
             "rgb(0, 114, 178)", "rgb(213, 94, 0)", "rgb(204, 121, 167)", "rgb(0, 0, 0)"}
ARTIFACTS = REPO_ROOT / "test-artifacts"


def manifest(items: list[dict]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def cluster_objects() -> list[dict]:
    objects: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                           for ns in NAMESPACES]
    for name, model, gpus, count in POOLS:
        objects.append({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
                        "metadata": {"name": name},
                        "spec": {"count": count, "namePrefix": name, "gpu": {"model": model, "count": gpus},
                                 "cpu": "64", "memory": "512Gi"}})
    objects.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": "odd-node", "annotations": {"gpusched.io/gpu-model": MARKUP}}})
    return objects


def pods(start: int, count: int) -> list[dict]:
    out = []
    for i in range(start, start + count):
        gpus = 16 if i % 97 == 0 else 1 + (i % 3 == 0)            # every 97th cannot fit
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"p-{i:04d}", "namespace": NAMESPACES[i % 4]},
                    "spec": {"containers": [{"name": "c", "image": "busybox",
                                             "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}})
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Served:
    tmp = tmp_path_factory.mktemp("web-scale")
    served = start_serve(tmp, "--virtual-clock")
    try:
        steps = [cluster_objects() + pods(0, 100), pods(100, 100), pods(200, 100)]
        for i, items in enumerate(steps):
            path = tmp / f"step-{i}.json"
            path.write_text(manifest(items))
            gpusched(served, "apply", "--atomic", "-f", str(path))   # one settle per step
            gpusched(served, "advance", "10m")
        yield served
    finally:
        stops_cleanly(served.process)


def gpusched(served: Served, *args: str) -> None:
    """The CLI on the served state file, under the suite's ceiling."""
    done = run_process([gpusched_executable(), "--state", str(served.state), *args])
    assert done.returncode == 0, done.stderr


def api(served: Served, path: str, **query: str) -> dict:
    return served.json(f"/gpusched/v1/{path}" + (f"?{urlencode(query)}" if query else ""))


def group(page, group_id: str):  # noqa: F811
    return page.locator(f"details.group[data-group={json.dumps(group_id)}]")


def shot(page, name: str) -> None:  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    assert (ARTIFACTS / name).stat().st_size > 0


def wait_filtered(page, **filters: str) -> None:  # noqa: F811
    """Wait until the page says the view for ``filters`` is complete: ``<body data-filtered>``
    holds them as the page sends them to the server (URLSearchParams, in the page's order:
    namespace, node, model, phase, q). Past the ceiling, Playwright names the value seen."""
    wanted = page.evaluate("f => { const q = new URLSearchParams(f).toString(); return q ? `?${q}` : ''; }",
                           filters)
    expect(page.locator("body")).to_have_attribute("data-filtered", wanted, timeout=WAIT_MS)


def open_page(page, served: Served) -> None:  # noqa: F811
    page.goto(served.url + "/")
    wait_filtered(page)
    expect(page.locator("details.group")).to_have_count(4, timeout=WAIT_MS)
    expect(group(page, "t4/T4").locator(".node")).to_have_count(8, timeout=WAIT_MS)


def test_groups_collapse_expand_and_load_lazily(cluster, page):  # noqa: F811
    open_page(page, cluster)
    a100 = group(page, "a100/A100-40GB")
    expect(a100.locator(".node")).to_have_count(50, timeout=WAIT_MS)       # one page of 55
    expect(a100.locator("button.more")).to_have_text("more nodes (50 of 55 shown)")
    a100.locator("button.more").scroll_into_view_if_needed()               # lazy: on scroll
    expect(a100.locator(".node")).to_have_count(55, timeout=WAIT_MS)
    expect(a100.locator("button.more")).to_be_hidden()

    h100 = group(page, "h100/H100-80GB")
    expect(h100.locator(".node")).to_have_count(10, timeout=WAIT_MS)
    h100.locator("summary").click()
    expect(h100).not_to_have_attribute("open", "")
    expect(h100.locator(".node").first).to_be_hidden()
    h100.locator("summary").click()
    expect(h100).to_have_attribute("open", "")
    expect(h100.locator(".node")).to_have_count(10, timeout=WAIT_MS)
    expect(h100.locator(".node").first).to_be_visible()
    summary = h100.locator("summary")
    expect(summary).to_contain_text("10 nodes · 80 GPUs")
    shot(page, "web-scale-groups.png")


FILTERS = [
    ("namespace", "#f-namespace", "team-b", {"namespace": "team-b"}),
    ("model", "#f-model", "T4", {"model": "T4"}),
    ("phase-pending", "#f-phase", "Pending", {"phase": "Pending"}),
]


@pytest.mark.parametrize("name,selector,value,query", FILTERS, ids=[f[0] for f in FILTERS])
def test_filters_narrow_the_visible_nodes(cluster, page, name, selector, value, query):  # noqa: F811
    open_page(page, cluster)
    expected = {g["id"]: g["matching"] for g in api(cluster, "summary", **query)["groups"]}
    page.select_option(selector, value)
    wait_filtered(page, **query)
    for group_id, matching in expected.items():
        if matching:
            expect(group(page, group_id)).to_be_visible(timeout=WAIT_MS)
            expect(group(page, group_id).locator(".node")).to_have_count(min(matching, 50),
                                                                         timeout=WAIT_MS)
            expect(group(page, group_id).locator("summary")).to_contain_text(f"{matching} of ")
        else:
            expect(group(page, group_id)).to_be_hidden(timeout=WAIT_MS)
    if value == "Pending":          # pending pods are on no node; the table lists them
        expect(page.locator("#pending tbody tr")).to_have_count(
            api(cluster, "summary")["pendingTotal"], timeout=WAIT_MS)
    shot(page, f"web-scale-filter-{name}.png")


def test_search_and_node_filter(cluster, page):  # noqa: F811
    open_page(page, cluster)
    target = api(cluster, "summary/nodes", group="h100/H100-80GB", q="team-c/")["nodes"][0]
    held = next(c["pod"] for c in target["cells"] if c.get("namespace") == "team-c")
    page.fill("#search", held)
    wait_filtered(page, q=held)
    expect(page.locator(".node")).to_have_count(1, timeout=WAIT_MS)
    node = page.locator(f'.node[data-node="{target["name"]}"]')
    expect(node.locator(f'.cell[data-pod="{held}"]').first).to_be_visible()
    expect(node.locator(f'.cell.dim[data-pod="{held}"]')).to_have_count(0)
    expect(node.locator(".cell.occupied.dim")).to_have_count(
        sum(1 for c in target["cells"] if c.get("pod") and c["pod"] != held))
    page.click("#clear-filters")
    wait_filtered(page)
    expect(group(page, "t4/T4").locator(".node")).to_have_count(8, timeout=WAIT_MS)

    page.fill("#f-node", "h100-1")                   # h100-1 and h100-10
    wait_filtered(page, node="h100-1")
    expect(page.locator(".node")).to_have_count(2, timeout=WAIT_MS)
    expect(page.locator('.node[data-node="h100-10"]')).to_be_visible()
    page.fill("#f-node", "")
    page.fill("#search", MARKUP)                     # the odd node's model: matched, not run
    wait_filtered(page, q=MARKUP)
    expect(page.locator(".node")).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator('.node[data-node="odd-node"]')).to_contain_text(MARKUP)
    assert page.evaluate("window.__pwned") is None
    shot(page, "web-scale-search.png")


def test_legend_chart_ticks_hover_and_markup(cluster, page):  # noqa: F811
    open_page(page, cluster)
    data = api(cluster, "summary")
    legend = page.locator("#legend span")
    expect(legend).to_have_text(data["namespaces"], timeout=WAIT_MS)
    assert set(NAMESPACES) <= set(data["namespaces"])
    colours = page.eval_on_selector_all(       # one evaluation: a re-render cannot interleave
        "#legend span", "spans => spans.map(e => getComputedStyle(e, '::before').backgroundColor)")
    assert len(set(colours)) == len(colours) and set(colours) <= OKABE_ITO

    expect(page.locator("#chart .y-tick")).to_have_count(5, timeout=WAIT_MS)
    expect(page.locator("#chart .x-tick").nth(1)).to_be_attached(timeout=WAIT_MS)
    clocks = [p["clock"] for p in data["history"]]
    assert clocks[-1] - clocks[0] >= 1200                 # three clock steps 10 minutes apart
    overlay = page.locator("#chart .overlay")
    overlay.scroll_into_view_if_needed()
    box = overlay.bounding_box()
    overlay.hover(position={"x": box["width"] - 2, "y": box["height"] / 2})   # the newest point
    tip = page.locator("#chart-tip")
    expect(tip).to_be_visible(timeout=WAIT_MS)
    expect(tip).to_contain_text("allocation")
    expect(tip).to_contain_text(f"allocation {100 * data['history'][-1]['allocation']:.1f}%")
    expect(page.locator("#chart .guide")).to_have_attribute("visibility", "visible")
    page.locator("#chart-section").screenshot(path=str(_artifact("web-scale-chart-hover.png")))

    odd = group(page, f"(no pool)/{MARKUP}")
    expect(odd.locator("summary")).to_contain_text(MARKUP)
    expect(page.locator("#f-model option", has_text=MARKUP)).to_have_count(1)
    assert page.locator("#groups img, #f-model img").count() == 0
    assert page.evaluate("window.__pwned") is None
    shot(page, "web-scale.png")


def _artifact(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


def test_watches_start_at_the_summary_version(cluster, page):  # noqa: F811
    """No watch asks for an initial list of every pod (at 20,000 pods that was the page's
    slowest part): each starts at the resourceVersion of the summary it followed."""
    watches: list[str] = []
    page.on("request", lambda request: watches.append(request.url) if "watch=true" in request.url else None)
    open_page(page, cluster)
    expect(page.locator("#live.on")).to_be_visible(timeout=WAIT_MS)
    version = page.locator("body").get_attribute("data-resource-version")
    assert len(watches) >= 3 and version
    assert all(f"resourceVersion={version}" in url for url in watches[:3]), watches
