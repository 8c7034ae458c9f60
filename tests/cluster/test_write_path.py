"""The apiserver's one write path (``cluster.apiserver.write``) and the admission registry.

- Nothing outside ``gpusched.cluster.apiserver`` calls the store's writing methods (an ``ast``
  scan of the package: import-linter cannot say "only this package calls these methods").
- The view's writing methods (``create``/``update``/``delete``) are called outside the apiserver
  only by the modules of :data:`DIRECT_VIEW_WRITERS`, a list that may only shrink: a new module
  writing the view directly fails, and so does a listed one that stopped (drop it from the list).
- The admission registry follows kube-apiserver's ``AllOrderedPlugins``
  (``pkg/kubeapiserver/options/plugins.go``), gpusched's own plugins before ResourceQuota.
- Status and binding writes see only the plugins that handle their subresource: the device
  holdings a pod's status write carries stay, where a main-resource update keeps the stored ones.
- A pod's quantities are parsed once per write, however many quotas and LimitRanges read them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpusched.cluster.admission import registry
from gpusched.cluster.apiserver import write
from gpusched.objects.types import ANN_ASSIGNED_GPUS

from .builders import apply, pool

PACKAGE = Path(__file__).resolve().parents[2] / "gpusched"
APISERVER = "gpusched/cluster/apiserver/"
STORE_WRITES = frozenset({"upsert_object", "delete_object", "upsert_event", "write_meta",
                          "compact_changes", "retain"})
VIEW_WRITES = frozenset({"create", "update", "delete"})
VIEW_NAMES = frozenset({"view", "_view"})
# Modules that still write the view directly (issue 28: each moves to apiserver.write's verbs).
DIRECT_VIEW_WRITERS: frozenset[str] = frozenset()


def _method_calls(method_names: frozenset[str]) -> dict[str, list[str]]:
    """module path -> ``line: receiver.method`` of every such call outside the apiserver."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if rel.startswith(APISERVER):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in method_names:
                receiver = node.func.value
                name = receiver.id if isinstance(receiver, ast.Name) else getattr(receiver, "attr", "")
                found.setdefault(rel, []).append(f"{node.lineno}: {name}.{node.func.attr}")
    return found


def _calls_on(receivers: frozenset[str], method_names: frozenset[str]) -> dict[str, list[str]]:
    """:func:`_method_calls` whose receiver (a name or an attribute) is one of ``receivers``."""
    calls = {module: [line for line in lines if line.split(": ")[1].split(".")[0] in receivers]
             for module, lines in _method_calls(method_names).items()}
    return {module: lines for module, lines in calls.items() if lines}


def test_only_the_apiserver_writes_the_store():
    assert _method_calls(STORE_WRITES) == {}
    assert _calls_on(frozenset({"store", "_store"}), frozenset({"clear"})) == {}


def test_view_writes_go_through_the_write_path():
    direct = _calls_on(VIEW_NAMES, VIEW_WRITES)
    new = sorted(set(direct) - DIRECT_VIEW_WRITERS)
    assert new == [], f"write through gpusched.cluster.apiserver.write instead: {direct}"
    stale = sorted(DIRECT_VIEW_WRITERS - set(direct))
    assert stale == [], f"no longer direct writers, drop them from DIRECT_VIEW_WRITERS: {stale}"


def test_registry_follows_upstream_order():
    """gpusched's plugins in AllOrderedPlugins' order; its own ones (Gpusched*) where upstream
    puts new plugins, then Kueue's webhooks (named as its webhook configurations, ``*.kb.io``) at
    the webhooks' place, before ResourceQuota, which stays last."""
    upstream = [name.rstrip("*") for name in registry.UPSTREAM_ORDER]
    names = [plugin.name for plugin in registry.plugins()]
    assert names[-1] == "ResourceQuota"

    def own(name: str) -> bool:
        return name.startswith("Gpusched") or name.endswith(".kb.io")
    ours = [n for n in names if not own(n)]
    assert [upstream.index(n) for n in ours] == sorted(upstream.index(n) for n in ours)
    first_own = next(i for i, n in enumerate(names) if own(n))
    assert all(own(n) for n in names[first_own:-1])
    webhooks = [i for i, n in enumerate(names) if n.endswith(".kb.io")]
    assert not webhooks or max(i for i, n in enumerate(names) if n.startswith("Gpusched")) < min(webhooks)
    assert all(f"{n}*" in registry.UPSTREAM_ORDER for n in ours), "only plugins on by default"


def _bound_pod(cluster):
    apply(cluster, pool(count=1, gpus=8))
    apply(cluster, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                   "  - {name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}\n")
    return cluster.get("Pod", ["p"])[0]


@pytest.mark.parametrize("subresource,kept", [
    ("status", "9"),        # the kubelet's and the scheduler's writes are trusted
    ("", None),             # a user's update: the stored holdings win (GpuschedDeviceHoldings)
], ids=["status-write-keeps-holdings", "main-update-keeps-stored"])
def test_device_holdings_guard_only_the_main_resource(cluster, subresource, kept):
    stored = _bound_pod(cluster).get("metadata", {}).get("annotations", {}).get(ANN_ASSIGNED_GPUS)
    with cluster.writing(settle=False) as view:
        body = view.copy("Pod", "p", "default")
        body["metadata"].setdefault("annotations", {})[ANN_ASSIGNED_GPUS] = "9"
        write.update(view, body, subresource=subresource)
        seen = view.get("Pod", "p", "default")["metadata"].get("annotations", {}).get(ANN_ASSIGNED_GPUS)
    assert seen == (kept if kept is not None else stored)


def test_pod_quantities_parsed_once_per_write(cluster, monkeypatch):
    """Two quotas and a LimitRange read the pod's resources; each container is parsed once."""
    from gpusched.cluster.admission import attributes
    apply(cluster, pool(count=1, gpus=8))
    for name in ("q1", "q2"):
        apply(cluster, f"apiVersion: v1\nkind: ResourceQuota\nmetadata: {{name: {name}}}\n"
                       "spec: {hard: {requests.cpu: '10', limits.cpu: '10', pods: '10'}}\n")
    apply(cluster, "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr}\nspec:\n  limits:\n"
                   "  - {type: Container, max: {cpu: '4'}}\n")
    parsed = []
    real = attributes.container_resources
    monkeypatch.setattr(attributes, "container_resources",
                        lambda container: parsed.append(container.get("name")) or real(container))
    apply(cluster, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                   "  - {name: a, image: i, resources: {limits: {cpu: '1'}}}\n"
                   "  - {name: b, image: i, resources: {limits: {cpu: '1'}}}\n")
    assert parsed == ["a", "b"]


def test_controller_creates_pass_admission(cluster):
    """A ReplicaSet the Deployment controller creates is admitted like a client's: a quota on
    ``count/replicasets.apps`` refuses it, and the controller reports it as kube-controller-manager
    does (pkg/controller/deployment/sync.go getNewReplicaSet: a Warning ``ReplicaSetCreateError``
    event and ``Progressing=False``), while the Deployment itself is stored."""
    apply(cluster, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: rs}\n"
                   "spec: {hard: {count/replicasets.apps: '0'}}\n")
    outcome = apply(cluster, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
                             "  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n"
                             "    metadata: {labels: {app: web}}\n"
                             "    spec: {containers: [{name: c, image: i}]}\n")
    assert [o.action for o in outcome] == ["created"]
    assert cluster.get("ReplicaSet", namespace="default") == []
    events = [e for e in cluster.get("Event", namespace="default")
              if e.get("reason") == "ReplicaSetCreateError"]
    assert len(events) == 1 and events[0]["type"] == "Warning"
    assert events[0]["message"].startswith('Failed to create new replica set "web-')
    assert "exceeded quota: rs, requested: count/replicasets.apps=1" in events[0]["message"]
    progressing = [c for c in cluster.get("Deployment", ["web"])[0]["status"]["conditions"]
                   if c["type"] == "Progressing"]
    assert progressing[0]["status"] == "False" and progressing[0]["reason"] == "ReplicaSetCreateError"


def test_furniture_and_endpoints_refused_by_quota_do_not_fail_the_command(cluster):
    """Controllers' creates admission refuses are the controllers' problem, not the user's:
    the serviceaccounts controller requeues (a deleted ``default`` ServiceAccount under a
    ``count/serviceaccounts: 0`` quota stays deleted, the delete succeeds) and the endpoints
    controller records ``FailedToCreateEndpoint`` (pkg/controller/endpoint/
    endpoints_controller.go syncService)."""
    apply(cluster, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
    apply(cluster, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: team}\n"
                   "spec: {hard: {count/serviceaccounts: '0', count/endpoints: '0'}}\n")
    cluster.delete("sa", "default", namespace="team")
    assert cluster.get("ServiceAccount", namespace="team") == []
    apply(cluster, "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: team}\n"
                   "spec: {selector: {app: web}, ports: [{port: 80}]}\n")
    assert cluster.get("Endpoints", namespace="team") == []
    reasons = [e["reason"] for e in cluster.get("Event", namespace="team")]
    assert "FailedToCreateEndpoint" in reasons
