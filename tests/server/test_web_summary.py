"""The web page's data and routes over a real embedded cluster (no HTTP): GPU cells with
holders, allocation and fragmentation arithmetic, pending explanations, static files, read-only."""

from __future__ import annotations

import json

import pytest

from gpusched.cluster.cluster import Cluster
from gpusched.devices.node import DeviceRow
from gpusched.server.http import Request
from gpusched.server.web.routes import WebRoutes
from gpusched.server.web.summary import fragmentation, gpu_usage
from tests.cluster.builders import apply, join, pod, pool


def row(gpu: int, holder: str = "", profile: str = "", replica: int = -1, milli: int = 0,
        resource: str = "nvidia.com/gpu") -> DeviceRow:
    return DeviceRow(gpu, f"dev-{gpu}-{profile}-{replica}", resource, profile, replica, holder, milli)


USAGE_CASES = [
    ([row(0, "a"), row(1)], [1.0, 0.0]),
    ([row(0, "a", replica=0), row(0, replica=1), row(0, replica=2), row(0, replica=3)], [0.25]),
    ([row(0, "a", profile="3g.20gb"), row(0, profile="4g.20gb")], [3 / 7]),
    ([row(0, "a", milli=300, resource="gpusched.io/gpu-milli"),
      row(0, "b", milli=200, resource="gpusched.io/gpu-milli")], [0.5]),
]


@pytest.mark.parametrize("rows,expected", USAGE_CASES, ids=["whole", "replicas", "mig", "fractional"])
def test_gpu_usage(rows, expected):
    assert gpu_usage(rows) == pytest.approx(expected)


@pytest.mark.parametrize("usage,expected", [
    ([1.0, 0.5, 0.0, 0.0], 0.2), ([1.0, 1.0], 0.0), ([0.0, 0.0], 0.0), ([0.25], 1.0)],
    ids=["docstring-example", "full", "empty", "all-partial"])
def test_fragmentation(usage, expected):
    assert fragmentation(usage) == pytest.approx(expected)


@pytest.fixture
def cluster(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as c:
        apply(c, join(pool("a", count=1, gpus=4), pod("train", gpus=2, namespace="default"),
                      pod("huge", gpus=8)))
        yield c


@pytest.fixture
def web(cluster):
    return WebRoutes(lambda fn: fn(cluster.view()), lambda fn: fn(cluster))


def get(web: WebRoutes, path: str, method: str = "GET"):
    return web.handle(Request(method, path, {}, {}))


def get_json(web: WebRoutes, path: str, **query: str) -> dict:
    response = web.handle(Request("GET", path, query, {}))
    assert response.status == 200, response.body
    return json.loads(response.body)


def test_summary_groups_allocation_pending_and_history(web):
    data = get_json(web, "/gpusched/v1/summary")
    (group,) = data["groups"]
    assert (group["id"], group["pool"], group["model"]) == ("a/A100-40GB", "a", "A100-40GB")
    assert (group["nodes"], group["gpus"], group["used"], group["matching"]) == (1, 4, 2.0, 1)
    assert group["namespaces"] == {"default": {"Running": 1}}
    assert data["totals"] == {"nodes": 1, "gpus": 4, "pods": 2, "matching": 1, "pending": 1}
    assert data["allocation"] == 0.5 and data["fragmentation"] == 0.0
    (pending,) = data["pending"]
    assert pending["pod"] == "default/huge" and data["pendingTotal"] == 1
    assert pending["message"].startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert data["namespaces"] == ["default"] and data["models"] == ["A100-40GB"]
    assert "nodes" not in data                            # cells come one group page at a time
    assert len(data["history"]) == 1
    again = get_json(web, "/gpusched/v1/summary")
    assert len(again["history"]) == 1                    # same resourceVersion: no new point


def test_nodes_page_cells(web):
    page = get_json(web, "/gpusched/v1/summary/nodes", group="a/A100-40GB")
    (node,) = page["nodes"]
    assert (node["name"], node["model"], node["gpus"], page["total"]) == ("a-1", "A100-40GB", 4, 1)
    assert [c.get("pod", "") for c in node["cells"]] == ["default/train", "default/train", "", ""]
    assert node["cells"][0]["phase"] == "Running" and node["usage"] == [1.0, 1.0, 0.0, 0.0]


def test_explain_endpoint(web):
    data = json.loads(get(web, "/gpusched/v1/explain/default/huge").body)
    assert "Insufficient nvidia.com/gpu" in data["text"]
    assert json.loads(get(web, "/gpusched/v1/explain/default/nope").body)["code"] == 404


@pytest.mark.parametrize("path,method,code", [
    ("/", "GET", 200), ("/static/app.js", "GET", 200), ("/static/style.css", "GET", 200),
    ("/static/../routes.py", "GET", 404), ("/static/nope.js", "GET", 404),
    ("/gpusched/v1/summary", "POST", 405), ("/gpusched/v1/explain/default", "GET", 404),
    ("/gpusched/v1/summary/nodes", "GET", 400), ("/gpusched/v1/summary/other", "GET", 404)],
    ids=["index", "js", "css", "traversal", "missing", "post", "explain-short", "nodes-no-group",
         "unknown-sub-path"])
def test_routes(web, path, method, code):
    assert get(web, path, method).status == code


def test_index_loads_the_script():
    response = get(WebRoutes(lambda fn: None, lambda fn: None), "/")
    assert response.content_type.startswith("text/html")
    assert b'<script src="/static/app.js">' in response.body
