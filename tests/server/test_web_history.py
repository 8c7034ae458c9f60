"""The web chart's history is recorded by the server whenever the cluster changes, with no
browser open: a real ``ApiServer`` (worker, change feed, web routes mounted) in this process,
objects created over HTTP, and the summary fetched once at the end."""

from __future__ import annotations

import http.client
import json

import pytest
import yaml

from gpusched.server.app import ApiServer
from gpusched.server.web import mount
from tests.cluster.builders import pool
from tests.server.conftest import wait_for
from tests.conftest import CEILING_S

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path):
    app = ApiServer(str(tmp_path / "cluster.db"), virtual_clock=True)
    web = mount(app)
    app.start()
    yield app, web
    app.stop()
    web.recorder.close()


def call(app: ApiServer, method: str, path: str, body: object = None) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=CEILING_S)
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        reply = json.loads(response.read())
    finally:
        conn.close()
    assert 200 <= response.status < 300, reply
    return reply


def make_pod(name: str, gpus: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}


def lease(name: str) -> dict:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
            "spec": {"holderIdentity": name}}


def test_history_grows_with_the_cluster_without_summary_requests(server):
    app, web = server
    wait_for(web.history.points, "the point recorded at start")
    call(app, "POST", "/apis/gpusched.io/v1alpha1/nodepools", yaml.safe_load(pool("a", gpus=4)))
    wait_for(lambda: len(web.history.points()) > 1, "a point after the node pool")
    for i, expected in enumerate((0.25, 0.5, 0.75)):
        count = len(web.history.points())
        written = call(app, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                       lease(f"l{i}"))
        rv = int(written["metadata"]["resourceVersion"])
        wait_for(lambda: web.recorder.cursor >= rv, "the recorder to handle the Lease")
        call(app, "POST", "/api/v1/namespaces/default/pods", make_pod(f"p{i}", gpus=1))
        wait_for(lambda: web.history.points()[-1]["allocation"] == expected,
                 f"a point with allocation {expected}")
        assert len(web.history.points()) == count + 1      # the Lease alone recorded nothing

    data = call(app, "GET", "/gpusched/v1/summary")             # the only summary request
    allocations = [point["allocation"] for point in data["history"]]
    assert allocations[-3:] == [0.25, 0.5, 0.75]
    assert allocations[0] == 0.0 and len(allocations) >= 5
    clocks = [point["clock"] for point in data["history"]]
    assert clocks == sorted(clocks)
    assert data["allocation"] == 0.75
