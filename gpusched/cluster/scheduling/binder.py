"""The scheduler's binder in the embedded cluster: a scheduling result written to the view.

- :func:`bind`: ``spec.nodeName``, assignment annotations, PodScheduled True, event
  ``Scheduled`` (and VolumeBinding's PreBind: delayed claims follow the pod);
- :func:`preempt`: victims get ``DisruptionTarget`` (PreemptionByScheduler), a ``Preempted``
  event and a graceful delete (Terminating for their ``terminationGracePeriodSeconds``, holding
  their resources); the preemptor gets ``status.nominatedNodeName`` and waits Pending until they
  are gone (``scheduler.preemption``: "not eligible due to a terminating pod on the nominated
  node"), then binds in the pass after their deletion;
- :func:`record_failure`: PodScheduled False reason Unschedulable with the FitError message and
  a Warning ``FailedScheduling`` event (a repeat of the same message bumps its count);
- :func:`record_attempt`: the attempt counters and histograms ``/metrics`` exposes;
- :class:`ViewBinder`: these as the scheduling loop's ``Binder``.

Neighbours: ``scheduler.scheduling_loop`` (calls the Binder), ``apiserver.view``,
``cluster.controllers`` (graceful delete, volumes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusched.cluster.controllers.storage import volumes
from gpusched.cluster.controllers.common import delete_pod
from gpusched.cluster.scheduling import dra
from gpusched.cluster.scheduling.profiles import SCHEDULER_NAME
from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.notes import capacity_changed
from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.objects.assignment import assignment_annotations
from gpusched.objects.pod import pod_info
from gpusched.objects.types import DeviceAssignment
from gpusched.objects.tree import copy_sharing

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import ScheduleResult
    from gpusched.scheduler.runner import Scheduler

PREEMPT_MESSAGE = f"{SCHEDULER_NAME}: preempting to accommodate a higher priority pod"


# preemption_victims ExponentialBuckets(1, 2, 7). gpusched.metrics.cluster_metrics exposes them.
ATTEMPT_BUCKETS = tuple(0.001 * 2 ** i for i in range(15))
VICTIM_BUCKETS = tuple(float(2 ** i) for i in range(7))


def record_attempt(view: View, scheduler: Scheduler, result: ScheduleResult, seconds: float) -> None:
    """Count one scheduling attempt in ``view.stats`` (persisted, so ``/metrics`` of any process
    sees every CLI call's attempts): by result and profile, its real duration in the histogram
    buckets above, and preemption attempts (PostFilter ran) and victims (a candidate was chosen).
    """
    from gpusched.scheduler.framework import Code
    outcome = ("scheduled" if result.scheduled else
               "error" if result.status.code == Code.ERROR else "unschedulable")
    key = f"{outcome}|{result.pod.scheduler_name}"
    stats = view.stats
    stats.setdefault("attempts", {})[key] = stats.get("attempts", {}).get(key, 0) + 1
    _observe(stats.setdefault("attempt_seconds", {}), key, seconds, ATTEMPT_BUCKETS)
    framework = scheduler.framework_for(result.pod)
    diagnosis = result.diagnosis
    if (outcome == "unschedulable" and framework is not None and framework.post_filter
            and diagnosis is not None):     # PostFilter runs after PreFilter rejections too
        stats["preemption_attempts"] = stats.get("preemption_attempts", 0) + 1
        if result.nominated_node:
            _observe(stats.setdefault("victims", {}), "", float(len(result.victims)),
                     VICTIM_BUCKETS)


def _observe(histograms: dict[str, Any], key: str, value: float, bounds: tuple[float, ...]) -> None:
    """A cumulative-free histogram: per-bucket counts (last = +Inf), sum and count."""
    entry = histograms.setdefault(key, {"buckets": [0] * (len(bounds) + 1), "sum": 0.0, "count": 0})
    index = next((i for i, bound in enumerate(bounds) if value <= bound), len(bounds))
    entry["buckets"][index] += 1
    entry["sum"] += value
    entry["count"] += 1


def bind(view: View, pod: dict[str, Any], node: str, assignment: DeviceAssignment) -> None:
    new = copy_sharing(pod, "spec")      # the spec gains nodeName alone: its fields are shared
    new["spec"] = dict(pod["spec"], nodeName=node)
    annotations = assignment_annotations(assignment)
    if annotations:
        new["metadata"].setdefault("annotations", {}).update(annotations)
    status = new.setdefault("status", {})
    status["phase"] = "Pending"
    status.pop("nominatedNodeName", None)
    set_condition(status, {"type": "PodScheduled", "status": "True",
                            "lastTransitionTime": view.timestamp()})
    write.update(view, new, subresource="binding")
    volumes.prebind(view, new, node)      # VolumeBinding PreBind: delayed claims follow the pod
    meta = pod["metadata"]
    view.record_event(new, "Scheduled", f"Successfully assigned {meta['namespace']}/"
                      f"{meta['name']} to {node}", "Normal", SCHEDULER_NAME)


def record_failure(view: View, pod: dict[str, Any], message: str, nominated: str) -> None:
    new = copy_sharing(pod, "spec")      # a status write
    status = new.setdefault("status", {})
    status["phase"] = "Pending"
    if nominated:
        status["nominatedNodeName"] = nominated
    else:
        status.pop("nominatedNodeName", None)
    set_condition(status, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": message, "lastTransitionTime": view.timestamp()})
    write.update_status(view, new)
    view.record_event(new, "FailedScheduling", message, "Warning", SCHEDULER_NAME)


def preempt(view: View, pod: dict[str, Any], result: ScheduleResult) -> None:
    """Act on a preemption decision (nvidia-gpu-stack.md 7.6 step 5)."""
    node = result.nominated_node
    preemptor_uid = pod["metadata"]["uid"]
    for victim in result.victims:
        body = view.copy("Pod", victim.name, victim.namespace)
        if body is None:
            continue
        set_condition(body.setdefault("status", {}), {
            "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": PREEMPT_MESSAGE, "lastTransitionTime": view.timestamp()})
        write.update_status(view, body)
        view.record_event(body, "Preempted", f"Preempted by pod {preemptor_uid} on node {node}",
                          "Normal", SCHEDULER_NAME)
        delete_pod(view, body)
    priority = int((pod.get("spec") or {}).get("priority") or 0)
    for key in view.nominated_to(node):     # upstream getLowerPriorityNominatedPods
        other = view.objects[key]
        if (other["metadata"]["uid"] != preemptor_uid
                and int((other.get("spec") or {}).get("priority") or 0) < priority):
            cleared = copy_tree(other)
            cleared["status"].pop("nominatedNodeName", None)
            write.update_status(view, cleared)
    current = view.get("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"]) or pod
    record_failure(view, current, result.message, nominated=node)


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """Put ``condition`` into ``status.conditions``, replacing the one of the same type; its
    lastTransitionTime is kept when the status did not change (as the API server does)."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    old = next((c for c in status.get("conditions") or [] if c.get("type") == condition["type"]), None)
    if old is not None and old.get("status") == condition["status"]:
        condition["lastTransitionTime"] = old.get("lastTransitionTime", condition["lastTransitionTime"])
    conditions.append(condition)
    order = {"PodScheduled": 0, "Initialized": 1, "ContainersReady": 2, "Ready": 3}
    conditions.sort(key=lambda c: (order.get(c.get("type"), 9), c.get("type")))
    status["conditions"] = conditions


class ViewBinder:
    """The loop's ``Binder`` over the view: this module's bind, preempt and failure
    records."""

    def __init__(self, view: View, scheduler: Scheduler, order: dict[str, int]) -> None:
        self.view, self.scheduler, self.order = view, scheduler, order

    def _pod(self, result: ScheduleResult) -> dict[str, Any]:
        pod = self.view.by_uid(result.pod.uid)
        assert pod is not None, result.pod.key
        return pod

    def pod_info(self, uid: str) -> PodInfo | None:
        pod = self.view.by_uid(uid)
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            return None
        return pod_info(pod, self.order.get(uid, 0))

    def observe(self, result: ScheduleResult, seconds: float) -> None:
        record_attempt(self.view, self.scheduler, result, seconds)

    def bind(self, result: ScheduleResult) -> None:
        problem = dra.pre_bind(self.view, self.scheduler, result.pod, result.node)
        if problem:      # upstream: PreBind failed, Unreserve, the pod goes back to the queue
            self.scheduler.snapshot.remove_pod(result.pod.uid)
            record_failure(self.view, self._pod(result), problem, nominated="")
            return
        bind(self.view, self._pod(result), result.node, result.assignment)

    def preempt(self, result: ScheduleResult) -> None:
        dra.apply_writes(self.view, self.scheduler)
        preempt(self.view, self._pod(result), result)

    def failed(self, result: ScheduleResult) -> None:
        dra.apply_writes(self.view, self.scheduler)
        record_failure(self.view, self._pod(result), result.message, nominated="")

    def released(self, result: ScheduleResult) -> None:
        capacity_changed(self.view, {"spec": {"nodeName": result.node,
                                              "priority": result.pod.priority}})
