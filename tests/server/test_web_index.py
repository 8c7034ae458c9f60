"""The web page's index and queries over a real embedded cluster (no HTTP): cells and holders
agree with the scheduler's own snapshot on whole GPUs, MIG instances, time-slicing replicas and
fractional shares; filters narrow groups and node pages; bad query values are one 400 line;
the index is reused while nothing changes; the chart's history stays bounded."""

from __future__ import annotations

import json

import pytest

from gpusched.cluster.kubelet import admission as kubelet
from gpusched.cluster.cluster import Cluster
from gpusched.cluster.scheduling.cache import build_snapshot
from gpusched.errors import GpuschedError
from gpusched.objects.pod import pod_info
from gpusched.server.http import Request
from gpusched.server.web.index import WebIndex, pod_entry
from gpusched.server.web.routes import WebRoutes
from gpusched.server.web.summary import History, gpu_usage
from tests.cluster.builders import apply, join, pod, pool
from tests.metrics.conftest import TIME_SLICING

MIXED = """
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: mig}
spec: {names: [mig-node], gpu: {model: A100-40GB, count: 1}, cpu: "16", memory: 64Gi,
       migConfig: all-balanced, migStrategy: mixed}
---
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: t4}
spec: {names: [t4-node], gpu: {model: T4, count: 1}, cpu: "16", memory: 64Gi,
       labels: {nvidia.com/device-plugin.config: t4}}
"""


def on(node: str) -> dict:
    return {"nodeSelector": {"kubernetes.io/hostname": node}}


def share(name: str, milli: int, namespace: str, node: str) -> str:
    return pod(name, gpus=1, namespace=namespace, **on(node)).replace(
        f"name: {name}\n", f"name: {name}\n  annotations: {{gpusched.io/gpu-milli: '{milli}'}}\n", 1)


def mig(name: str, profile: str) -> str:
    return pod(name).replace("image: busybox", "image: busybox\n    resources: {limits: "
                             f"{{nvidia.com/mig-{profile}: 1}}}}")


@pytest.fixture
def cluster(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as c:
        apply(c, join(MIXED, TIME_SLICING, pool("a100", count=2, gpus=4),
                      "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n",
                      pod("whole", gpus=2, **on("a100-1")), share("frac-1", 300, "default", "a100-1"),
                      pod("two", gpus=1, namespace="team-b", **on("a100-2")),
                      share("frac-2", 200, "team-b", "a100-2"), share("frac-3", 250, "team-b", "a100-2"),
                      mig("m", "3g.20gb"), pod("ts-1", gpus=1, **on("t4-node")),
                      pod("huge", gpus=16, namespace="team-b")))
        yield c


def test_cells_agree_with_the_scheduler_snapshot(cluster):
    index = cluster.read(WebIndex().index)
    snapshot, _ = cluster.read(build_snapshot)
    uid_to_key = {p["metadata"]["uid"]: f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                  for p in cluster.get("pods", all_namespaces=True)}
    assert {n.name for n in index.nodes} == {"a100-1", "a100-2", "mig-node", "t4-node"}
    for node in index.nodes:
        rows = snapshot.devices[snapshot.index[node.name]].rows()
        expected = [(r.gpu_index, r.device_id, r.resource, r.profile, r.replica, r.milli,
                     uid_to_key.get(r.holder, "")) for r in rows]
        got = [(c["gpu"], c["device"], c["resource"], c["profile"], c["replica"], c["milli"],
                c.get("pod", "")) for c in node.cells]
        assert got == expected, node.name
        assert list(node.usage) == pytest.approx(gpu_usage(rows))
    held = {c.get("pod") for n in index.nodes for c in n.cells} - {None}
    assert held == {"default/whole", "team-b/two", "default/frac-1", "team-b/frac-2",
                    "team-b/frac-3", "default/m", "default/ts-1"}


def test_index_is_reused_until_something_changes(cluster):
    web_index = WebIndex()
    first = cluster.read(web_index.index)
    assert cluster.read(web_index.index) is first
    apply(cluster, pod("later", gpus=1))
    second = cluster.read(web_index.index)
    assert second is not first and int(second.resource_version) > int(first.resource_version)
    unchanged = {p.key: p for p in first.pods}
    assert any(p is unchanged.get(p.key) for p in second.pods)   # entries of unchanged pods kept


@pytest.fixture
def web(cluster):
    return WebRoutes(cluster.read, lambda fn: fn(cluster))


def get(web: WebRoutes, path: str, **query: str) -> tuple[int, dict]:
    response = web.handle(Request("GET", path, query, {}))
    return response.status, json.loads(response.body)


FILTER_CASES = [
    ({}, {"a100/A100-40GB": 2, "mig/A100-40GB": 1, "t4/T4": 1}, 1),
    ({"namespace": "team-b"}, {"a100/A100-40GB": 1}, 1),
    ({"model": "T4"}, {"t4/T4": 1}, 1),             # pending pods are on no node: kept
    ({"node": "MIG"}, {"mig/A100-40GB": 1}, 1),
    ({"q": "frac-2"}, {"a100/A100-40GB": 1}, 0),
    ({"q": "t4"}, {"t4/T4": 1}, 0),
    ({"phase": "Running", "namespace": "default", "model": "A100-40GB"},
     {"a100/A100-40GB": 1, "mig/A100-40GB": 1}, 0),
    ({"namespace": "nobody"}, {}, 0),
]


@pytest.mark.parametrize("query,matching,pending", FILTER_CASES,
                         ids=["none", "namespace", "model", "node-part", "search-pod",
                              "search-node", "combined", "no-match"])
def test_filters_narrow_groups_and_pages(web, query, matching, pending):
    status, data = get(web, "/gpusched/v1/summary", **query)
    assert status == 200
    assert {g["id"]: g["matching"] for g in data["groups"] if g["matching"]} == matching
    assert data["totals"]["matching"] == sum(matching.values())
    assert data["pendingTotal"] == pending
    for group, count in matching.items():
        status, page = get(web, "/gpusched/v1/summary/nodes", group=group, **query)
        assert status == 200 and page["total"] == count == len(page["nodes"])


def test_nodes_page_offset_and_limit(web):
    _, page = get(web, "/gpusched/v1/summary/nodes", group="a100/A100-40GB", offset="1", limit="1")
    assert page["total"] == 2 and [n["name"] for n in page["nodes"]] == ["a100-2"]


BAD_QUERIES = [
    ("/gpusched/v1/summary/nodes", {"group": "a100/A100-40GB", "limit": "201"}, 400,
     'query parameter limit: "201" is not an integer from 1 to 200'),
    ("/gpusched/v1/summary/nodes", {"group": "a100/A100-40GB", "offset": "-1"}, 400,
     'query parameter offset: "-1" is not an integer from 0 to 1,000,000'),
    ("/gpusched/v1/summary/nodes", {"group": "a100/A100-40GB", "limit": "ten"}, 400,
     'query parameter limit: "ten" is not an integer from 1 to 200'),
    ("/gpusched/v1/summary/nodes", {}, 400,
     "query parameter group: required (a group id from the summary)"),
    ("/gpusched/v1/summary/nodes", {"group": "<b>x</b>"}, 404, 'groups "<b>x</b>" not found'),
    ("/gpusched/v1/summary", {"q": "x" * 254}, 400,
     "query parameter q: longer than 253 characters"),
    ("/gpusched/v1/summary/nodes", {"group": "g" * 4097}, 400,
     "query parameter group: longer than 4,096 characters"),
]


@pytest.mark.parametrize("path,query,code,message", BAD_QUERIES,
                         ids=["limit-too-big", "offset-negative", "limit-not-a-number",
                              "no-group", "unknown-group", "search-too-long", "group-too-long"])
def test_bad_query_values_are_one_line(web, path, query, code, message):
    status, body = get(web, path, **query)
    assert (status, body["kind"], body["code"], body["message"]) == (code, "Status", code, message)


def test_history_is_bounded_and_keeps_the_time_axis():
    history = History(points=8)
    for rv in range(1, 101):
        points = history.record({"resourceVersion": str(rv), "clock": float(rv),
                                 "allocation": rv / 100, "fragmentation": 0.0})
    clocks = [p["clock"] for p in points]
    assert len(clocks) <= 8 and clocks == sorted(clocks)
    assert clocks[0] == 1.0 and clocks[-1] == 100.0            # the first and newest survive
    assert history.record({"resourceVersion": "100", "clock": 1e9, "allocation": 0,
                           "fragmentation": 0}) == points       # same resourceVersion: no point


def test_an_event_alone_renews_the_index(cluster):
    """Events change no resourceVersion; the index is keyed by the event counter too."""
    web_index = WebIndex()
    before = cluster.read(web_index.index)
    node = cluster.get("nodes", ["t4-node"])[0]
    cluster.write(lambda view: view.record_event(node, "<b>Odd</b>", "a <i>new</i> event", "Warning"),
                  settle=False)
    after = cluster.read(web_index.index)
    assert after is not before
    assert after.events[-1]["reason"] == "<b>Odd</b>" and after.events[-1]["object"] == "Node/t4-node"


def test_nodes_sort_by_group_then_name_numerically(tmp_path):
    with Cluster.open(str(tmp_path / "c.db")) as c:
        apply(c, pool("n", count=12, gpus=1))
        names = [n.name for n in c.read(WebIndex().index).nodes]
    assert names == [f"n-{i}" for i in range(1, 13)]


# ----------------------------------------------------------------------------------------------
# One parse of the assignment annotations: the page reads what the kubelet reads.

def body(annotations: dict[str, str] | None = None, *limits: dict[str, object]) -> dict:
    """A bound, running pod with these annotations and one container per ``limits``."""
    containers = [{"name": f"c{i}", "image": "busybox", "resources": {"limits": dict(amounts)}}
                  for i, amounts in enumerate(limits or ({},))]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1", "annotations": annotations or {}},
            "spec": {"nodeName": "n1", "containers": containers}, "status": {"phase": "Running"}}


def held(gpus: str | None = None, devices: str | None = None, share: str | None = None) -> dict[str, str]:
    found = {"gpusched.io/assigned-gpus": gpus, "gpusched.io/assigned-devices": devices,
             "gpusched.io/gpu-milli": share}
    return {key: value for key, value in found.items() if value is not None}


GPU = {"nvidia.com/gpu": 1}
ASSIGNMENT_CASES = [   # (pod, (device IDs, GPU indices, fractional share) the page shows)
    pytest.param(body(held("0,1", "GPU-a,GPU-b"), {"nvidia.com/gpu": 2}), (("GPU-a", "GPU-b"), (0, 1), 0),
                 id="whole-gpus"),
    pytest.param(body(held("1", "GPU-b", share="470"), GPU), (("GPU-b",), (1,), 470),
                 id="share-by-annotation"),
    pytest.param(body(held("2", "GPU-c"), {"gpusched.io/gpu-milli": 300}), (("GPU-c",), (2,), 300),
                 id="share-by-extended-resource"),
    pytest.param(body(held("2", "GPU-c"), {"gpusched.io/gpu-milli": 200}, {"gpusched.io/gpu-milli": 100}),
                 (("GPU-c",), (2,), 300), id="share-summed-over-containers"),
    pytest.param(body(held("0", "GPU-a", share="1000"), GPU), (("GPU-a",), (0,), 0),
                 id="share-of-1000-is-a-whole-gpu"),
    pytest.param(body(held("0", "GPU-a::2"), GPU), (("GPU-a::2",), (0,), 0), id="time-slicing-replica"),
    pytest.param(body(held("3", "MIG-x"), {"nvidia.com/mig-3g.20gb": 1}), (("MIG-x",), (3,), 0),
                 id="mig-instance"),
    pytest.param(body(held("0", "GPU-a::1", share="250"), GPU), (("GPU-a::1",), (0,), 250),
                 id="share-recorded-on-a-replica-id"),
    pytest.param(body(held("0", "GPU-a"), GPU), (("GPU-a",), (0,), 0), id="one-whole-gpu"),
    pytest.param(body(held(devices="GPU-a"), GPU), (("GPU-a",), (), 0), id="devices-without-indices"),
    pytest.param(body(held(gpus="0"), GPU), ((), (0,), 0), id="indices-without-devices"),
    pytest.param(body(held(" 1", "GPU-b"), GPU), (("GPU-b",), (1,), 0), id="index-with-spaces"),
    pytest.param(body(None, GPU), ((), (), 0), id="no-record"),
    pytest.param(body(held("", ""), GPU), ((), (), 0), id="empty-record"),
    pytest.param(body(held(share="470"), GPU), ((), (), 0), id="share-not-yet-bound"),
    pytest.param(body(held("0,x", "GPU-a"), GPU), ((), (), 0), id="malformed-gpu-index"),
    pytest.param(body(held("0;1", "GPU-a,GPU-b"), GPU), ((), (), 0), id="malformed-separator"),
    pytest.param(body(held("0", "GPU-a", share="abc"), GPU), ((), (), 0), id="malformed-share"),
    pytest.param(body(held("0", "GPU-a", share="1500"), GPU), ((), (), 0), id="share-out-of-range"),
    pytest.param(body(held("0", "GPU-a"), {"gpusched.io/gpu-milli": "x"}), ((), (), 0),
                 id="malformed-share-resource"),
]


def kubelet_reads(pod: dict) -> tuple[tuple[str, ...], tuple[int, ...], int]:
    """What the kubelet holds for ``pod``: ``cluster.kubelet.admission`` parses it with ``pod_info`` (a pod
    it cannot parse is left alone, holding nothing) and reads its record with ``_assignment``
    (``objects.assignment.pod_assignment``; a malformed record is devices gone)."""
    try:
        info = pod_info(pod)
    except GpuschedError:
        return (), (), 0
    found = kubelet._assignment(pod, info)
    if found is None:
        return (), (), 0
    return found.device_ids, found.gpu_indices, found.milli if found.resource == "gpusched.io/gpu-milli" else 0


@pytest.mark.parametrize("pod_body,expected", ASSIGNMENT_CASES)
def test_the_page_and_the_kubelet_read_the_same_assignment(pod_body, expected):
    entry = pod_entry(pod_body)
    assert (entry.devices, entry.gpus, entry.milli) == kubelet_reads(pod_body) == expected
