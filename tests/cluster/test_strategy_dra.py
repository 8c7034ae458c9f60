"""The ``resource.k8s.io`` strategies (kubernetes ``pkg/registry/resource/*/strategy.go`` and
``validation.go``'s update rules, ``validateCELSelector``): through the embedded cluster's one
write path; a refused write stores nothing."""

from __future__ import annotations

import pytest

from gpusched.cluster.apiserver import strategy_dra
from gpusched.errors import GpuschedError
from tests.cluster.builders import apply

CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel: {expression: 'device.driver == "gpu.example.com"'}
"""


def test_a_new_claims_status_is_dropped(cluster):
    """resourceclaimStrategy.PrepareForCreate: ``claim.Status = ResourceClaimStatus{}``."""
    apply(cluster, CLAIM + "status: {reservedFor: [{resource: pods, name: p, uid: u}]}\n")
    assert "status" not in cluster.get("ResourceClaim", ["one-gpu"])[0]


@pytest.mark.parametrize("kind, text, changed, expected", [
    ("ResourceClaim", CLAIM, ("deviceClassName: gpu.example.com\n",
                              "deviceClassName: gpu.example.com\n        count: 2\n"),
     'The ResourceClaim "one-gpu" is invalid: spec: Invalid value: '),
    ("ResourceSlice", """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 0, resourceSliceCount: 1}
""", ("nodeName: node-1", "nodeName: node-2"),
     'The ResourceSlice "node-1-gpu" is invalid: spec.nodeName: Invalid value: "node-2": field is immutable'),
], ids=["claim-spec", "slice-node-name"])
def test_immutable_fields_refuse_an_update(cluster, kind, text, changed, expected):
    apply(cluster, text)
    before = cluster.get(kind)[0]
    with pytest.raises(GpuschedError) as err:
        apply(cluster, text.replace(*changed))
    assert str(err.value).startswith(expected) and str(err.value).endswith("field is immutable")
    assert cluster.get(kind)[0]["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


class FakeCelError(Exception):
    pass


def fake_compile(expression: str) -> object:
    """Stands in for ``gpusched.dra.cel.compile_selector``: what upstream's compiler says."""
    if "cost" in expression:
        raise FakeCelError("too complex, exceeds cost limit")
    if expression.count("(") != expression.count(")"):
        raise FakeCelError("compilation failed: ERROR: <input>:1:7: Syntax error: missing ')'")
    return object()


@pytest.fixture
def fake_cel(monkeypatch):
    monkeypatch.setattr(strategy_dra, "_COMPILER", [(fake_compile, FakeCelError)])


@pytest.mark.parametrize("expression, expected", [
    ("size((", 'spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "size((": '
               "compilation failed: ERROR: <input>:1:7: Syntax error: missing ')'"),
    ("cost", "spec.devices.requests[0].exactly.selectors[0].cel.expression: Forbidden: too complex, "
             "exceeds cost limit"),
], ids=["compile-error", "cost-limit"])
def test_cel_that_does_not_compile_is_refused_at_create(cluster, fake_cel, expression, expected):
    """validation.go validateCELSelector: the compile error as Invalid, the cost as Forbidden."""
    with pytest.raises(GpuschedError) as err:
        apply(cluster, CLAIM.replace('device.driver == "gpu.example.com"', expression))
    assert str(err.value) == f'test.yaml: document 0: The ResourceClaim "one-gpu" is invalid: {expected}'
    assert cluster.get("ResourceClaim") == []


def test_unchanged_selectors_are_stored_expressions(cluster, fake_cel, monkeypatch):
    """An update that leaves the selectors alone does not compile them again (``stored``)."""
    apply(cluster, """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'true'}}]
""")
    calls = []
    monkeypatch.setattr(strategy_dra, "_COMPILER", [(lambda e: calls.append(e), FakeCelError)])
    apply(cluster, """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com, labels: {a: b}}
spec:
  selectors: [{cel: {expression: 'true'}}]
""")
    assert calls == []


def test_a_pods_claim_statuses_name_its_claims(cluster):
    """core validation validatePodResourceClaimStatuses, on a status write."""
    import copy

    from gpusched.cluster.apiserver import write
    apply(cluster, """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: shared}]
  containers: [{name: c, image: i}]
""")

    def record(view):
        pod = copy.deepcopy(view.get("Pod", "p", "default"))
        pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "Shared"},
                                                  {"name": "tpu"}]
        write.update_status(view, pod)
    with pytest.raises(GpuschedError) as err:
        cluster.write(record)
    assert str(err.value).startswith(
        'The Pod "p" is invalid: status.resourceClaimStatuses[0].name: Invalid value: "Shared": a lowercase '
        "RFC 1123 subdomain")
    assert str(err.value).endswith('status.resourceClaimStatuses[1].name: Invalid value: "tpu": must match the '
                                   "name of an entry in `spec.resourceClaims`")
    assert "resourceClaimStatuses" not in cluster.get("Pod", ["p"])[0]["status"]


def test_the_dra_cel_environment_refuses_a_non_bool_selector(cluster, monkeypatch):
    """With gpusched.dra.cel present (its compiler, not a stand-in): validateCELSelector's
    ``must evaluate to bool or the unknown type, not int`` (dynamic-resource-allocation cel/compile.go)."""
    pytest.importorskip("gpusched.dra.cel")
    monkeypatch.setattr(strategy_dra, "_COMPILER", [])
    with pytest.raises(GpuschedError) as err:
        apply(cluster, CLAIM.replace('device.driver == "gpu.example.com"', "1"))
    assert str(err.value).endswith('spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: '
                                   '"1": must evaluate to bool or the unknown type, not int')


@pytest.mark.parametrize("result, expected", [
    ({"request": "tpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
     'status.allocation.devices.results[0].request: Invalid value: "tpu": must be the name of a request in '
     "the claim or the name of a request and a subrequest separated by '/'"),
    ({"request": "gpu", "driver": "gpu.example.com", "pool": "", "device": "gpu-0"},
     "status.allocation.devices.results[0].pool: Required value"),
], ids=["unknown-request", "no-pool"])
def test_a_new_allocation_names_the_claims_requests(cluster, result, expected):
    """validation.go validateDeviceRequestAllocationResult, on the status write that allocates."""
    import copy

    from gpusched.cluster.apiserver import write
    apply(cluster, CLAIM)

    def allocate(view):
        claim = copy.deepcopy(view.get("ResourceClaim", "one-gpu", "default"))
        claim["status"] = {"allocation": {"devices": {"results": [result]}}}
        write.update_status(view, claim)
    with pytest.raises(GpuschedError) as err:
        cluster.write(allocate)
    assert str(err.value) == f'The ResourceClaim "one-gpu" is invalid: {expected}'
    assert "status" not in cluster.get("ResourceClaim", ["one-gpu"])[0]
