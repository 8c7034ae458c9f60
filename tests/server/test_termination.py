"""Graceful deletion through ``gpusched serve``: DeleteOptions.gracePeriodSeconds and kubectl.

kube-apiserver answers a graceful pod DELETE with the pod as it now is (deletionTimestamp set,
``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`` ``Delete`` /
``updateForGracefulDeletionAndFinalizers``); kubectl then waits for it to go. Negative periods
mean 1 (``rest.BeforeDelete``). The served clock is virtual here; the CLI advances it.
"""

from __future__ import annotations

import pytest

from tests.server.conftest import wait_for

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
PATH = "/api/v1/namespaces/default/pods/p"


def running_pod(serve) -> None:
    serve.cli("apply", "-f", "examples/cluster.yaml")
    serve.json("/api/v1/namespaces/default/pods", POD)
    wait_for(lambda: serve.pod("p")["status"].get("phase") == "Running", "p Running")


@pytest.mark.parametrize("body, query, period", [
    pytest.param(None, "", 30, id="no-options-pod-default"),
    pytest.param({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 5}, "", 5,
                 id="DeleteOptions-body"),
    pytest.param(None, "?gracePeriodSeconds=9", 9, id="query-parameter"),
    pytest.param({"gracePeriodSeconds": -4}, "", 1, id="BeforeDelete-negative-means-1"),
    pytest.param({"gracePeriodSeconds": 0}, "", None, id="zero-is-immediate"),
])
def test_delete_options(serve, body, query, period):
    running_pod(serve)
    status, reply = serve.request("DELETE", PATH + query, body)
    assert status == 200 and reply["metadata"]["name"] == "p"
    if period is None:
        assert serve.request("GET", PATH)[0] == 404
        return
    assert reply["metadata"]["deletionGracePeriodSeconds"] == period
    assert reply["metadata"]["deletionTimestamp"]
    serve.cli("advance", f"{period}s")
    wait_for(lambda: serve.request("GET", PATH)[0] == 404, "p gone after its grace period")


@pytest.mark.parametrize("raw", [b"{not json", b"[1]", b'{"gracePeriodSeconds": "soon"}',
                                 b'{"gracePeriodSeconds": 1.5}'])
def test_bad_delete_options_are_400_and_change_nothing(serve, raw):
    running_pod(serve)
    status, reply = serve.request("DELETE", PATH, raw=raw,
                                  headers={"Content-Type": "application/json"})
    assert status == 400 and reply["reason"] == "BadRequest", reply
    assert "deletionTimestamp" not in serve.pod("p")["metadata"]


def test_kubectl_delete_terminating_then_force(serve):
    running_pod(serve)
    out = serve.kubectl("delete", "pod", "p", "--wait=false").stdout
    assert out.strip() == 'pod "p" deleted'
    rows = serve.kubectl("get", "pods").stdout.splitlines()
    assert rows[1].split()[:3] == ["p", "1/1", "Terminating"]
    forced = serve.kubectl("delete", "pod", "p", "--grace-period=0", "--force")
    assert forced.stdout.strip() == 'pod "p" force deleted'
    assert forced.stderr.startswith("Warning: Immediate deletion does not wait for confirmation")
    assert serve.request("GET", PATH)[0] == 404
