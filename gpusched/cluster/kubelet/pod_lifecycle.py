"""Pod lifecycle (the kubelet's part): bound pods start, run for their duration, and finish.

- A pod bound to an existing node (``spec.nodeName``) and still Pending has passed kubelet
  admission (``kubelet.admission`` runs just before, failing those the kubelet rejects) and is
  Running at once: ``status.startTime``, the annotation ``gpusched.io/start-time`` (virtual
  seconds), containerStatuses, conditions PodScheduled/Initialized/ContainersReady/Ready. A pod
  bound to a node that does not exist has no kubelet and stays Pending, as upstream. A pod with
  ResourceClaims starts only once the kubelet could prepare them (``kubelet.dra_prepare``:
  allocated and reserved for it, the driver's config valid); until then it stays Pending with
  a Warning event ``FailedPrepareDynamicResources`` and is retried when one of its claims
  changes.
- Run time: the annotation ``gpusched.io/duration`` (``30m``), else a container command
  ``sleep N`` (also ``sh -c "sleep N"``); without either the pod runs until deleted. At
  ``start + duration`` the pod is Succeeded (containers terminated, reason Completed). Every pod
  with a run time finishes this way, also under restartPolicy Always (documented simplification:
  gpusched models work that ends, not container restarts), unless it has a non-zero
  ``gpusched.io/exit-code``: then ``kubelet.containers`` fails it or restarts it in place.

- Graceful termination (the kubelet's side of ``controllers.common.delete_pod``): a pod with
  ``metadata.deletionTimestamp`` is Terminating; it keeps its node's resources and devices and is
  removed (DELETED) when that time comes, or as soon as its containers have exited (its run time
  ends first, or it was already Succeeded/Failed). A Terminating pod is never started.

Neighbours: ``controllers.workloads.job`` counts the Succeeded/Failed pods; ``cluster.scheduling``
frees their devices.
"""

from __future__ import annotations

from typing import Any

import functools
import re

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.kubelet import containers
from gpusched.cluster.controllers.common import (end_termination, is_running, is_terminal,
                                                 is_terminating)
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.kubelet.node_status import node_ip, pod_ip
from gpusched.cluster.apiserver.notes import capacity_changed
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError
from gpusched.objects.duration import parse_duration
from gpusched.objects.pod import annotation_seconds
from gpusched.objects.tree import copy_sharing
from gpusched.objects.types import ANN_DURATION, ANN_START_TIME

_SLEEP = re.compile(r"(?:^|[;&|]\s*|\s)sleep\s+(\d+(?:\.\d+)?[smhd]?)\s*$")


def run_time(pod: dict[str, Any]) -> float | None:
    """Seconds the pod runs, or None for "until deleted"."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if ANN_DURATION in annotations:
        return _annotated_duration(str(annotations[ANN_DURATION]))
    longest = None
    for container in (pod.get("spec") or {}).get("containers") or []:
        words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        text = " ".join(words)
        match = _SLEEP.search(text)
        if match:
            try:
                seconds = parse_duration(match.group(1))
            except GpuschedError:
                continue
            longest = seconds if longest is None else max(longest, seconds)
    return longest


@functools.lru_cache(maxsize=4096)
def _annotated_duration(text: str) -> float | None:
    try:
        return parse_duration(text)
    except GpuschedError:
        return None


def start_time(pod: dict[str, Any]) -> float | None:
    return annotation_seconds(pod, ANN_START_TIME)


def end_time(pod: dict[str, Any]) -> float | None:
    if not is_running(pod):
        return None
    start, duration = start_time(pod), run_time(pod)
    if start is None or duration is None:
        return None
    return start + duration


def completion_due(view: View, pod: dict[str, Any]) -> float | None:
    """Timer (``cluster.clock.timers``): when this running pod's run time is up."""
    return None if is_terminating(pod) else end_time(pod)


def termination_due(view: View, pod: dict[str, Any]) -> float | None:
    """Timer (``cluster.clock.timers``): when the kubelet removes this Terminating pod: at its
    ``deletionTimestamp`` (the grace period ends), or earlier when its containers exit first."""
    meta = pod.get("metadata") or {}
    stamp = meta.get("deletionTimestamp")
    if not stamp:
        return None
    if is_terminal(pod):      # containers stopped: gone now, or when its finalizers are removed
        return None if meta.get("finalizers") else view.now()
    deadline = seconds_of(stamp)
    end = end_time(pod)
    return deadline if end is None else min(deadline, end)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Start bound pods (kubelet admission ran before, ``kubelet.admission``) and finish those
    whose time is up: every pod, or (``changes``) the changed ones and those of changed nodes."""
    for pod in view.list("Pod") if changes is None else changes.pods() + claim_pods(changes):
        phase = (pod.get("status") or {}).get("phase", "Pending")
        node_name = (pod.get("spec") or {}).get("nodeName")
        if is_terminating(pod):
            due = termination_due(view, pod)
            if due is not None and due <= view.now():
                end_termination(view, pod)
        elif phase == "Pending" and node_name and view.get("Node", node_name) is not None:
            problem = _prepare_problem(view, pod)
            if problem is None:
                start(view, pod)
            else:         # the containers wait (ContainerCreating); retried on a claim change
                from gpusched.cluster.kubelet.dra_prepare import PREPARE_FAILED
                view.record_event(pod, PREPARE_FAILED, problem, "Warning", "kubelet")
        elif phase == "Running":
            end = end_time(pod)
            if end is not None and end <= view.now():
                finish(view, pod, end)


def _prepare_problem(view: View, pod: dict[str, Any]) -> str | None:
    """``kubelet.dra_prepare.prepare_problem``: a pod that names no ResourceClaim (and no
    KEP-5004 claim in its status) has nothing to prepare, and does not import the DRA side of
    the kubelet (most pods: a one-pod ``apply`` without DRA)."""
    claims = (pod.get("spec") or {}).get("resourceClaims")
    extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get(
        "resourceClaimName")
    if not claims and not extended:
        return None
    from gpusched.cluster.kubelet.dra_prepare import prepare_problem
    return prepare_problem(view, pod)


def claim_pods(changes: Changes) -> list[dict[str, Any]]:
    """The live pods changed ResourceClaims are reserved for, not changed themselves: a pod
    waiting for its claims is started once they are allocated and reserved for it."""
    changed = {key for key in changes.keys if key[0] == "Pod"}
    keys: set[tuple[str, str, str]] = set()
    for key in changes.keys:
        if key[0] == "ResourceClaim":
            claim = changes.view.objects.get(key) or {}
            keys.update(("Pod", key[1], str(r.get("name", "")))
                        for r in (claim.get("status") or {}).get("reservedFor") or []
                        if isinstance(r, dict) and r.get("resource") == "pods")
    return [changes.view.objects[k] for k in sorted(keys - changed) if k in changes.view.objects]


def _conditions(view: View, pod: dict[str, Any], ready: str) -> list[dict[str, Any]]:
    now = view.timestamp()
    scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                      if c.get("type") == "PodScheduled"), None)
    out = [scheduled or {"type": "PodScheduled", "status": "True", "lastTransitionTime": now}]
    for ctype in ("Initialized", "ContainersReady", "Ready"):
        status = "True" if ctype == "Initialized" else ready
        cond = {"type": ctype, "status": status, "lastTransitionTime": now}
        if status == "False":
            cond["reason"] = "PodCompleted"
        out.append(cond)
    return out


def start(view: View, pod: dict[str, Any]) -> None:
    new = copy_sharing(pod, "spec")      # a status write: the spec is the stored one
    now = view.timestamp()
    new["metadata"].setdefault("annotations", {})[ANN_START_TIME] = repr(float(view.now()))
    status = new.setdefault("status", {})
    meta = pod.get("metadata") or {}
    node_name = (pod.get("spec") or {}).get("nodeName", "")
    status.update({"phase": "Running", "startTime": now, "hostIP": node_ip(node_name),
                   "podIP": pod_ip(meta.get("namespace", "default"), meta.get("name", "")),
                   "conditions": _conditions(view, pod, "True")})
    status["containerStatuses"] = [
        {"name": c.get("name", ""), "image": c.get("image", ""), "ready": True,
         "restartCount": 0, "started": True, "state": {"running": {"startedAt": now}}}
        for c in (pod.get("spec") or {}).get("containers") or []]
    status.pop("nominatedNodeName", None)
    write.update_status(view, new)
    for c in (pod.get("spec") or {}).get("containers") or []:
        view.record_event(new, "Started", f"Started container {c.get('name', '')}", "Normal",
                          "kubelet")


def finish(view: View, pod: dict[str, Any], end: float) -> None:
    if containers.end_run(view, pod, end):   # a non-zero exit code: restartPolicy decides
        return
    new = copy_sharing(pod, "spec")
    status = new["status"]
    started = status.get("startTime", view.timestamp())
    finished = view.timestamp(end)
    status["phase"] = "Succeeded"
    status["conditions"] = _conditions(view, pod, "False")
    status["containerStatuses"] = [
        {"name": c.get("name", ""), "image": c.get("image", ""), "ready": False,
         "restartCount": 0, "started": False,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                  "finishedAt": finished}}}
        for c in (pod.get("spec") or {}).get("containers") or []]
    write.update_status(view, new)
    capacity_changed(view, new)

