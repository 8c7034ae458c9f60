"""Server-side apply and managed fields (``server.ssa``) against apimachinery's fieldmanager and
structured-merge-diff: ``pkg/util/managedfields/internal/conflict.go`` (messages, printManager),
``manager.go``/``stripmeta.go`` (what is tracked), ``managedfields.go``
``sortEncodedManagedFields``; kubectl 1.32 ``apply --server-side`` through serve as in
kubernetes ``test/cmd/apply.sh`` (conflict with client-side apply, ``--force-conflicts``).
"""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import InvalidError
from gpusched.server import fields_v1, ssa

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SHAPE = ssa.root_shape("apps/v1", "Deployment")


def deployment(replicas: int = 2, image: str = "busybox", **extra) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", **extra},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def entry(manager: str, operation: str, *paths: tuple[str, ...]) -> dict:
    return {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "time": "t",
            "fieldsType": "FieldsV1", "fieldsV1": fields_v1.to_fields_v1(paths)}


REPLICAS = ("f:spec", "f:replicas")
IMAGE = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"c"}', "f:image")


def test_tracked_fields_follow_list_types_and_strip_server_metadata():
    body = deployment(finalizers=["example.com/x"], uid="u", resourceVersion="3")
    body["status"] = {"replicas": 2}
    paths = set(ssa.tracked(body, SHAPE))
    assert REPLICAS in paths and IMAGE in paths
    assert ("f:spec", "f:selector") in paths                        # LabelSelector: atomic map
    assert ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"c"}') in paths
    assert ("f:metadata", "f:finalizers", 'v:"example.com/x"') in paths   # list-type set
    assert not any(p[:1] == ("f:status",) or p[:2] in (("f:metadata", "f:uid"),
                   ("f:metadata", "f:name")) for p in paths)


def test_fields_v1_marks_items_with_children_with_a_dot():
    tree = fields_v1.to_fields_v1(ssa.tracked(deployment(), SHAPE))
    assert tree["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}
    assert fields_v1.from_fields_v1(tree) == set(ssa.tracked(deployment(), SHAPE))


@pytest.mark.parametrize(("path", "text"), [
    (REPLICAS, ".spec.replicas"),
    (IMAGE, '.spec.template.spec.containers[name="c"].image'),
    (("f:metadata", "f:finalizers", 'v:"a/b"'), '.metadata.finalizers[="a/b"]'),
    (("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'), ".spec.ports[port=80,protocol=\"TCP\"]"),
], ids=["field", "keyed-item", "set-item", "two-keys"])
def test_paths_print_as_fieldpath(path, text):
    assert fields_v1.path_string(path) == text


def test_update_takes_changed_fields_and_drops_removed_ones_from_everyone():
    old = deployment()
    old["metadata"]["managedFields"] = [entry("creator", "Update", REPLICAS, IMAGE)]
    new = deployment(replicas=5)
    new["spec"]["template"]["spec"]["containers"][0].pop("image")
    entries = ssa.record_update(old, new, "scaler", "apps/v1", "t2", SHAPE)
    owned = {e["manager"]: fields_v1.from_fields_v1(e["fieldsV1"]) for e in entries}
    assert owned == {"creator": {REPLICAS}, "scaler": {REPLICAS}}


def test_one_conflict_reads_as_conflict_go():
    live = deployment(replicas=2)
    live["metadata"]["managedFields"] = [entry("kubectl-client-side-apply", "Update", REPLICAS)]
    with pytest.raises(ssa.ApplyConflictError) as err:
        ssa.apply(live, deployment(replicas=3), deployment(replicas=3), "kubectl", False,
                  "apps/v1", "t", SHAPE)
    assert err.value.code == 409
    assert err.value.message == ('Apply failed with 1 conflict: conflict with '
                                 '"kubectl-client-side-apply" using apps/v1: .spec.replicas')
    assert err.value.causes == [{"reason": "FieldManagerConflict", "field": ".spec.replicas",
                                 "message": 'conflict with "kubectl-client-side-apply" using apps/v1'}]


def test_several_conflicts_are_grouped_by_manager():
    live = deployment()
    live["metadata"]["managedFields"] = [entry("a", "Update", REPLICAS), entry("b", "Apply", IMAGE)]
    config = deployment(replicas=4, image="other")
    with pytest.raises(ssa.ApplyConflictError) as err:
        ssa.apply(live, config, config, "me", False, "apps/v1", "t", SHAPE)
    assert err.value.message == ('Apply failed with 2 conflicts: conflicts with "a" using apps/v1:\n'
                                 "- .spec.replicas\nconflicts with \"b\":\n"
                                 '- .spec.template.spec.containers[name="c"].image')


def test_same_value_is_shared_and_force_takes_ownership():
    live = deployment()
    live["metadata"]["managedFields"] = [entry("other", "Update", REPLICAS, IMAGE)]
    _, shared = ssa.apply(live, deployment(), deployment(), "me", False, "apps/v1", "t", SHAPE)
    owned = {e["manager"]: fields_v1.from_fields_v1(e["fieldsV1"]) for e in shared}
    assert REPLICAS in owned["other"] and REPLICAS in owned["me"]
    _, forced = ssa.apply(live, deployment(replicas=9), deployment(replicas=9), "me", True,
                          "apps/v1", "t", SHAPE)
    owned = {e["manager"]: fields_v1.from_fields_v1(e["fieldsV1"]) for e in forced}
    assert owned["other"] == {IMAGE} and REPLICAS in owned["me"]
    assert [e["operation"] for e in forced] == ["Apply", "Update"]     # sortEncodedManagedFields


def test_fields_an_applier_stops_sending_are_removed_unless_someone_else_owns_them():
    live = deployment(labels={"a": "1", "b": "2"})
    label_a, label_b = ("f:metadata", "f:labels", "f:a"), ("f:metadata", "f:labels", "f:b")
    live["metadata"]["managedFields"] = [entry("me", "Apply", label_a, label_b),
                                         entry("other", "Update", label_b)]
    config = deployment()
    result, _ = ssa.apply(live, config, live, "me", False, "apps/v1", "t", SHAPE)
    assert result["metadata"]["labels"] == {"b": "2"}


@pytest.mark.parametrize(("query", "apply_patch", "message"), [
    ({}, True, "fieldManager: Required value: is required for apply patch"),
    ({"force": "true"}, False, "force: Forbidden: may not be specified for non-apply patch"),
], ids=["apply-without-manager", "force-without-apply"])
def test_patch_options_are_validated(query, apply_patch, message):
    with pytest.raises(InvalidError) as err:
        ssa.manager_name(query, "kubectl/v1.32", apply_patch)
    assert err.value.kind == "PatchOptions.meta.k8s.io" and message in err.value.message


def test_manager_defaults_to_the_user_agent_prefix():
    assert ssa.manager_name({}, "kubectl/v1.32.0 (linux/amd64)", False) == "kubectl"


# ---- through serve with kubectl 1.32 ---------------------------------------------------------

@pytest.mark.slow
def test_kubectl_server_side_apply_conflicts_with_client_side_apply_until_forced(serve, tmp_path):
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(deployment(replicas=2)))
    serve.kubectl("apply", "-f", str(manifest))
    created = serve.json(f"{DEPLOYMENTS}/web")["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in created] == [("kubectl-client-side-apply", "Update")]
    manifest.write_text(yaml.safe_dump(deployment(replicas=3)))
    done = serve.kubectl("apply", "--server-side", "-f", str(manifest), check=False)
    assert done.returncode == 1
    assert done.stderr.startswith('error: Apply failed with 1 conflict: conflict with '
                                  '"kubectl-client-side-apply" using apps/v1: .spec.replicas\n')
    assert serve.json(f"{DEPLOYMENTS}/web")["spec"]["replicas"] == 2
    done = serve.kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", str(manifest))
    assert done.stdout.strip() == "deployment.apps/web serverside-applied (server dry run)"
    assert serve.json(f"{DEPLOYMENTS}/web")["spec"]["replicas"] == 2
    done = serve.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert done.stdout.strip() == "deployment.apps/web serverside-applied"
    body = serve.json(f"{DEPLOYMENTS}/web")
    assert body["spec"]["replicas"] == 3
    owners = {e["manager"]: fields_v1.from_fields_v1(e["fieldsV1"]) for e in body["metadata"]["managedFields"]}
    assert REPLICAS in owners["kubectl"] and REPLICAS not in owners["kubectl-client-side-apply"]
    listed = serve.kubectl("get", "deployment", "web", "-o", "yaml").stdout
    assert "managedFields" not in listed
    assert "managedFields" in serve.kubectl("get", "deployment", "web", "-o", "yaml",
                                            "--show-managed-fields").stdout


@pytest.mark.slow
def test_server_side_apply_creates_then_a_second_manager_conflicts_over_the_api(serve):
    headers = {"Content-Type": "application/apply-patch+yaml"}
    status, body = serve.request("PATCH", f"{DEPLOYMENTS}/web?fieldManager=team-a", deployment(),
                                 headers=headers)
    assert status == 201
    assert [(e["manager"], e["operation"]) for e in body["metadata"]["managedFields"]] == [("team-a", "Apply")]
    status, body = serve.request("PATCH", f"{DEPLOYMENTS}/web?fieldManager=team-b",
                                 deployment(image="other"), headers=headers)
    assert (status, body["reason"]) == (409, "Conflict")
    assert body["message"] == ('Apply failed with 1 conflict: conflict with "team-a": '
                               '.spec.template.spec.containers[name="c"].image')
    assert body["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    status, body = serve.request("PATCH", f"{DEPLOYMENTS}/web", deployment(), headers=headers)
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                               "is required for apply patch")


@pytest.mark.slow
def test_kubectl_server_side_apply_removes_what_it_stops_sending(serve, tmp_path):
    """A field the applier no longer sends and nobody else owns is removed (SMD Updater.Apply:
    'removed' fields of the manager's previous applied set)."""
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(deployment(labels={"team": "a", "tier": "gpu"})))
    serve.kubectl("apply", "--server-side", "-f", str(manifest))
    manifest.write_text(yaml.safe_dump(deployment(labels={"team": "a"})))
    serve.kubectl("apply", "--server-side", "-f", str(manifest))
    assert serve.json(f"{DEPLOYMENTS}/web")["metadata"]["labels"] == {"team": "a"}
    serve.kubectl("label", "deployment", "web", "owner=ops")       # another manager (Update)
    manifest.write_text(yaml.safe_dump(deployment(labels={"team": "a", "owner": "ops"})))
    serve.kubectl("apply", "--server-side", "-f", str(manifest))
    manifest.write_text(yaml.safe_dump(deployment(labels={"team": "a"})))
    serve.kubectl("apply", "--server-side", "-f", str(manifest))
    assert serve.json(f"{DEPLOYMENTS}/web")["metadata"]["labels"] == {"team": "a", "owner": "ops"}


@pytest.mark.slow
def test_kubernetes_client_apply_patch(serve):
    pytest.importorskip("kubernetes")
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    apps = client.AppsV1Api(config.new_client_from_config(config_file=str(serve.kubeconfig)))
    created = apps.patch_namespaced_deployment("web", "default", deployment(), field_manager="ci",
                                               _content_type="application/apply-patch+yaml")
    assert [(e.manager, e.operation) for e in created.metadata.managed_fields] == [("ci", "Apply")]
    with pytest.raises(ApiException) as conflict:
        apps.patch_namespaced_deployment("web", "default", deployment(replicas=5), field_manager="other",
                                         _content_type="application/apply-patch+yaml")
    assert conflict.value.status == 409
    forced = apps.patch_namespaced_deployment("web", "default", deployment(replicas=5), field_manager="other",
                                              force=True, _content_type="application/apply-patch+yaml")
    assert forced.spec.replicas == 5


def names(items: list) -> list:
    return [i["name"] if isinstance(i, dict) else i for i in items]


@pytest.mark.parametrize(("live", "config", "expected"), [
    (["a", "b", "c"], ["c", "a", "d"], ["b", "c", "a", "d"]),
    (["a"], ["b"], ["a", "b"]),                 # a new item goes after the live ones
    (["a", "b"], ["b", "a"], ["b", "a"]),       # shared items take the configuration's order
    ([], ["x", "y"], ["x", "y"]),
], ids=["interleaved", "appended", "reordered", "into-empty"])
def test_keyed_lists_merge_as_smd_visit_list_items(live, config, expected):
    """structured-merge-diff typed/merge.go visitListItems (containers keyed by name)."""
    shape = ssa.Shape("map-list", None, ("name",))
    merged = ssa.merge({"c": [{"name": n} for n in live]}, {"c": [{"name": n} for n in config]},
                       ssa.Shape("map", {"properties": {"c": {
                           "type": "array", "x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}}}}))
    assert names(merged["c"]) == expected
    assert names(ssa._merge_items([{"name": n} for n in live], [{"name": n} for n in config], shape)) == expected


def test_apply_merges_ports_by_both_keys_and_keeps_atomic_lists_whole():
    """ContainerPort list-map-keys are containerPort and protocol: 53/TCP and 53/UDP are two
    items; tolerations (atomic) are replaced."""
    shape = ssa.root_shape("v1", "Pod")
    live = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 53, "protocol": "TCP"}]}],
                     "tolerations": [{"key": "a"}]}}
    config = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 53, "protocol": "UDP"}]}],
                       "tolerations": [{"key": "b"}]}}
    merged = ssa.merge(live, config, shape)
    assert merged["spec"]["containers"][0]["ports"] == [{"containerPort": 53, "protocol": "TCP"},
                                                        {"containerPort": 53, "protocol": "UDP"}]
    assert merged["spec"]["tolerations"] == [{"key": "b"}]
    no_protocol = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 53, "name": "dns"}]}]}}
    merged = ssa.merge(live, no_protocol, shape)           # the defaulted key: the live TCP port
    assert merged["spec"]["containers"][0]["ports"] == [{"containerPort": 53, "protocol": "TCP", "name": "dns"}]


@pytest.mark.slow
def test_kubectl_server_side_apply_appends_a_new_container(serve, tmp_path):
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(deployment()))
    serve.kubectl("apply", "--server-side", "--field-manager=a", "-f", str(manifest))
    second = deployment()
    second["spec"]["template"]["spec"]["containers"] = [{"name": "side", "image": "redis"}]
    manifest.write_text(yaml.safe_dump(second))
    serve.kubectl("apply", "--server-side", "--field-manager=b", "-f", str(manifest))
    containers = serve.json(f"{DEPLOYMENTS}/web")["spec"]["template"]["spec"]["containers"]
    assert names(containers) == ["c", "side"]


@pytest.mark.slow
def test_apply_to_the_status_subresource_owns_status_fields(serve):
    headers = {"Content-Type": "application/apply-patch+yaml"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    assert serve.request("POST", "/api/v1/nodes", node)[0] == 201
    status = {**node, "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Test"}]}}
    code, body = serve.request("PATCH", "/api/v1/nodes/n1/status?fieldManager=probe&force=true", status,
                               headers=headers)
    assert code == 200, body
    probe = next(e for e in body["metadata"]["managedFields"] if e["manager"] == "probe")
    assert probe["operation"] == "Apply" and probe["subresource"] == "status"
    assert ("f:status", "f:conditions", 'k:{"type":"Ready"}', "f:status") in fields_v1.from_fields_v1(probe["fieldsV1"])
