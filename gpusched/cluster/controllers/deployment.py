"""Deployment controller: one ReplicaSet per pod template, the newest scaled to ``replicas``.

The ReplicaSet is ``<deployment>-<pod-template-hash>`` (10 characters, see
``common.template_hash``), labelled and selected with ``pod-template-hash``. A template change
creates a new ReplicaSet and scales the old ones to 0 at once (RollingUpdate's surge and
unavailability limits are not modelled). Status: replicas, updatedReplicas, readyReplicas,
availableReplicas, observedGeneration, conditions Available/Progressing.

Neighbours: creates ReplicaSets for ``controllers.replicaset``.
"""

from __future__ import annotations

import copy

from gpusched.cluster.controllers.common import owner_reference, set_status, template_hash
from gpusched.cluster.view import View

COMPONENT = "deployment-controller"


def reconcile(view: View) -> None:
    for deploy in view.list("Deployment"):
        reconcile_one(view, deploy)


def _owned_sets(view: View, deploy: dict) -> list[dict]:
    uid = deploy["metadata"]["uid"]
    return [rs for rs in view.list("ReplicaSet", deploy["metadata"]["namespace"])
            if any(r.get("uid") == uid for r in rs["metadata"].get("ownerReferences") or [])]


def reconcile_one(view: View, deploy: dict) -> None:
    meta, spec = deploy["metadata"], deploy.get("spec") or {}
    ns, want = meta["namespace"], int(spec.get("replicas", 1))
    template = copy.deepcopy(spec.get("template") or {})
    hash_ = template_hash(template)
    rs_name = f"{meta['name']}-{hash_}"
    for old in _owned_sets(view, deploy):
        if old["metadata"]["name"] != rs_name:
            _scale(view, deploy, old, 0)
    current = view.get("ReplicaSet", rs_name, ns)
    if current is None:
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = hash_
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = hash_
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": rs_name, "namespace": ns,
                           "labels": {**(template["metadata"].get("labels") or {})},
                           "annotations": {"deployment.kubernetes.io/revision": "1"},
                           "ownerReferences": [owner_reference(deploy)]},
              "spec": {"replicas": 0, "selector": selector, "template": template}}
        current = view.create(rs)
    _scale(view, deploy, current, want)
    sets = _owned_sets(view, deploy)
    total = sum(int((rs.get("status") or {}).get("replicas", 0)) for rs in sets)
    ready = sum(int((rs.get("status") or {}).get("readyReplicas", 0)) for rs in sets)
    updated = int(((view.get("ReplicaSet", rs_name, ns) or {}).get("status") or {}).get("replicas", 0))
    available = "True" if ready >= want else "False"
    set_status(view, deploy, {
        "observedGeneration": meta.get("generation", 1), "replicas": total,
        "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": ready,
        "unavailableReplicas": max(0, want - ready),
        "conditions": [
            {"type": "Available", "status": available,
             "reason": "MinimumReplicasAvailable" if available == "True"
             else "MinimumReplicasUnavailable",
             "message": "Deployment has minimum availability." if available == "True"
             else "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": f'ReplicaSet "{rs_name}" has successfully progressed.'}]})


def _scale(view: View, deploy: dict, rs: dict, replicas: int) -> None:
    old = int((rs.get("spec") or {}).get("replicas", 0))
    if old == replicas:
        return
    new = copy.deepcopy(rs)
    new["spec"]["replicas"] = replicas
    view.update(new)
    verb = "up" if replicas > old else "down"
    view.record_event(deploy, "ScalingReplicaSet",
                      f"Scaled {verb} replica set {rs['metadata']['name']} from {old} to {replicas}",
                      "Normal", COMPONENT)
