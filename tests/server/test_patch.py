"""Patch semantics: JSON merge, strategic merge by key, JSON patch; resource path parsing."""

from __future__ import annotations

import pytest

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.server.http import normalise_path
from gpusched.server.patch import JSON_PATCH, MERGE, STRATEGIC, JsonPatchError, apply_patch
from gpusched.server.resources import parse_target

POD = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]},
                               {"name": "b", "image": "y"}],
                "tolerations": [{"key": "k", "effect": "NoSchedule"}]},
       "metadata": {"labels": {"app": "web", "tier": "gpu"}}}


@pytest.mark.parametrize(("patch_type", "patch", "path", "expected"), [
    (MERGE, {"metadata": {"labels": {"tier": None, "team": "a"}}}, ("metadata", "labels"),
     {"app": "web", "team": "a"}),
    (MERGE, {"spec": {"containers": [{"name": "a", "image": "z"}]}}, ("spec", "containers"),
     [{"name": "a", "image": "z"}]),
    (STRATEGIC, {"spec": {"containers": [{"name": "a", "image": "z"}]}}, ("spec", "containers"),
     [{"name": "a", "image": "z", "env": [{"name": "E", "value": "1"}]}, {"name": "b", "image": "y"}]),
    (STRATEGIC, {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}, ("spec", "containers"),
     [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}]),
    # PodSpec.tolerations has no patch strategy (x-kubernetes-list-type atomic): replaced, as the
    # kubectl patch task page says ("the tolerations list in the PodSpec was replaced, not merged")
    (STRATEGIC, {"spec": {"tolerations": [{"key": "k2", "effect": "NoExecute"}]}}, ("spec", "tolerations"),
     [{"key": "k2", "effect": "NoExecute"}]),
    (STRATEGIC, {"spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]}}, ("spec", "taints"),
     [{"key": "t", "effect": "NoSchedule"}]),
    (JSON_PATCH, [{"op": "replace", "path": "/spec/containers/1/image", "value": "q"}],
     ("spec", "containers"), [POD["spec"]["containers"][0], {"name": "b", "image": "q"}]),
    (JSON_PATCH, [{"op": "add", "path": "/metadata/labels/new~1key", "value": "v"},
                  {"op": "remove", "path": "/metadata/labels/tier"}], ("metadata", "labels"),
     {"app": "web", "new/key": "v"}),
], ids=["merge-labels", "merge-replaces-lists", "strategic-by-name", "strategic-delete",
        "strategic-tolerations-replace", "strategic-taints-replace", "json-replace", "json-add-remove-escaped"])
def test_patches(patch_type, patch, path, expected):
    result = apply_patch(POD, patch, patch_type)
    for key in path:
        result = result[key]
    assert result == expected
    assert POD["metadata"]["labels"] == {"app": "web", "tier": "gpu"}   # the input is untouched


@pytest.mark.parametrize(("patch_type", "patch", "error"), [
    (JSON_PATCH, [{"op": "test", "path": "/metadata/labels/app", "value": "db"}], JsonPatchError),
    (JSON_PATCH, [{"op": "remove", "path": "/nope"}], JsonPatchError),
    (JSON_PATCH, {"op": "add"}, BadRequestError),
    (MERGE, ["not", "an", "object"], BadRequestError),
], ids=["failed-test", "missing-path", "not-a-list", "merge-not-object"])
def test_bad_patches(patch_type, patch, error):
    with pytest.raises(error):
        apply_patch(POD, patch, patch_type)


@pytest.mark.parametrize(("path", "expected"), [
    ("/api/v1/pods", ("Pod", None, "", "")),
    ("/api/v1/namespaces/a/pods/p/status", ("Pod", "a", "p", "status")),
    ("/api/v1/namespaces/team", ("Namespace", None, "team", "")),
    ("/api/v1/nodes/n1", ("Node", None, "n1", "")),
    ("/apis/apps/v1/namespaces/d/deployments/web", ("Deployment", "d", "web", "")),
    ("/apis/gpusched.io/v1alpha1/nodepools", ("NodePool", None, "", "")),
    ("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/x",
     ("Lease", "kube-node-lease", "x", "")),
    ("/apis/coordination.k8s.io/v1/leases/x", None),
    ("/apis/policy/v1/namespaces/a/leases/x", None),
    ("/api/v1/pods/p", None),
], ids=["all-pods", "pod-status", "namespace", "node", "deployment", "nodepool", "lease",
        "lease-without-ns", "lease-wrong-group", "pod-without-ns"])
def test_parse_target(path, expected):
    target = parse_target(path)
    got = None if target is None else (target.info.kind, target.namespace, target.name, target.subresource)
    assert got == expected


def test_trailing_slashes_are_normalised():
    assert normalise_path("/api/?x=1&x=2") == ("/api", {"x": "2"})
