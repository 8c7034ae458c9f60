"""``explain`` for a workload (Deployment, ReplicaSet, Job, DaemonSet): why its pods do not run.

A controller whose pods are refused at admission never gets a Pending pod to explain: kube's
ReplicaSet, Job and DaemonSet controllers create pods through ``RealPodControl.createPods``
(kubernetes ``pkg/controller/controller_utils.go``), and a refused create becomes a Warning event
``FailedCreate`` ``Error creating: <the API error>`` on the controller (for a ReplicaSet also the
``ReplicaFailure`` condition of ``calculateStatus`` in ``pkg/controller/replicaset/replica_set_utils.go``).
``workload_facts(view, obj)`` turns that into facts:

- ``workload``: how many pods the controller wants and has (``deployment/web: 2 pods wanted, 0
  exist``);
- ``failed-create``: per controller that creates the pods (a Deployment's ReplicaSets), the last
  ``FailedCreate`` event when no pod was created after it, its message verbatim, and the object to
  change: the ``ResourceQuota`` named in ``exceeded quota: <name>, requested: ...`` /
  ``failed quota: <name>: must specify ...`` (``plugin/pkg/admission/resourcequota/controller.go``),
  or the ``LimitRange`` whose item yields ``maximum <res> usage per <Type> is ...`` /
  ``minimum ...`` / ``<res> max limit to request ratio per <Type> is ...``
  (``plugin/pkg/admission/limitranger/admission.go``), which does not name itself.

``pending_pod(view, obj)``: the workload's oldest Pending pod, explained as any pod.

Neighbours: ``cluster.Cluster.explain_workload``; events from ``View.record_event``, recorded by
``controllers.common.create_from_template``.
"""

from __future__ import annotations

from typing import Any

import re

from gpusched.cluster.controllers.common import controller_of
from gpusched.cluster.apiserver.view import View
from gpusched.kueue.jobframework import QUEUE_LABEL, workload_name
from gpusched.scheduler.explain import Fact

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "Job", "DaemonSet")
QUOTA = re.compile(r"(?:exceeded quota|failed quota): ([^,:]+)[,:]")
LIMIT = re.compile(r"(?:(minimum|maximum) (\S+) usage per (\w+) is"
                   r"|(\S+) max limit to request ratio per (\w+) is)")
LIMIT_FIELD = {"minimum": "min", "maximum": "max"}


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _ref(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind', '').lower()}/{_meta(obj).get('name', '')}"


def _owned(view: View, kind: str, owner: dict[str, Any]) -> list[dict[str, Any]]:
    uid = _meta(owner).get("uid")
    return sorted((o for o in view.list(kind, _meta(owner).get("namespace", "default"))
                   if (controller_of(o) or {}).get("uid") == uid),
                  key=lambda o: (_meta(o).get("creationTimestamp", ""), _meta(o).get("name", "")))


def creators(view: View, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects that create the workload's pods: a Deployment's ReplicaSets, else itself."""
    return _owned(view, "ReplicaSet", obj) if obj.get("kind") == "Deployment" else [obj]


def workload_pods(view: View, obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in creators(view, obj) for p in _owned(view, "Pod", c)]


def wanted(view: View, obj: dict[str, Any]) -> int | None:
    """Pods the controller wants now (None: a DaemonSet, one per eligible node)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if obj.get("kind") in ("Deployment", "ReplicaSet"):
        return int(spec.get("replicas", 1))
    if obj.get("kind") == "Job":
        if spec.get("suspend") or any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                                      for c in status.get("conditions") or []):
            return 0
        left = int(spec.get("completions") or spec.get("parallelism") or 1) - int(status.get("succeeded", 0))
        return max(0, min(int(spec.get("parallelism", 1)), left))
    return None


def last_failed_create(view: View, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The last ``FailedCreate`` event of ``obj`` unless a pod was created after it (upstream
    removes the ReplicaFailure condition once ``manageReplicas`` succeeds)."""
    uid = _meta(obj).get("uid")
    last = None
    for event in view.list_events(_meta(obj).get("namespace") or "default"):
        if (event.get("involvedObject") or {}).get("uid") == uid and \
                event.get("reason") in ("FailedCreate", "SuccessfulCreate"):
            last = event
    return last if last is not None and last["reason"] == "FailedCreate" else None


def refused_by(view: View, namespace: str, message: str) -> tuple[str, str] | None:
    """(kind, namespace/name) of the admission object a FailedCreate message names or implies."""
    found = QUOTA.search(message)
    if found:
        return "ResourceQuota", f"{namespace}/{found.group(1)}"
    found = LIMIT.search(message)
    if not found:
        return None
    field, resource, scope = ((LIMIT_FIELD[found.group(1)], found.group(2), found.group(3))
                              if found.group(1) else ("maxLimitRequestRatio", found.group(4), found.group(5)))
    for lr in view.list("LimitRange", namespace):
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") == scope and resource in (item.get(field) or {}):
                return "LimitRange", f"{namespace}/{_meta(lr).get('name', '')}"
    return None


def failed_create_fact(view: View, creator: dict[str, Any]) -> Fact | None:
    event = last_failed_create(view, creator)
    if event is None:
        return None
    namespace = _meta(creator).get("namespace") or "default"
    message, count = event.get("message", ""), int(event.get("count", 1))
    refused = refused_by(view, namespace, message)
    change = f"{refused[0]} {refused[1]}" if refused else ""
    times = f", {count} times" if count > 1 else ""
    text = f"{_ref(creator)} cannot create pods (FailedCreate{times}): {message}"
    if change:
        text += f"; change {change} or the pod template"
    return Fact("failed-create", text, (
        ("object", _ref(creator)), ("reason", "FailedCreate"), ("message", message), ("count", count),
        ("refusedBy", {"kind": refused[0], "name": refused[1]} if refused else None),
        ("change", change or None)))


def workload_facts(view: View, obj: dict[str, Any]) -> list[Fact]:
    pods = [p for p in workload_pods(view, obj)
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    phases = [(p.get("status") or {}).get("phase", "Pending") for p in pods]
    running, pending = phases.count("Running"), phases.count("Pending")
    want = wanted(view, obj)
    head = f"{_ref(obj)}: " + (f"{want} pod(s) wanted, " if want is not None else "") + \
        f"{len(pods)} exist ({running} running, {pending} pending)"
    out = [Fact("workload", head, (("object", _ref(obj)), ("wanted", want), ("pods", len(pods)),
                                   ("running", running), ("pending", pending)))]
    for creator in creators(view, obj):
        fact = failed_create_fact(view, creator)
        if fact is not None:
            out.append(fact)
    queued = kueue_fact(view, obj)
    if queued is not None:
        out.append(queued)
    return out


def kueue_fact(view: View, job: dict[str, Any]) -> Fact | None:
    """A queued Job: admitted by which ClusterQueue on which flavors, or why it waits in its
    queue, in its Workload's QuotaReserved words (the flavor, the resource, how much more, and
    ``Pending the preemption of N workload(s)`` when it preempts)."""
    meta = _meta(job)
    queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
    if job.get("kind") != "Job" or not queue:
        return None
    wl = view.get("Workload", workload_name(str(meta.get("name", "")), str(meta.get("uid", ""))),
                  str(meta.get("namespace", "default")))
    if wl is None:
        return Fact("kueue", f"queued in LocalQueue {queue}: no Workload yet", (("queue", queue),))
    status = wl.get("status") or {}
    admission = status.get("admission")
    if admission:
        flavors = sorted({f"{res}={flavor}" for ps in admission.get("podSetAssignments") or ()
                          for res, flavor in (ps.get("flavors") or {}).items()})
        return Fact("kueue", f"admitted by ClusterQueue {admission.get('clusterQueue')} "
                             f"(flavors: {', '.join(flavors)})",
                    (("queue", queue), ("clusterQueue", admission.get("clusterQueue")), ("flavors", flavors)))
    reserved: dict[str, Any] = next((c for c in status.get("conditions") or () if c.get("type") == "QuotaReserved"), {})
    reason, message = reserved.get("reason", "Pending"), reserved.get("message", "not yet considered")
    return Fact("kueue", f"waits in LocalQueue {queue} (Workload {wl['metadata']['name']}, "
                         f"QuotaReserved=False, {reason}): {message}",
                (("queue", queue), ("workload", wl["metadata"]["name"]), ("reason", reason), ("message", message)))


def pending_pod(view: View, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The workload's oldest Pending, unbound pod (the one ``explain`` explains), or None."""
    for pod in workload_pods(view, obj):
        if not (pod.get("spec") or {}).get("nodeName") and \
                (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            return pod
    return None
