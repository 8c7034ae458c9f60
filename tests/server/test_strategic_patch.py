"""Strategic merge patch driven by the v1.35 OpenAPI patch strategy and merge key.

Cases are upstream's: k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go
(TestStrategicMergePatch, the "Current + ThreeWay = Result" half), with upstream's test type's
fields mapped onto Pod fields of the same strategy: mergingIntList -> metadata.finalizers
(merge, scalars), mergingList -> spec.containers (merge, key name), nonMergingList ->
spec.tolerations (atomic: replaced); and the kubectl patch task page
(kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch).
"""

from __future__ import annotations

import pytest

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.server.patch import (STRATEGIC, GenericInvalidError, UnknownPatchError, apply_patch,
                                   strategic_supported)


def pod(**fields) -> dict:
    meta = {"name": "p", **fields.pop("meta", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": fields}


def c(name: str, **extra) -> dict:
    return {"name": name, **extra}


CASES = [
    # docs task page: "Notice that the tolerations list in the PodSpec was replaced, not merged"
    ("docs-tolerations-replaced",
     pod(tolerations=[{"key": "dedicated", "value": "test-team", "effect": "NoSchedule"}]),
     {"spec": {"tolerations": [{"key": "disktype", "value": "ssd", "effect": "NoSchedule"}]}},
     ("spec", "tolerations"), [{"key": "disktype", "value": "ssd", "effect": "NoSchedule"}]),
    # docs task page: the patch adds patch-demo-ctr-2; the result lists it first
    ("docs-containers-merged-new-first", pod(containers=[c("patch-demo-ctr", image="nginx")]),
     {"spec": {"containers": [c("patch-demo-ctr-2", image="redis")]}}, ("spec", "containers"),
     [c("patch-demo-ctr-2", image="redis"), c("patch-demo-ctr", image="nginx")]),
    # finalizers: patchStrategy merge on a list of scalars (ObjectMeta) -> union, deduplicated
    ("finalizers-merged", pod(meta={"finalizers": ["a/x", "b/y"]}),
     {"metadata": {"finalizers": ["c/z", "a/x"]}}, ("metadata", "finalizers"), ["c/z", "a/x", "b/y"]),
    # patch_test.go "merge lists of scalars": Current [1,2,4] + {$setElementOrder [1,2,3], [3]}
    ("upstream-merge-lists-of-scalars", pod(meta={"finalizers": ["1", "2", "4"]}),
     {"metadata": {"$setElementOrder/finalizers": ["1", "2", "3"], "finalizers": ["3"]}},
     ("metadata", "finalizers"), ["1", "2", "3", "4"]),
    # patch_test.go "delete items in lists of scalars"
    ("upstream-delete-from-primitive-list", pod(meta={"finalizers": ["1", "2", "3", "4"]}),
     {"metadata": {"$setElementOrder/finalizers": ["1", "2"], "$deleteFromPrimitiveList/finalizers": ["3"]}},
     ("metadata", "finalizers"), ["1", "2", "4"]),
    # patch_test.go "$setElementOrder contains item that is not present in the list to be merged"
    ("upstream-set-order-extra-item", pod(containers=[c("1"), c("3")]),
     {"spec": {"$setElementOrder/containers": [c("3"), c("2"), c("1")],
               "containers": [c("3", image="3"), c("1", image="1")]}},
     ("spec", "containers"), [c("3", image="3"), c("1", image="1")]),
    # patch_test.go "$setElementOrder contains item that is not present in the int list to be merged"
    ("upstream-set-order-int-list", pod(meta={"finalizers": ["1", "3"]}),
     {"metadata": {"$setElementOrder/finalizers": ["3", "2", "1"]}}, ("metadata", "finalizers"), ["3", "1"]),
    # mergeSliceWithSpecialElements: $patch delete removes every element with that key
    ("patch-delete-element", pod(containers=[c("a", image="x"), c("b"), c("a", image="dup")]),
     {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}, ("spec", "containers"), [c("b")]),
    # ... and $patch replace makes the list the patch's other elements
    ("patch-replace-list", pod(containers=[c("a", image="x"), c("b")]),
     {"spec": {"containers": [c("z", image="q"), {"$patch": "replace"}]}}, ("spec", "containers"),
     [c("z", image="q")]),
    # handleDirectiveInMergeMap: $patch replace on a map takes the patch map as it is
    ("patch-replace-map", pod(meta={"labels": {"a": "1", "b": "2"}}),
     {"metadata": {"labels": {"c": "3", "$patch": "replace"}}}, ("metadata", "labels"), {"c": "3"}),
    # handleDirectiveInMergeMap: $patch delete on a map gives an empty map
    ("patch-delete-map", pod(nodeSelector={"a": "1"}),
     {"spec": {"nodeSelector": {"$patch": "delete"}}}, ("spec", "nodeSelector"), {}),
    # merge by key recurses: env (merge, key name) inside the matched container
    ("nested-env-merged", pod(containers=[c("a", env=[{"name": "X", "value": "1"}])]),
     {"spec": {"containers": [c("a", env=[{"name": "Y", "value": "2"}])]}}, ("spec", "containers"),
     [c("a", env=[{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}])]),
    # container args: no strategy -> replaced
    ("args-replaced", pod(containers=[c("a", args=["1", "2"])]),
     {"spec": {"containers": [c("a", args=["3"])]}}, ("spec", "containers"), [c("a", args=["3"])]),
    # null deletes a key
    ("null-deletes", pod(meta={"labels": {"a": "1", "b": "2"}}),
     {"metadata": {"labels": {"a": None}}}, ("metadata", "labels"), {"b": "2"}),
    # applyRetainKeysDirective: keys not listed are cleared before merging
    ("retain-keys", pod(meta={"labels": {"a": "1", "b": "2"}}),
     {"metadata": {"labels": {"$retainKeys": ["a", "c"], "c": "3"}}}, ("metadata", "labels"),
     {"a": "1", "c": "3"}),
    # a deletion list for a field the object lacks adds nothing
    ("delete-from-absent-list", pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}},
     ("metadata",), {"name": "p"}),
]


@pytest.mark.parametrize(("old", "patch", "path", "expected"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_strategic_merge(old, patch, path, expected):
    before = repr(old)
    result = apply_patch(old, patch, STRATEGIC)
    for key in path:
        result = result[key]
    assert result == expected
    assert repr(old) == before       # the stored object is not changed


# handlers/patch.go interpretStrategicMergePatchError: mergepatch's ErrBadPatchFormat* are 400,
# ErrNoListOfLists 422 (NewGenericServerResponse), every other merge error a 500 with no reason
# (ErrorToAPIStatus), which kubectl prints as "Error from server: <message>".
BAD = [
    # patch_test.go "should check if order in $setElementOrder and patch list match"
    ("upstream-set-order-mismatch", pod(containers=[c("1"), c("3"), c("2")]),
     {"spec": {"$setElementOrder/containers": [c("1"), c("2"), c("3")],
               "containers": [c("3", image="3"), c("1", image="1")]}}, "doesn't match", UnknownPatchError),
    ("no-merge-key", pod(containers=[c("a")]), {"spec": {"containers": [{"image": "x"}]}},
     "^map: map\\[image:x\\] does not contain declared merge key: name$", UnknownPatchError),
    ("unknown-directive", pod(containers=[c("a")]), {"spec": {"containers": [{"name": "a", "$patch": "x"}]}},
     "unknown patch type: x", UnknownPatchError),
    ("merge-directive-in-list", pod(containers=[c("a")]),
     {"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}, "merging lists cannot yet be specified",
     UnknownPatchError),
    ("retain-keys-not-listed", pod(meta={"labels": {"a": "1"}}),
     {"metadata": {"labels": {"$retainKeys": ["a"], "b": "2"}}}, "invalid patch format of retainKeys",
     BadRequestError),
    ("mixed-element-types", pod(meta={"finalizers": ["a"]}), {"metadata": {"finalizers": [{"x": 1}]}},
     "list element types are not identical", UnknownPatchError),
    ("list-of-lists", pod(meta={"finalizers": ["a"]}), {"metadata": {"finalizers": [["x"]]}},
     "rejected our request", GenericInvalidError),
]


@pytest.mark.parametrize(("old", "patch", "message", "error"), [case[1:] for case in BAD],
                         ids=[case[0] for case in BAD])
def test_bad_strategic_patch(old, patch, message, error):
    with pytest.raises(error, match=message) as raised:
        apply_patch(old, patch, STRATEGIC)
    assert type(raised.value) is error


@pytest.mark.parametrize(("api_version", "kind", "supported"), [
    ("v1", "Pod", True), ("apps/v1", "Deployment", True),
    ("gpusched.io/v1alpha1", "NodePool", False), ("nvidia.com/v1", "ClusterPolicy", False),
], ids=["pod", "deployment", "nodepool-415", "clusterpolicy-415"])
def test_strategic_only_for_built_in_kinds(api_version, kind, supported):
    assert strategic_supported(api_version, kind) is supported
