"""Helpers every controller shares: owner references, pod phases, creating pods from templates.

Controllers are functions ``reconcile(view) -> None`` that read the :class:`View` and change it
through ``create`` / ``update`` / ``delete``; ``settle`` runs them until the view stops changing.
Pods a controller creates go through admission (priority, LimitRange, quota) like any other
create; a rejection becomes a ``FailedCreate`` Warning event on the owner, as upstream.

Neighbours: used by every module in ``cluster.controllers``.
"""

from __future__ import annotations

from typing import Any

import copy
import hashlib
import logging

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.store import dumps, seconds_of
from gpusched.cluster.apiserver.notes import capacity_changed
from gpusched.cluster.apiserver.view import NAME_ALPHABET, Key, View, object_namespace
from gpusched.errors import GpuschedError
from gpusched.objects.selectors import matches, selector_from_dict
from gpusched.objects.types import Taint

log = logging.getLogger(__name__)

TERMINAL = ("Succeeded", "Failed")


def is_terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL


def is_running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def is_active(pod: dict[str, Any]) -> bool:
    """``controller.IsPodActive``: not Succeeded/Failed and not being deleted."""
    return not is_terminal(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def is_ready(pod: dict[str, Any]) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True (Running pods without conditions
    count as ready)."""
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True" and status.get("phase") == "Running"
    return status.get("phase") == "Running"


def labels_of(body: dict[str, Any]) -> dict[str, str]:
    return dict((body.get("metadata") or {}).get("labels") or {})


def controller_of(body: dict[str, Any]) -> dict[str, Any] | None:
    for ref in (body.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            result: dict[str, Any] | None = ref
            return result
    return None


def owned_pods(view: View, owner: dict[str, Any]) -> list[dict[str, Any]]:
    """Pods whose controller is ``owner`` (by uid), sorted by (creationTimestamp, name).

    Read from the view's owner index (``View.dependents``), as upstream's controllers read the
    pod lister through their controller ref, not by listing the namespace's pods."""
    ns = object_namespace(owner.get("kind", ""), owner)
    pods = [view.objects[key] for key in view.dependents(owner["metadata"]["uid"])
            if key[0] == "Pod" and key[1] == ns]
    return sorted(pods, key=creation_order)


def creation_order(body: dict[str, Any]) -> tuple[Any, ...]:
    meta = body.get("metadata") or {}
    return (meta.get("creationTimestamp", ""), meta.get("name", ""))


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    parsed = selector_from_dict(selector)
    return parsed is not None and matches(parsed, labels)


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def template_hash(template: dict[str, Any]) -> str:
    """A 10-character, deterministic hash of a pod template (the ``pod-template-hash`` label)."""
    digest = hashlib.sha256(dumps(template).encode()).digest()
    return "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in digest[:10])


def create_from_template(view: View, owner: dict[str, Any], template: dict[str, Any], name: str,
                         component: str, extra_labels: dict[str, str] | None = None,
                         spec_patch: dict[str, Any] | None = None, success_text: str = "",
                         failure_prefix: str = "Error creating: ") -> dict[str, Any] | None:
    """Create a pod from ``template`` owned by ``owner``; admission failures become events
    (``failure_prefix`` + the error; ``success_text``: the success event's text, else
    ``Created pod: <name>``)."""
    ns = object_namespace(owner["kind"], owner)
    tmeta = template.get("metadata") or {}
    meta = {"name": name, "namespace": ns,
            "labels": {**(tmeta.get("labels") or {}), **(extra_labels or {})},
            "ownerReferences": [owner_reference(owner)]}
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    spec = copy.deepcopy(template.get("spec") or {})
    spec.update(spec_patch or {})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
           "status": {"phase": "Pending"}}
    try:
        created = write.create(view, pod, owned=True)
    except GpuschedError as err:
        view.record_event(owner, "FailedCreate", f"{failure_prefix}{err}", "Warning", component)
        return None
    view.record_event(owner, "SuccessfulCreate", success_text or f"Created pod: {name}", "Normal", component)
    return created


DEFAULT_GRACE_SECONDS = 30   # SetDefaults_PodSpec: terminationGracePeriodSeconds


def grace_period(pod: dict[str, Any], requested: int | None = None) -> int:
    """The grace period a delete gives ``pod``, as ``CheckGracefulDelete`` in kubernetes
    ``pkg/registry/core/pod/strategy.go`` decides it: the request's ``gracePeriodSeconds``, else
    the pod's ``terminationGracePeriodSeconds`` (default 30); 0 for a pod never scheduled
    (``spec.nodeName`` empty) or already Succeeded/Failed."""
    spec = pod.get("spec") or {}
    if requested is None:
        requested = spec.get("terminationGracePeriodSeconds")
    period = DEFAULT_GRACE_SECONDS if requested is None else max(0, int(requested))
    if not spec.get("nodeName") or is_terminal(pod):
        return 0
    return period


def is_terminating(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def delete_pod(view: View, pod: dict[str, Any], component: str = "", owner: dict[str, Any] | None = None,
               grace: int | None = None) -> bool:
    """Delete a pod gracefully (``grace`` None = the pod's own period; 0 = at once).

    A graceful delete sets ``metadata.deletionTimestamp`` (now + period) and
    ``deletionGracePeriodSeconds`` and keeps the pod, still holding its node's resources and
    devices, until the kubelet's part (``pod_lifecycle``) removes it at that time: watchers see
    MODIFIED, then DELETED. A second delete may only shorten the period, moving the timestamp by
    the difference (kubernetes ``staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go``
    ``BeforeDelete``); anything else changes nothing. Returns True when the pod changed."""
    meta = pod["metadata"]
    period = grace_period(pod, grace)
    deadline = view.now() + period
    if is_terminating(pod):
        old_period = int(meta.get("deletionGracePeriodSeconds") or 0)
        if period >= old_period:
            return False
        deadline = seconds_of(meta["deletionTimestamp"]) - old_period + period
    elif is_running(pod):
        for container in (pod.get("spec") or {}).get("containers") or []:
            view.record_event(pod, "Killing", f"Stopping container {container.get('name', '')}",
                              "Normal", "kubelet")
    if period == 0 or deadline <= view.now():
        end_termination(view, pod)
    else:
        new = copy.deepcopy(pod)
        new["metadata"]["deletionTimestamp"] = view.timestamp(deadline)
        new["metadata"]["deletionGracePeriodSeconds"] = period
        write.update(view, new)
    if owner is not None:
        view.record_event(owner, "SuccessfulDelete", f"Deleted pod: {meta['name']}", "Normal",
                          component)
    return True


def set_disruption_target(view: View, pod: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    """Add the ``DisruptionTarget`` condition (kubernetes ``pkg/apis/core/types.go``
    ``DisruptionTarget``: PreemptionByScheduler, DeletionByTaintManager, EvictionByEvictionAPI,
    DeletionByPodGC) before a disruptive delete; returns the updated pod."""
    new = copy.deepcopy(pod)
    status = new.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
    conditions.append({"type": "DisruptionTarget", "status": "True", "reason": reason,
                       "message": message, "lastTransitionTime": view.timestamp()})
    status["conditions"] = conditions
    write.update_status(view, new)
    return view.get("Pod", new["metadata"]["name"], new["metadata"].get("namespace", "default")) or new


def end_termination(view: View, pod: dict[str, Any]) -> None:
    """The kubelet has stopped the pod's containers: the pod is removed, or, while it has
    finalizers (a Job's ``batch.kubernetes.io/job-tracking``), kept with ``deletionTimestamp``
    and, when it had not finished, the kubelet's end state for a killed pod (phase Failed,
    containers terminated with exit code 137) until they are removed (:func:`remove_finalizer`),
    as the API server does."""
    meta = pod["metadata"]
    if meta.get("finalizers"):
        _mark_deleted(view, pod)
    else:
        write.delete(view, "Pod", meta["name"], meta.get("namespace", "default"))


def _mark_deleted(view: View, pod: dict[str, Any]) -> None:
    new = copy.deepcopy(pod)
    new["metadata"].setdefault("deletionTimestamp", view.timestamp())
    new["metadata"].setdefault("deletionGracePeriodSeconds", 0)
    status = new.setdefault("status", {})
    if not is_terminal(pod):
        now = view.timestamp()
        status["phase"] = "Failed"
        status["containerStatuses"] = [
            {"name": c.get("name", ""), "image": c.get("image", ""), "ready": False,
             "restartCount": _restart_count(pod, c.get("name", "")), "started": False,
             "state": {"terminated": {"exitCode": 137, "reason": "Error",
                                      "startedAt": status.get("startTime", now),
                                      "finishedAt": now}}}
            for c in (pod.get("spec") or {}).get("containers") or []]
        for cond in status.get("conditions") or []:
            if cond.get("type") in ("Ready", "ContainersReady"):
                cond.update(status="False", reason="PodFailed")
    write.update_status(view, new)
    capacity_changed(view, new)


def _restart_count(pod: dict[str, Any], name: str) -> int:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == name:
            return int(cs.get("restartCount", 0) or 0)
    return 0


def remove_finalizer(view: View, pod: dict[str, Any], finalizer: str) -> None:
    """Drop one finalizer; a pod being deleted with none left is removed."""
    current = view.get("Pod", pod["metadata"]["name"], pod["metadata"].get("namespace", "default"))
    if current is None or finalizer not in (current["metadata"].get("finalizers") or []):
        return
    new = copy.deepcopy(current)
    new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != finalizer]
    if not new["metadata"]["finalizers"]:
        del new["metadata"]["finalizers"]
        if new["metadata"].get("deletionTimestamp"):
            write.delete(view, "Pod", new["metadata"]["name"], new["metadata"].get("namespace", "default"))
            return
    write.update(view, new)


def set_status(view: View, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Update ``status`` if it changed; returns the current body."""
    if body.get("status") == status:
        return body
    new = copy.deepcopy(body)
    new["status"] = status
    write.update_status(view, new)
    return new


def collect_garbage(view: View, changes: Changes | None = None) -> None:
    """Background cascading deletion: dependents whose controller no longer exists go. Every
    object, or (``changes``) the changed ones and the dependents of deleted ones."""
    candidates, uids = _gc_candidates(view, changes)
    for (kind, ns, name), body in candidates:
        ref = controller_of(body)
        if ref is not None and ref.get("uid") not in uids and (kind, ns, name) in view.objects:
            if kind == "Pod":
                delete_pod(view, body)
            else:
                write.delete(view, kind, name, ns)


def _gc_candidates(view: View, changes: Changes | None) -> tuple[list[tuple[Key, dict[str, Any]]], set[Any]]:
    """The objects to check (sorted by key) and the uids of owners that exist: all of them, or
    the changed objects and the dependents of deleted ones with their live controllers."""
    if changes is None:
        uids = {b["metadata"].get("uid") for b in view.objects.values()}
        return sorted(view.objects.items()), uids
    keys = _changed_and_dependents_of_deleted(view, changes)
    candidates = [(k, view.objects[k]) for k in sorted(keys) if k in view.objects]
    uids = {(controller_of(b) or {}).get("uid") for _, b in candidates}
    return candidates, {u for u in uids if u and view.by_uid(u) is not None}


def _changed_and_dependents_of_deleted(view: View, changes: Changes) -> set[Key]:
    """The changed objects that exist and the dependents of the deleted ones."""
    keys = {k for k in changes.keys if k in view.objects}
    for key in changes.keys:
        gone = view.gone(key) if key not in view.objects else None
        if gone is not None:
            keys.update(view.dependents((gone.get("metadata") or {}).get("uid", "")))
    return keys


# ---- nodes and disruption budgets (the node lifecycle controller, DaemonSets, the autoscaler)

def node_taints(node: dict[str, Any]) -> list[Taint]:
    """The Node's ``spec.taints`` as ``Taint`` values."""
    return [Taint(t.get("key", ""), t.get("value", "") or "", t.get("effect", ""))
            for t in (node.get("spec") or {}).get("taints") or []]


def ready_status(node: dict[str, Any]) -> str:
    """The Ready condition's status: True, False or Unknown (True when not reported yet)."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status") or "Unknown")
    return "True"


def pdb_pods(view: View, pdb: dict[str, Any]) -> list[dict[str, Any]]:
    """The live pods a PodDisruptionBudget selects (the disruption controller's ``getPodsForPdb``;
    the Cluster Autoscaler's drain reads them too)."""
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        selector = {}
    return [p for p in view.list("Pod", pdb["metadata"]["namespace"])
            if not is_terminal(p) and selector_matches(selector, labels_of(p))]
