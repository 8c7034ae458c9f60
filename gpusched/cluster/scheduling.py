"""The bridge between the store's view and the scheduler: snapshot in, decisions applied.

The building blocks of a scheduling pass (``cluster.scheduling_pass`` runs the pass, in
kube-scheduler's order or ``cluster.backfill``'s):

- :func:`build_snapshot`: every Node (``node_info``) with its ``NodeDevices``
  (``devices.advertise.node_device_state`` from the node and the ConfigMaps), every bound,
  unfinished pod held on its node with the devices recorded in its assignment annotations;
- :func:`pending_pods`: ``spec.nodeName`` empty, not finished, ordered by priority (higher
  first), then creation (earlier first), then name; :func:`is_gated` (``spec.schedulingGates``);
- applying a result:
  - :func:`bind`: ``spec.nodeName``, assignment annotations, PodScheduled True, event
    ``Scheduled``;
  - :func:`preempt`: victims get ``DisruptionTarget`` (PreemptionByScheduler), a ``Preempted``
    event and a graceful delete (Terminating for their ``terminationGracePeriodSeconds``,
    holding their resources); the preemptor gets ``status.nominatedNodeName`` and waits
    Pending until they are gone (``scheduler.preemption``: "not eligible due to a terminating
    pod on the nominated node"), then binds in the pass after their deletion;
  - :func:`record_failure`: PodScheduled False reason Unschedulable with the FitError message
    and a Warning ``FailedScheduling`` event (a repeat of the same message bumps its count).

Neighbours: ``scheduler.snapshot``/``scheduler.runner`` (decisions), ``devices`` (per-node
devices), ``apiserver.view``; used by ``cluster.scheduling_pass`` and ``cluster.backfill``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.storage import volumes
from gpusched.cluster.controllers.common import delete_pod, is_terminal
from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.apiserver.view import ObjectSource, View, copy_tree
from gpusched.objects.assignment import assignment_annotations, pod_assignment
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info
from gpusched.objects.selectors import selector_from_dict
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.types import NO_DEVICES, DeviceAssignment, PodInfo

if TYPE_CHECKING:
    from gpusched.scheduler.runner import Scheduler
    from gpusched.devices.node import NodeDevices
    from gpusched.scheduler.framework import ScheduleResult
    from gpusched.scheduler.snapshot import Snapshot

log = logging.getLogger(__name__)
SCHEDULER_NAME = "default-scheduler"
# The embedded scheduler serves the default profile and gpusched's named GPU-scoring profiles
# (scheduler.profile.GPUSCHED_PROFILES: spec.schedulerName gpusched-binpack / gpusched-spread).
SERVED_NAMES = (SCHEDULER_NAME, "gpusched-binpack", "gpusched-spread")
PREEMPT_MESSAGE = f"{SCHEDULER_NAME}: preempting to accommodate a higher priority pod"


# ---- devices ---------------------------------------------------------------------------------

def _creation_key(pod: dict[str, Any]) -> tuple[Any, ...]:
    meta = pod["metadata"]
    return (meta.get("creationTimestamp", ""), int(meta.get("resourceVersion", 0) or 0),
            meta["name"])


def creation_number(pod: dict[str, Any]) -> int:
    """``PodInfo.creation_seq``: a number that orders pods as ``_creation_key`` does
    (creationTimestamp, whole seconds, then resourceVersion), without sorting every pod, so
    ``cluster.snapshot_cache`` can number a changed pod alone. Only compared, never shown."""
    meta = pod["metadata"]
    try:
        seconds = int(seconds_of(str(meta.get("creationTimestamp") or "")))
    except (ValueError, GpuschedError):
        seconds = 0
    return (seconds << 40) + int(meta.get("resourceVersion", 0) or 0)


def bound_pods(view: ObjectSource) -> list[dict[str, Any]]:
    return [p for p in view.list("Pod")
            if (p.get("spec") or {}).get("nodeName") and not is_terminal(p)]


def build_snapshot(view: ObjectSource) -> tuple[Snapshot, dict[str, int]]:
    """A Snapshot of every node and every bound, unfinished pod (with its devices held)."""
    from gpusched.scheduler.snapshot import Snapshot
    snapshot = Snapshot()
    configmaps = device_inputs(view)
    for node in view.list("Node"):
        snapshot.add_node(node_info(node), node_devices_for(node, configmaps))
    order = {p["metadata"]["uid"]: creation_number(p) for p in view.list("Pod")}
    for pod in bound_pods(view):
        node_name = pod["spec"]["nodeName"]
        if node_name not in snapshot.index:
            continue
        info = readable_pod_info(pod, order.get(pod["metadata"]["uid"], 0))
        if info is not None:
            place_bound_pod(snapshot, pod, info, node_name)
    return snapshot, order


def readable_pod_info(pod: dict[str, Any], seq: int = 0) -> PodInfo | None:
    """``pod_info``, or None (logged) for a stored pod validation would refuse (a hand-edited
    state file): one bad object is left out of the pass, never fails it for every pod."""
    try:
        return pod_info(pod, seq)
    except GpuschedError as err:
        meta = pod.get("metadata") or {}
        log.warning("pod %s/%s left out: %s", meta.get("namespace"), meta.get("name"), err)
        return None


def place_bound_pod(snapshot: Snapshot, pod: dict[str, Any], info: PodInfo, node_name: str) -> None:
    """Add a bound pod to ``snapshot`` holding its recorded devices; a record that is malformed
    or names devices no longer advertised holds equivalent free devices (``_remapped``)."""
    devices = snapshot.devices[snapshot.index[node_name]]
    try:
        assignment = pod_assignment(pod, info) if devices is not None else NO_DEVICES
        snapshot.add_pod(info, node_name, assignment)
    except UsageError as err:
        log.warning("pod %s: %s", info.key, err)
        if info.uid in snapshot.pod_node:
            snapshot.remove_pod(info.uid)     # undo the partial add, then keep the pod's share
        snapshot.add_pod(info, node_name, _remapped(devices, info))


def _remapped(devices: NodeDevices, info: PodInfo) -> DeviceAssignment:
    """Devices standing in for a running pod's after a re-advertisement removed its device IDs.

    A plugin restart (new sharing config or MIG layout) does not stop running pods: they keep
    using their devices, and the kubelet keeps counting them. The scheduler's view holds an
    equivalent free device for the pod so nothing is double-counted; when none is free the pod
    is accounted by its requests alone.
    """
    try:
        assignment = devices.allocate(info)
    except UsageError:
        assignment = None
    if assignment is None:
        log.warning("pod %s: its devices are gone after re-advertising; counted by requests only",
                    info.key)
        return NO_DEVICES
    result: DeviceAssignment = assignment
    return result


def node_devices(view: View, node_name: str) -> Any:
    """The devices of one node with the pods holding them (for describe and tests)."""
    snapshot, _ = build_snapshot(view)
    if node_name not in snapshot.index:
        return None
    return snapshot.devices[snapshot.index[node_name]]


# ---- scheduling --------------------------------------------------------------------------------

def make_scheduler(snapshot: Snapshot, view: View, order: dict[str, int] | None = None,
                   frameworks: dict[str, Any] | None = None,
                   nominated: list[dict[str, Any]] | None = None) -> Scheduler:
    """The default profile(s) over ``snapshot``, seeded from (seed, resourceVersion), with the
    PodDisruptionBudgets handed to DefaultPreemption. With ``order`` (from ``build_snapshot``),
    pending pods that carry ``status.nominatedNodeName`` are registered as nominated, so they
    count on that node for pods of equal or lower priority, as upstream's nominator does.
    ``frameworks``: the plugin instances to run (kept between passes by ``schedule_pending``);
    None builds them from the profiles. ``nominated``: the pending pods that carry a nomination,
    in queue order, when the caller keeps them (the scheduling queue's host); None lists them."""
    from gpusched.scheduler.preemption import PdbInfo
    from gpusched.scheduler.runner import Scheduler
    profiles: Any = frameworks if frameworks is not None else configured_profiles(view)
    scheduler = Scheduler(snapshot, profiles, clock=view.now, rng_seed=[view.seed, view.rv])
    pdbs = [PdbInfo(pdb["metadata"]["namespace"],
                    selector_from_dict((pdb.get("spec") or {}).get("selector") or {}),
                    int((pdb.get("status") or {}).get("disruptionsAllowed", 0)),
                    pdb["metadata"]["name"])
            for pdb in view.list("PodDisruptionBudget")]
    claims = volumes.claim_infos(view)
    for framework in scheduler.frameworks.values():
        plugin = framework.plugins.get("DefaultPreemption")
        if plugin is not None and hasattr(plugin, "set_pdbs"):
            plugin.set_pdbs(pdbs)
        binding = framework.plugins.get("VolumeBinding")
        if binding is not None and hasattr(binding, "set_claims"):
            binding.set_claims(claims)
    if order is not None:
        for pod in pending_pods(view) if nominated is None else nominated:
            node = (pod.get("status") or {}).get("nominatedNodeName", "")
            if node:
                scheduler.set_nominated(pod_info(pod, order.get(pod["metadata"]["uid"], 0)), node)
    return scheduler


PROFILES_MEMO = "scheduler-profiles"


def use_profiles(view: View, profiles: list[Any]) -> None:
    """Run the embedded scheduler with these ``ProfileConfig`` s instead of the default profile,
    as a kube-scheduler started with ``--config``, for this view's life (in-process callers such
    as ``sim.replay``; never stored). gpusched's named profiles are still served."""
    view.memo[PROFILES_MEMO] = {"profiles": list(profiles)}
    view.memo.pop("scheduler-frameworks", None)


def configured_profiles(view: View) -> list[Any] | None:
    """The profiles of :func:`use_profiles`, or None for the default profile."""
    memo = view.memo.get(PROFILES_MEMO)
    return list(memo["profiles"]) if memo else None


def kept_frameworks(view: View, snapshot: Any) -> dict[str, Any]:
    """The profiles' plugin instances for the scheduler's cached snapshot, built once per
    snapshot (upstream's scheduler builds its frameworks once at start-up): plugins that cache
    per-node work between cycles (the FGD policies' scores) keep it between passes."""
    from gpusched.scheduler.profile import build_frameworks
    memo = view.memo.setdefault("scheduler-frameworks", {})
    if memo.get("snapshot") is not snapshot:
        memo["snapshot"] = snapshot
        memo["frameworks"] = build_frameworks(configured_profiles(view))
    frameworks: dict[str, Any] = memo["frameworks"]
    return frameworks


def served_names(view: View) -> tuple[str, ...]:
    """The scheduler names the embedded scheduler serves: the defaults and configured ones."""
    profiles = configured_profiles(view) or []
    return SERVED_NAMES + tuple(p.scheduler_name for p in profiles
                                if p.scheduler_name not in SERVED_NAMES)


def pending_pods(view: ObjectSource, scheduler_names: tuple[str, ...] = SERVED_NAMES) -> list[dict[str, Any]]:
    """Unbound, unfinished pods for these schedulers, in queue order. Pods naming another
    scheduler are left alone, as upstream kube-scheduler leaves them to that scheduler."""
    pods = [p for p in view.unbound_pods()      # an index: no scan of the bound pods
            if ((p.get("spec") or {}).get("schedulerName") or SCHEDULER_NAME) in scheduler_names]
    return sorted(pods, key=lambda p: (-int((p.get("spec") or {}).get("priority") or 0),
                                       _creation_key(p)))


def is_gated(pod: dict[str, Any]) -> bool:
    """``spec.schedulingGates`` not empty: the SchedulingGates PreEnqueue plugin keeps the pod out
    of the scheduling queue until every gate is removed (``pkg/scheduler/framework/plugins/
    schedulinggates``); it is never attempted, so it gets no FailedScheduling."""
    return bool((pod.get("spec") or {}).get("schedulingGates"))


# kube-scheduler's buckets: scheduling_attempt_duration_seconds ExponentialBuckets(0.001, 2, 15),
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
    new = copy_tree(pod)
    new["spec"]["nodeName"] = node
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
    new = copy_tree(pod)
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
    for other in view.list("Pod"):
        status = other.get("status") or {}
        if (status.get("nominatedNodeName") == node and other["metadata"]["uid"] != preemptor_uid
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
