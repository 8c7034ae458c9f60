"""DaemonSet controller: one pod per eligible node, bound through the scheduler.

A node is eligible when it matches the template's nodeSelector and required node affinity and
its NoSchedule/NoExecute taints are tolerated (the DaemonSet's default tolerations for
``node.kubernetes.io/unschedulable`` etc. are added, as upstream, so cordoned nodes still get
their pod). Each pod is created with a required node affinity on ``metadata.name`` (upstream's
default since 1.12) and bound by the scheduler. Pods on nodes no longer eligible are deleted.
Status: desiredNumberScheduled, currentNumberScheduled, numberReady, numberAvailable,
numberMisscheduled.

Neighbours: ``controllers.common``; ``cluster.scheduling`` binds the pods.
"""

from __future__ import annotations

import copy

from gpusched.cluster.controllers.common import (create_from_template, delete_pod, is_running,
                                                 is_terminal, owned_pods, set_status)
from gpusched.cluster.view import View
from gpusched.objects.pod import pod_info
from gpusched.objects.selectors import map_matches, node_selector_matches
from gpusched.objects.types import Taint

COMPONENT = "daemonset-controller"
DEFAULT_TOLERATIONS = [
    {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": e}
    for k, e in (("not-ready", "NoExecute"), ("unreachable", "NoExecute"),
                 ("disk-pressure", "NoSchedule"), ("memory-pressure", "NoSchedule"),
                 ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule"))]


def node_taints(node: dict) -> list[Taint]:
    return [Taint(t.get("key", ""), t.get("value", "") or "", t.get("effect", ""))
            for t in (node.get("spec") or {}).get("taints") or []]


def eligible(template_pod: dict, node: dict) -> bool:
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


def reconcile(view: View) -> None:
    for ds in view.list("DaemonSet"):
        reconcile_one(view, ds)


def reconcile_one(view: View, ds: dict) -> None:
    spec = ds.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    tspec = template.setdefault("spec", {})
    tolerations = tspec.setdefault("tolerations", [])
    for default in DEFAULT_TOLERATIONS:
        if default not in tolerations:
            tolerations.append(default)
    probe = {"kind": "Pod", "metadata": {"name": "probe", **(template.get("metadata") or {})},
             "spec": tspec}
    pods_by_node: dict[str, list[dict]] = {}
    for pod in owned_pods(view, ds):
        if not is_terminal(pod):
            target = _target_node(pod)
            pods_by_node.setdefault(target, []).append(pod)
    nodes = view.list("Node")
    wanted = [n["metadata"]["name"] for n in nodes if eligible(probe, n)]
    name = ds["metadata"]["name"]
    for node_name in wanted:
        if node_name not in pods_by_node:
            patch = {"affinity": _affinity_for(tspec.get("affinity"), node_name),
                     "tolerations": tolerations}
            create_from_template(view, ds, template, f"{name}-{view.random_suffix()}",
                                 COMPONENT, spec_patch=patch)
    for node_name, pods in sorted(pods_by_node.items()):
        extra = pods if node_name not in wanted else pods[1:]
        for pod in extra:
            delete_pod(view, pod, COMPONENT, ds)
    current = [p for p in owned_pods(view, ds) if not is_terminal(p)]
    ready = sum(1 for p in current if is_running(p))
    scheduled = sum(1 for p in current if (p.get("spec") or {}).get("nodeName"))
    set_status(view, view.get("DaemonSet", name, ds["metadata"]["namespace"]) or ds, {
        "desiredNumberScheduled": len(wanted), "currentNumberScheduled": scheduled,
        "numberReady": ready, "numberAvailable": ready, "numberMisscheduled": 0,
        "updatedNumberScheduled": scheduled,
        "observedGeneration": ds["metadata"].get("generation", 1)})


def _target_node(pod: dict) -> str:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return field["values"][0]
    return ""


def _affinity_for(affinity: dict | None, node_name: str) -> dict:
    """The template's affinity with its required node terms replaced by metadata.name=node."""
    affinity = copy.deepcopy(affinity or {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    return affinity
