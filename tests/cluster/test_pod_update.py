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
