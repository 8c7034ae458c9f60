"""``kubectl patch`` (1.32, strategic merge by default) against ``gpusched serve``, compared with
the documented results of kubernetes.io/docs/tasks/manage-kubernetes-objects/
update-api-object-kubectl-patch: ``tolerations`` (no patch strategy) is replaced, ``containers``
(merge by ``name``) merged with the new container first; ``metadata.finalizers`` (patch strategy
merge, a list of scalars) is a union; custom resources refuse strategic merge with a 415."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.server.test_kubectl import _kubectl_binaries

BINARIES = [pytest.param(p.values[0], id=p.id, marks=p.marks) for p in _kubectl_binaries()]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "patch-demo", "finalizers": ["example.com/a"]},
       "spec": {"containers": [{"name": "patch-demo-ctr", "image": "nginx"}],
                "tolerations": [{"key": "dedicated", "value": "test-team", "effect": "NoSchedule"}]}}
# the task page's deployment-patch.yaml
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "patch-demo"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}},
                       "template": {"metadata": {"labels": {"app": "nginx"}},
                                    "spec": {"containers": [{"name": "patch-demo-ctr", "image": "nginx"}],
                                             "tolerations": [{"effect": "NoSchedule", "key": "dedicated",
                                                              "value": "test-team"}]}}}}
DISKTYPE = '{"effect":"NoSchedule","key":"disktype","value":"ssd"}'


def patched(serve, kind: str, *args: str, binary: str = "kubectl") -> dict:
    serve.kubectl("patch", kind, "patch-demo", *args, binary=binary)
    return json.loads(serve.kubectl("get", kind, "patch-demo", "-o", "json").stdout)


def test_kubectl_patch_deployment_as_documented(serve):
    serve.json("/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT)
    done = patched(serve, "deployment", "-p",
                   '{"spec":{"template":{"spec":{"containers":[{"name":"patch-demo-ctr-2","image":"redis"}]}}}}')
    assert [(c["name"], c["image"]) for c in done["spec"]["template"]["spec"]["containers"]] == [
        ("patch-demo-ctr-2", "redis"), ("patch-demo-ctr", "nginx")]
    done = patched(serve, "deployment", "-p", '{"spec":{"template":{"spec":{"tolerations":[%s]}}}}' % DISKTYPE)
    assert done["spec"]["template"]["spec"]["tolerations"] == [json.loads(DISKTYPE)]


@pytest.mark.parametrize("binary", BINARIES)
def test_kubectl_patch_pod_tolerations_and_finalizers(serve, binary):
    serve.json("/api/v1/namespaces/default/pods", POD)
    # replaced, so dropping "dedicated" is a pod update kube-apiserver forbids (a merge would
    # have been an addition, which it allows)
    refused = serve.kubectl("patch", "pod", "patch-demo", "-p", '{"spec":{"tolerations":[%s]}}' % DISKTYPE,
                            check=False, binary=binary)
    assert refused.returncode == 1
    assert "`spec.tolerations` (only additions to existing tolerations)" in refused.stderr
    # the stored list (DefaultTolerationSeconds admission added its own) plus one: an addition
    both = serve.pod("patch-demo")["spec"]["tolerations"] + [json.loads(DISKTYPE)]
    pod = patched(serve, "pod", "-p", json.dumps({"spec": {"tolerations": both}}), binary=binary)
    assert pod["spec"]["tolerations"] == both
    pod = patched(serve, "pod", "-p", '{"metadata":{"finalizers":["example.com/b"]}}', binary=binary)
    assert pod["metadata"]["finalizers"] == ["example.com/b", "example.com/a"]


def test_kubectl_patch_directives(serve):
    serve.json("/api/v1/namespaces/default/pods", POD)
    pod = patched(serve, "pod", "-p", '{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/a"],'
                               '"labels":{"app":"x"}}}')
    assert pod["metadata"].get("finalizers", []) == []
    assert pod["metadata"]["labels"] == {"app": "x"}
    pod = patched(serve, "pod", "-p", '{"metadata":{"labels":{"$patch":"replace","tier":"gpu"}}}')
    assert pod["metadata"]["labels"] == {"tier": "gpu"}


def test_kubectl_patch_list_directives_on_a_deployment(serve):
    """$patch: delete removes a container by its merge key; $setElementOrder orders the merged
    list (strategicpatch ``mergeSliceWithSpecialElements``, ``normalizeElementOrder``)."""
    serve.json("/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT)
    two = '{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"redis"}]}}}}'
    done = patched(serve, "deployment", "-p", two)
    assert [c["name"] for c in done["spec"]["template"]["spec"]["containers"]] == ["b", "patch-demo-ctr"]
    done = patched(serve, "deployment", "-p", '{"spec":{"template":{"spec":{"$setElementOrder/containers":'
                   '[{"name":"patch-demo-ctr"},{"name":"b"}],"containers":[{"name":"b","image":"redis:7"}]}}}}')
    assert [(c["name"], c["image"]) for c in done["spec"]["template"]["spec"]["containers"]] == [
        ("patch-demo-ctr", "nginx"), ("b", "redis:7")]
    done = patched(serve, "deployment", "-p",
                   '{"spec":{"template":{"spec":{"containers":[{"name":"b","$patch":"delete"}]}}}}')
    assert [c["name"] for c in done["spec"]["template"]["spec"]["containers"]] == ["patch-demo-ctr"]


def test_kubectl_patch_merge_errors_read_as_upstream(serve):
    """handlers/patch.go passes mergepatch's plain errors on: a 500 with no reason, which kubectl
    prints as "Error from server: <text>"; a bad $retainKeys is 400 BadRequest."""
    serve.json("/api/v1/namespaces/default/pods", POD)
    done = serve.kubectl("patch", "pod", "patch-demo", "-p", '{"spec":{"containers":[{"image":"x"}]}}',
                         check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == "Error from server: map: map[image:x] does not contain declared merge key: name"
    serve.kubectl("label", "pod", "patch-demo", "a=1")
    done = serve.kubectl("patch", "pod", "patch-demo", "-p",
                         '{"metadata":{"labels":{"$retainKeys":["a"],"b":"2"}}}', check=False)
    assert done.stderr.strip() == "Error from server (BadRequest): invalid patch format of retainKeys"


def test_kubectl_patch_custom_resource_is_415(serve):
    serve.kubectl("apply", "-f", "examples/cluster.yaml")
    pools = json.loads(serve.kubectl("get", "nodepools", "-o", "json").stdout)["items"]
    name = pools[0]["metadata"]["name"]
    done = serve.kubectl("patch", "nodepool", name, "-p", '{"metadata":{"labels":{"a":"b"}}}', check=False)
    assert done.returncode == 1
    assert "the body of the request was in an unknown format - accepted media types include: " \
           "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml" \
           in done.stderr
    merged = serve.kubectl("patch", "nodepool", name, "--type", "merge", "-p", '{"metadata":{"labels":{"a":"b"}}}')
    assert "patched" in merged.stdout
