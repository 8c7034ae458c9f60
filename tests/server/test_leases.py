"""Leases (coordination.k8s.io/v1) in ``gpusched serve``: validation, discovery, OpenAPI, CRUD
with resourceVersion conflicts, kubectl's NAME/HOLDER/AGE table, and Lease writes committing
without settling controllers and the scheduler."""

from __future__ import annotations

import copy

import pytest

from gpusched.cluster.apiserver import api_ops
from gpusched.errors import InvalidError
from gpusched.objects.kinds import KINDS, resolve_kind
from gpusched.objects.validation import validate_object
from gpusched.server.worker import ClusterWorker

pytestmark = pytest.mark.slow

GROUP = "/apis/coordination.k8s.io/v1"
LEASES = f"{GROUP}/namespaces/default/leases"
STAMP = "2026-01-01T00:00:00.000000Z"


def make_lease(name: str = "sched", holder: str = "a", **spec: object) -> dict:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": STAMP,
                     "renewTime": STAMP, "leaseTransitions": 0, **spec}}


# ---- validation --------------------------------------------------------------------------------

INVALID = [
    ({"leaseDurationSeconds": 0}, "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
    ({"leaseTransitions": -1},
     "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"),
    ({"renewTime": "yesterday"}, 'spec.renewTime: Invalid value: "yesterday": must be an RFC 3339'),
    ({"holderIdentity": 7}, "spec.holderIdentity: Invalid value: 7: must be a string"),
]


@pytest.mark.parametrize("spec,message", INVALID,
                         ids=["zero-duration", "negative-transitions", "bad-time", "holder-type"])
def test_invalid_leases_are_refused_with_the_field(spec, message):
    with pytest.raises(InvalidError) as caught:
        validate_object(make_lease(**spec))
    assert message in str(caught.value)


@pytest.mark.parametrize("spec", [
    {}, {"holderIdentity": ""}, {"renewTime": "2026-01-01T00:00:00.123456+00:00"},
    {"acquireTime": "2026-01-01T00:00:00Z"}],
    ids=["full", "released", "python-client-offset", "seconds-only"])
def test_valid_leases_default_their_namespace(spec):
    assert validate_object(make_lease(**spec))["metadata"]["namespace"] == "default"


def test_kind_table_entry():
    assert resolve_kind("leases") is KINDS["Lease"]
    assert resolve_kind("leases.coordination.k8s.io").namespaced


# ---- settling ----------------------------------------------------------------------------------

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def test_lease_writes_commit_without_settling(tmp_path):
    worker = ClusterWorker(str(tmp_path / "cluster.db"), virtual_clock=True).start()
    try:
        def create(body: dict, settle: bool) -> dict:
            info = KINDS[body["kind"]]
            return worker.write(lambda view: api_ops.create(view, info, "default", body), settle)

        def node_name() -> str:
            return worker.read(lambda view: view.get("Pod", "p", "default"))["spec"].get("nodeName", "")

        create(NODE, settle=True)
        create(POD, settle=False)                     # a pending pod nobody has scheduled yet
        lease = KINDS["Lease"]
        create(make_lease(), settle=api_ops.needs_settle(lease))
        assert node_name() == ""                      # the Lease write did not run the scheduler
        assert worker.read(lambda view: view.get("Lease", "sched", "default"))["spec"]["holderIdentity"] == "a"
        create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
               settle=api_ops.needs_settle(KINDS["ConfigMap"]))
        assert node_name() == "n1"                    # any other write settles
    finally:
        worker.stop()


# ---- the API -----------------------------------------------------------------------------------

def test_discovery_and_openapi_list_leases(serve):
    resources = serve.json(GROUP)["resources"]
    assert [(r["name"], r["kind"], r["namespaced"]) for r in resources] == [("leases", "Lease", True)]
    groups = {g["name"]: g for g in serve.json("/apis")["groups"]}
    assert groups["coordination.k8s.io"]["preferredVersion"]["groupVersion"] == "coordination.k8s.io/v1"
    status, aggregated = serve.request("GET", "/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert status == 200
    (entry,) = [i for i in aggregated["items"] if i["metadata"].get("name") == "coordination.k8s.io"]
    assert entry["versions"][0]["resources"][0]["resource"] == "leases"
    paths = serve.json("/openapi/v3")["paths"]
    document = serve.json(paths["apis/coordination.k8s.io/v1"]["serverRelativeURL"])
    assert "io.k8s.api.coordination.v1.Lease" in document["components"]["schemas"]
    assert "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}" in document["paths"]


def test_lease_crud_with_conflicts(serve):
    created = serve.json(LEASES, make_lease())
    assert created["spec"]["holderIdentity"] == "a" and created["metadata"]["resourceVersion"]
    status, body = serve.request("POST", LEASES, make_lease())
    assert (status, body["reason"]) == (409, "AlreadyExists")

    first = copy.deepcopy(created)
    first["spec"].update(holderIdentity="b", leaseTransitions=1)
    status, renewed = serve.request("PUT", f"{LEASES}/sched", first)
    assert status == 200 and renewed["spec"]["holderIdentity"] == "b"
    rival = copy.deepcopy(created)                    # read before b's write: stale
    rival["spec"]["holderIdentity"] = "c"
    status, body = serve.request("PUT", f"{LEASES}/sched", rival)
    assert (status, body["reason"]) == (409, "Conflict")
    assert body["message"] == ('Operation cannot be fulfilled on leases.coordination.k8s.io "sched": '
                               "the object has been modified; please apply your changes to the "
                               "latest version and try again")
    assert serve.json(f"{LEASES}/sched")["spec"]["holderIdentity"] == "b"

    status, body = serve.request("PUT", f"{LEASES}/sched", dict(renewed, spec={"leaseDurationSeconds": -1}))
    assert (status, body["reason"]) == (422, "Invalid")
    status, patched = serve.request("PATCH", f"{LEASES}/sched", {"spec": {"holderIdentity": ""}},
                                    headers={"Content-Type": "application/merge-patch+json"})
    assert status == 200 and patched["spec"]["holderIdentity"] == ""
    assert serve.request("DELETE", f"{LEASES}/sched")[0] == 200
    status, body = serve.request("GET", f"{LEASES}/sched")
    assert (status, body["message"]) == (404, 'leases.coordination.k8s.io "sched" not found')


def test_kubectl_get_leases_and_describe_node(serve):
    serve.json(LEASES, make_lease("gpusched", holder="host_42"))
    serve.json(LEASES, make_lease("released", holder=""))
    out = serve.kubectl("get", "leases").stdout.splitlines()
    assert out[0].split() == ["NAME", "HOLDER", "AGE"]
    assert out[1].split()[:2] == ["gpusched", "host_42"]
    assert out[2].split()[0] == "released" and len(out[2].split()) == 2   # blank holder
    serve.json("/api/v1/nodes", NODE)
    # kubectl describe node GETs kube-node-lease/leases/<node>: gpusched serves no node leases,
    # and the 404 is what kubectl expects then.
    described = serve.kubectl("describe", "node", "n1").stdout
    assert "Name:               n1" in described
    assert 'Failed to get lease: leases.coordination.k8s.io "n1" not found' in described
