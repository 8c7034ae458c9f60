"""DaemonSet controller: one pod per eligible node, bound through the scheduler.

A node is eligible when it matches the template's nodeSelector and required node affinity and
its NoSchedule/NoExecute taints are tolerated (the DaemonSet's default tolerations for
``node.kubernetes.io/unschedulable`` etc. are added, as upstream, so cordoned nodes still get
their pod). Each pod is created with a required node affinity on ``metadata.name`` (upstream's
default since 1.12) and bound by the scheduler. Pods on nodes no longer eligible are deleted.
Status: desiredNumberScheduled, currentNumberScheduled, numberReady, numberAvailable,
numberMisscheduled, updatedNumberScheduled, numberUnavailable (zero counters omitted but the
four the API requires).

Updates (pkg/controller/daemon/update.go): each template is recorded in a ControllerRevision
``<ds>-<hash>`` (``data`` = the template as a replacing strategic-merge patch, ``revision`` = next
number; a template equal to an old one raises that revision: a rollback), pods carry
``controller-revision-hash``; with ``updateStrategy`` RollingUpdate (default, ``maxUnavailable``
1) out-of-date pods are deleted and re-created node by node; OnDelete leaves them.

Hook for device-plugin style DaemonSets: ``gpusched rollout restart daemonset X`` (or kubectl's)
patches the template annotation ``kubectl.kubernetes.io/restartedAt`` (:data:`RESTARTED_AT`), so
every pod of the DaemonSet is deleted and created anew (new name, new uid, ``Started`` events),
exactly as on a real cluster; a controller that models what a restarted pod re-reads (the
device plugin's config) reacts to the new pod, e.g. by its ``creationTimestamp``/uid.

Neighbours: ``controllers.common``; ``cluster.scheduling`` binds the pods.
"""

from __future__ import annotations

from typing import Any

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.common import (controller_of, create_from_template, delete_pod,
                                                 is_active, is_ready, labels_of, node_taints,
                                                 owned_pods, owner_reference, set_status,
                                                 template_hash)
from gpusched.cluster.controllers.workloads.deployment_util import canonical, scaled_value
from gpusched.cluster.apiserver.store import dumps
from gpusched.cluster.apiserver.view import View
from gpusched.objects.pod import pod_info
from gpusched.objects.selectors import map_matches, node_selector_matches

COMPONENT = "daemonset-controller"
HASH_LABEL = "controller-revision-hash"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"   # what ``rollout restart`` patches
DEFAULT_TOLERATIONS = [
    {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": e}
    for k, e in (("not-ready", "NoExecute"), ("unreachable", "NoExecute"),
                 ("disk-pressure", "NoSchedule"), ("memory-pressure", "NoSchedule"),
                 ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule"))]


def eligible(template_pod: dict[str, Any], node: dict[str, Any]) -> bool:
    info = pod_info(template_pod)
    labels = (node.get("metadata") or {}).get("labels") or {}
    name = node["metadata"]["name"]
    if not map_matches(info.node_selector, labels):
        return False
    if info.required_terms is not None and not node_selector_matches(info.required_terms, labels,
                                                                     name):
        return False
    for taint in node_taints(node):
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
                t.tolerates(taint) for t in info.tolerations):
            return False
    return True


# The informers (``daemon_controller.go`` NewDaemonSetsController): DaemonSets, their pods and
# ControllerRevisions enqueue their owner; a Node change re-checks every DaemonSet
# (addNode/updateNode).
QUEUE = WorkQueue("DaemonSet", (itself("DaemonSet"), controller("Pod", "DaemonSet"),
                                controller("ControllerRevision", "DaemonSet")),
                  resync_on=frozenset({"Node"}))


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every DaemonSet, or (``changes``) those its informers enqueue (``QUEUE``)."""
    for ds in QUEUE.objects(view, changes):
        reconcile_one(view, ds)


def reconcile_one(view: View, ds: dict[str, Any]) -> None:
    """``syncDaemonSet``: history, ``manage`` (a pod on each wanted node, none elsewhere), the
    rolling update, then ``updateDaemonSetStatus``."""
    revision = sync_history(view, ds)
    hash_ = revision["metadata"]["labels"][HASH_LABEL]
    template = _pod_template(ds, hash_)
    probe = {"kind": "Pod", "metadata": {"name": "probe", **(template.get("metadata") or {})},
             "spec": template["spec"]}
    pods_by_node: dict[str, list[dict[str, Any]]] = {}
    for pod in owned_pods(view, ds):
        if is_active(pod):
            target = _target_node(pod)
            pods_by_node.setdefault(target, []).append(pod)
    nodes = view.list("Node")
    wanted = [n["metadata"]["name"] for n in nodes if eligible(probe, n)]
    _manage(view, ds, template, pods_by_node, wanted)
    _rolling_update(view, ds, hash_, wanted)
    _update_status(view, ds, hash_, wanted)


def _pod_template(ds: dict[str, Any], hash_: str) -> dict[str, Any]:
    """``CreatePodTemplate``: the template with the revision hash and template generation
    labels and the DaemonSet's default tolerations added."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    template.setdefault("metadata", {}).setdefault("labels", {}).update({
        HASH_LABEL: hash_, "pod-template-generation": str(ds["metadata"].get("generation", 1))})
    tolerations = template.setdefault("spec", {}).setdefault("tolerations", [])
    for default in DEFAULT_TOLERATIONS:
        if default not in tolerations:
            tolerations.append(default)
    return template


def _manage(view: View, ds: dict[str, Any], template: dict[str, Any],
            pods_by_node: dict[str, list[dict[str, Any]]], wanted: list[str]) -> None:
    """``manage`` / ``syncNodes``: a pod pinned to each wanted node that has none; the pods of
    nodes no longer wanted and all but the first of a node's pods deleted."""
    tspec = template["spec"]
    name = ds["metadata"]["name"]
    for node_name in wanted:
        if node_name not in pods_by_node:
            patch = {"affinity": _affinity_for(tspec.get("affinity"), node_name),
                     "tolerations": tspec["tolerations"]}
            create_from_template(view, ds, template, f"{name}-{view.random_suffix()}",
                                 COMPONENT, spec_patch=patch)
    for node_name, pods in sorted(pods_by_node.items()):
        extra = pods if node_name not in wanted else pods[1:]
        for pod in extra:
            delete_pod(view, pod, COMPONENT, ds)


def _update_status(view: View, ds: dict[str, Any], hash_: str, wanted: list[str]) -> None:
    """``updateDaemonSetStatus``: the counters (zero optional ones omitted)."""
    current = [p for p in owned_pods(view, ds) if is_active(p)]
    ready = sum(1 for p in current if is_ready(p))
    scheduled = sum(1 for p in current if (p.get("spec") or {}).get("nodeName"))
    updated = sum(1 for p in current if (p.get("spec") or {}).get("nodeName")
                  and labels_of(p).get(HASH_LABEL) == hash_)
    status = {"desiredNumberScheduled": len(wanted), "currentNumberScheduled": scheduled,
              "numberReady": ready, "numberMisscheduled": 0,
              "observedGeneration": ds["metadata"].get("generation", 1)}
    extra_counts = {"numberAvailable": ready, "updatedNumberScheduled": updated,
                    "numberUnavailable": max(0, len(wanted) - ready)}
    status.update({k: v for k, v in extra_counts.items() if v})
    set_status(view, view.get("DaemonSet", ds["metadata"]["name"], ds["metadata"]["namespace"])
               or ds, status)


def _rolling_update(view: View, ds: dict[str, Any], hash_: str, wanted: list[str]) -> None:
    """``rollingUpdate`` (update.go): delete out-of-date pods while at most ``maxUnavailable``
    (default 1) of the wanted nodes lack an available pod; OnDelete deletes nothing."""
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return
    most = _max_unavailable(strategy, len(wanted))
    pods = [p for p in owned_pods(view, ds) if is_active(p)]
    by_node = {_target_node(p): p for p in pods}
    unavailable = sum(1 for node in wanted if node not in by_node or not is_ready(by_node[node]))
    for pod in _old_pods(by_node, wanted, hash_):
        if is_ready(pod) and unavailable >= most:
            break
        if is_ready(pod):
            unavailable += 1
        delete_pod(view, pod, COMPONENT, ds)


def _max_unavailable(strategy: dict[str, Any], desired: int) -> int:
    """``updatedDesiredNodeCounts``' maxUnavailable: the number or percentage of ``desired``
    (rounded up), 1 when it does not resolve."""
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)
    most = scaled_value(value, desired, True)
    return 1 if most is None else most


def _old_pods(by_node: dict[str, dict[str, Any]], wanted: list[str],
              hash_: str) -> list[dict[str, Any]]:
    """The wanted nodes' pods of another revision, in the wanted nodes' order."""
    return [by_node[node] for node in wanted
            if node in by_node and labels_of(by_node[node]).get(HASH_LABEL) != hash_]


# ---- ControllerRevisions (pkg/controller/daemon/update.go constructHistory) ---------------------

def revision_data(ds: dict[str, Any]) -> dict[str, Any]:
    """``getPatch``: the template as a strategic-merge patch that replaces it (what ``kubectl
    rollout undo`` applies back)."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revisions(view: View, ds: dict[str, Any]) -> list[dict[str, Any]]:
    """This DaemonSet's ControllerRevisions, by revision number."""
    uid = ds["metadata"]["uid"]
    owned = [r for r in view.list("ControllerRevision", ds["metadata"]["namespace"])
             if (controller_of(r) or {}).get("uid") == uid]
    return sorted(owned, key=lambda r: int(r.get("revision", 0)))


def sync_history(view: View, ds: dict[str, Any]) -> dict[str, Any]:
    """The ControllerRevision of the current template, created with the next revision number,
    or an old one with an equal template raised to it (a rollback); old revisions beyond
    ``revisionHistoryLimit`` (default 10) that no pod uses are deleted."""
    meta = ds["metadata"]
    data = revision_data(ds)
    history = revisions(view, ds)
    top = max((int(r.get("revision", 0)) for r in history), default=0)
    current = next((r for r in history if dumps(canonical(r.get("data")))
                    == dumps(canonical(data))), None)
    if current is None:
        hash_ = template_hash(canonical(data))
        labels = {**labels_of((ds.get("spec") or {}).get("template") or {}), HASH_LABEL: hash_}
        current = write.create(view, {
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": f"{meta['name']}-{hash_}", "namespace": meta["namespace"],
                         "labels": labels, "annotations": dict(meta.get("annotations") or {}),
                         "ownerReferences": [owner_reference(ds)]},
            "data": data, "revision": top + 1})
    elif int(current.get("revision", 0)) < top:
        raised = copy.deepcopy(current)
        raised["revision"] = top + 1
        write.update(view, raised)
        current = raised
    _cleanup_history(view, ds, current)
    return current


def _cleanup_history(view: View, ds: dict[str, Any], current: dict[str, Any]) -> None:
    limit = int((ds.get("spec") or {}).get("revisionHistoryLimit", 10))
    live = {labels_of(p).get(HASH_LABEL) for p in owned_pods(view, ds) if is_active(p)}
    old = [r for r in revisions(view, ds) if r["metadata"]["name"] != current["metadata"]["name"]
           and labels_of(r).get(HASH_LABEL) not in live]
    for rev in old[:max(0, len(old) - limit)]:
        write.delete(view, "ControllerRevision", rev["metadata"]["name"], rev["metadata"]["namespace"])


def _target_node(pod: dict[str, Any]) -> str:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        result: str = spec["nodeName"]
        return result
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                value: str = field["values"][0]
                return value
    return ""


def _affinity_for(affinity: dict[str, Any] | None, node_name: str) -> dict[str, Any]:
    """The template's affinity with its required node terms replaced by metadata.name=node."""
    affinity = copy.deepcopy(affinity or {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    return affinity
