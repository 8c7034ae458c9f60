"""Which pod spec changes an update may make: pkg/apis/core/validation ValidatePodUpdate
(mungedPodSpec: images by container index; ValidateTolerationsInPodUpdate: additions only)."""

from __future__ import annotations

import pytest

from gpusched.cluster.apiserver.apply import check_pod_update
from gpusched.errors import InvalidError

OLD = {"metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "a"}], "tolerations": [{"key": "k", "operator": "Exists"}]}}


def with_spec(**changes) -> dict:
    return {"metadata": {"name": "p"}, "spec": {**OLD["spec"], **changes}}


@pytest.mark.parametrize(("new", "allowed"), [
    (with_spec(containers=[{"name": "c", "image": "b"}]), True),
    (with_spec(tolerations=[{"key": "k", "operator": "Exists"}, {"key": "x", "operator": "Exists"}]), True),
    (with_spec(tolerations=[{"key": "x", "operator": "Exists"}]), False),
    (with_spec(tolerations=[]), False),
    (with_spec(containers=[{"name": "c", "image": "a", "args": ["x"]}]), False),
    (with_spec(nodeSelector={"a": "b"}), False),
], ids=["image", "toleration-added", "toleration-replaced", "tolerations-removed", "args", "node-selector"])
def test_pod_update(new, allowed):
    if allowed:
        check_pod_update(OLD, new)
    else:
        with pytest.raises(InvalidError, match="pod updates may not change fields"):
            check_pod_update(OLD, new)


GATED = with_spec(schedulingGates=[{"name": "kueue.x-k8s.io/topology"}], nodeSelector={"a": "b"})


@pytest.mark.parametrize(("new", "error"), [
    ({**GATED, "spec": {**GATED["spec"], "schedulingGates": [], "nodeSelector": {"a": "b", "kubernetes.io/hostname": "x1"}}},
     ""),
    ({**GATED, "spec": {**GATED["spec"], "nodeSelector": {"a": "z", "c": "d"}}},
     'spec.nodeSelector: Invalid value: {"a":"z","c":"d"}: only additions to spec.nodeSelector are allowed '
     "(no mutations or deletions)"),
    ({**GATED, "spec": {**GATED["spec"], "nodeSelector": {}}},
     "spec.nodeSelector: Invalid value: {}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"),
], ids=["ungate-and-add", "mutate", "delete"])
def test_gated_pod_may_only_add_node_selector_keys(new, error):
    """ValidatePodUpdate, gated pods (KEP-3838; validation_test.go "node selector is allowed to be
    added/ mutated for gated pods"): the way Kueue's topology ungater pins a pod to its domain."""
    if not error:
        check_pod_update(GATED, new)
        return
    with pytest.raises(InvalidError) as raised:
        check_pod_update(GATED, new)
    assert error in str(raised.value)
