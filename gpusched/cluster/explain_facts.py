"""What ``explain`` says before its per-node table: the facts a person needs at one glance.

``facts(view, pod)`` looks at the pod and the cluster (not only at the scheduler's filters) and
returns ``scheduler.explain.Fact`` items, each a sentence and the same facts as JSON fields:

- ``running``: where a bound pod runs and which devices it holds (``GPU 0 (GPU-...) whole``),
  and whether its whole GPUs share one NVLink domain (``devices.interconnect.placement_note``);
- ``unknown-resource``: ``no node offers nvidia.com/gpus; did you mean nvidia.com/gpu?`` (the
  closest advertised resource by edit distance, at most ``MAX_TYPO`` edits);
- ``not-offered``: a node that would offer the resource with the device plugin's defaults (no
  config, MIG disabled) but does not now, and why, naming the object to change: a failed MIG
  layout (``nvidia.com/mig.config.state=failed``), a MIG layout splitting the GPUs, a
  device-plugin ConfigMap renaming or replacing the resource (time-slicing ``renameByDefault``,
  ``migStrategy``), a config error;
- ``too-large``: ``the largest node (gpu-node-1) has 8 nvidia.com/gpu; this pod asks for 16``;
- ``cordoned`` / ``not-ready``: a node where the pod would fit but that takes no pods now (the
  scheduler's ``uncordon`` / ``node-condition`` suggestions);
- ``gated``: ``waiting for scheduling gates: [example.com/wait]``, the one queue that holds a pod
  (``spec.schedulingGates``); ``queue-order``: held behind a reservation in the scheduler's
  ``backfill``/``strict`` mode (``cluster.scheduling.backfill``); ``no-queue``: a Kueue queue label, which
  gpusched does not act on;
- ``no-finishing``: room is held only by pods that run without end (no ``gpusched.io/duration``,
  no ``sleep N``, no Job or pod deadline): it frees up only when they are deleted.

``finish_times(view)``: pod key -> virtual seconds when each running pod ends on its own (its run
time, its own ``activeDeadlineSeconds``, its Job's deadline, the end of its grace period when it is
Terminating (a preemption victim), the earliest), for the "room frees up" suggestion of
``scheduler.explain``.

``explain_pod(view, pod)``: the whole explanation of one pod (the scheduler's, with the facts).

Neighbours: ``cluster.cluster.Cluster.explain`` calls it; ``devices.advertise`` tells what a
node would offer; ``kubelet.pod_lifecycle`` / ``controllers.workloads.job`` give the end times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.controllers.workloads.job_rules import deadline_due
from gpusched.cluster.kubelet.pod_lifecycle import end_time, start_time
from gpusched.cluster.apiserver.view import View
from gpusched.objects.quantity import QuantityError, canonical, format_quantity
from gpusched.objects.types import PodInfo
from gpusched.scheduler.explain import Fact

if TYPE_CHECKING:
    from gpusched.devices.advertise import NodeDeviceState

MAX_TYPO = 3
MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _amounts(values: dict[str, Any] | None) -> dict[str, int]:
    out = {}
    for resource, value in (values or {}).items():
        try:
            out[resource] = canonical(resource, value)
        except (QuantityError, TypeError, ValueError):
            continue
    return out


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance.

    >>> edit_distance("nvidia.com/gpus", "nvidia.com/gpu"), edit_distance("gpu", "cpu")
    (1, 1)
    """
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def closest(name: str, candidates: set[str]) -> str | None:
    """The advertised resource nearest to ``name`` (ties by name), None if none is near."""
    scored = sorted((edit_distance(name, c), c) for c in candidates if c != name)
    if scored and scored[0][0] <= MAX_TYPO:
        return scored[0][1]
    return None


# ---- finish times ---------------------------------------------------------------------------


def finish_times(view: View) -> dict[str, float]:
    """Pod key -> when the running pod ends on its own (see the module docstring)."""
    jobs = {(_meta(j).get("namespace", ""), _meta(j).get("name", "")): deadline_due(j)
            for j in view.list("Job")}
    out: dict[str, float] = {}
    for pod in view.list("Pod"):
        if (pod.get("status") or {}).get("phase") != "Running":
            continue
        meta = _meta(pod)
        ends = [end_time(pod)]
        if meta.get("deletionTimestamp"):        # Terminating: gone when its grace period ends
            ends.append(seconds_of(meta["deletionTimestamp"]))
        own = (pod.get("spec") or {}).get("activeDeadlineSeconds")
        started = start_time(pod)
        if own is not None and started is not None:
            ends.append(started + float(own))
        for owner in meta.get("ownerReferences") or []:
            if owner.get("kind") == "Job":
                ends.append(jobs.get((meta.get("namespace", ""), owner.get("name", ""))))
        known = [t for t in ends if t is not None]
        if known:
            out[f"{meta.get('namespace', '')}/{meta.get('name', '')}"] = min(known)
    return out


# ---- running pods -----------------------------------------------------------------------------


def _slot(row: Any) -> str:
    if row.profile:
        result: str = row.profile
        return result
    if row.replica >= 0:
        return f"replica {row.replica}"
    if row.milli and row.milli < 1000:
        return f"{row.milli}m share"
    return "whole"


def running_fact(view: View, pod: dict[str, Any]) -> Fact:
    from gpusched.cluster.scheduling.cache import node_devices

    node = (pod.get("spec") or {}).get("nodeName", "")
    uid = _meta(pod).get("uid", "")
    devices = node_devices(view, node)
    rows = [r for r in (devices.rows() if devices is not None else []) if r.holder == uid]
    held = [{"gpu": r.gpu_index, "device": r.device_id, "resource": r.resource, "slot": _slot(r)}
            for r in rows]
    phase = (pod.get("status") or {}).get("phase", "Pending")
    verb = "runs" if phase == "Running" else "is bound"
    if held:
        text = f"{verb} on {node}; holds " + ", ".join(
            f"GPU {h['gpu']} ({h['device']}, {h['resource']}, {h['slot']})" for h in held)
    else:
        text = f"{verb} on {node}; holds no GPU devices"
    note = _nvlink_note(devices, [r.gpu_index for r in rows if r.milli == 1000 and not r.profile and r.replica < 0])
    fields: tuple[tuple[str, Any], ...] = (("node", node), ("phase", phase), ("devices", held))
    if note:
        text, fields = f"{text}; {note}", (*fields, ("nvlink", note))
    return Fact("running", text, fields)


def _nvlink_note(devices: Any, whole_gpus: list[int]) -> str:
    """Whether a pod's whole GPUs share one NVLink domain (``devices.interconnect``)."""
    from gpusched.devices.interconnect import interconnect_of, placement_note

    if devices is None or devices.model is None:
        return ""
    return placement_note(interconnect_of(devices.model.name), devices.gpu_count, whole_gpus)


# ---- pending pods -------------------------------------------------------------------------------


def _default_offer(node: dict[str, Any]) -> dict[str, int]:
    """What the node's GPUs would advertise with no device-plugin config and MIG disabled."""
    from gpusched.devices.advertise import node_device_state

    plain = {**node, "metadata": {**_meta(node), "labels": {
        k: v for k, v in (_meta(node).get("labels") or {}).items()
        if k not in (MIG_CONFIG, "nvidia.com/device-plugin.config")}, "annotations": {
        k: v for k, v in (_meta(node).get("annotations") or {}).items()
        if k != "gpusched.io/mig-layout"}}}        # the GPUs' MIG state (devices.mig_manager)
    return node_device_state(plain, []).capacity


def _offer_without_config(node: dict[str, Any]) -> dict[str, int]:
    """What the node's GPUs would advertise with its MIG layout but no device-plugin ConfigMap."""
    from gpusched.devices.advertise import node_device_state

    plain = {**node, "metadata": {**_meta(node), "labels": {
        k: v for k, v in (_meta(node).get("labels") or {}).items()
        if k != "nvidia.com/device-plugin.config"}}}
    return node_device_state(plain, [], recorded=True).capacity


@dataclass(frozen=True)
class _NodeOffer:
    """A node's device-plugin state now and the words that name what to change."""

    name: str
    mig: str                 # the node's nvidia.com/mig.config label, "" without one
    state: NodeDeviceState
    cm_ref: str              # "ConfigMap <ns>/<name>" of its device-plugin config, "" without one
    key: str                 # " (key <k>)" when the config's key is chosen

    @property
    def offered(self) -> str:
        return ", ".join(f"{r}={n}" for r, n in sorted(self.state.capacity.items())) or "no GPU resources"


def _node_offer(view: View, node: dict[str, Any]) -> _NodeOffer:
    from gpusched.cluster.kubelet.device_inputs import device_inputs
    from gpusched.devices.advertise import node_device_state
    from gpusched.devices.plugin_config import find_device_plugin_configmap

    name = _meta(node).get("name", "")
    inputs = device_inputs(view)
    configmaps = inputs.for_node(name)
    from gpusched.cluster.kubelet.device_plugin import busy_gpus
    # mig-manager as the device-plugin controller runs it, for its log lines
    state = node_device_state(node, configmaps, policy=inputs.policy, busy=busy_gpus(view, name))
    configmap = find_device_plugin_configmap(configmaps)
    cm_ref = (f"ConfigMap {_meta(configmap).get('namespace', '')}/{_meta(configmap).get('name', '')}"
              if configmap else "")
    key = f" (key {state.config_key})" if state.config_key else ""
    return _NodeOffer(name, (_meta(node).get("labels") or {}).get(MIG_CONFIG, ""), state, cm_ref, key)


def _why_not_offered(view: View, node: dict[str, Any], resource: str) -> tuple[str, str]:
    """(why the node does not offer ``resource`` now, the object to change): a failed MIG
    layout, a device plugin that does not start, a MIG layout that splits the GPUs, then what
    the device-plugin config makes it offer; the first that holds."""
    offer = _node_offer(view, node)
    name, state = offer.name, offer.state
    if state.labels.get(MIG_STATE) == "failed" or (_meta(node).get("labels") or {}).get(MIG_STATE) == "failed":
        return (f"{MIG_STATE}=failed: MIG layout {offer.mig} cannot be applied "
                f"({'; '.join(state.mig_log) or state.error or 'mig-manager failed'})",
                f"label {MIG_CONFIG} on node {name}")
    if (_meta(node).get("labels") or {}).get(MIG_STATE) == "pending":
        return (f"{MIG_STATE}=pending: MIG layout {offer.mig} waits for the pods using the GPUs "
                f"it changes to finish", f"the pods on node {name}")
    if state.error:
        return f"the device plugin does not start: {state.error}", offer.cm_ref or f"node {name}"
    if any(r.startswith("nvidia.com/mig-") for r in state.capacity) or (
            offer.mig and offer.mig != "all-disabled" and state.devices.mig_strategy == "single"):
        return _mig_split(offer)
    return _config_offer(offer, resource)


def _mig_split(offer: _NodeOffer) -> tuple[str, str]:
    where = f"label {MIG_CONFIG}={offer.mig} on node {offer.name}"
    if offer.state.devices.mig_strategy and offer.cm_ref:
        where += f", migStrategy {offer.state.devices.mig_strategy} in {offer.cm_ref}{offer.key}"
    return f"its MIG layout {offer.mig} splits the GPUs: it offers {offer.offered}", where


def _config_offer(offer: _NodeOffer, resource: str) -> tuple[str, str]:
    """What the device-plugin config (time-slicing's renameByDefault first) makes it offer."""
    cm_ref, key = offer.cm_ref, offer.key
    if cm_ref and f"{resource}.shared" in offer.state.capacity:
        return (f"time-slicing with renameByDefault in {cm_ref}{key} renames it to "
                f"{resource}.shared ({offer.offered})", f"{cm_ref}{key}")
    if cm_ref:
        return (f"the device-plugin config in {cm_ref}{key} makes it offer {offer.offered}",
                f"{cm_ref}{key}")
    return f"it offers {offer.offered}", f"node {offer.name}"


def _not_offered_facts(view: View, resource: str, want: int, offering: dict[str, Any]) -> list[Fact]:
    out = []
    for node in view.list("Node"):
        name = _meta(node).get("name", "")
        if name in offering:
            continue
        could = max(_default_offer(node).get(resource, 0), _offer_without_config(node).get(resource, 0))
        if could <= 0:
            continue
        why, change = _why_not_offered(view, node, resource)
        out.append(Fact("not-offered",
                        f"{name} could offer {could} {resource} but does not: {why}; change {change}",
                        (("node", name), ("resource", resource), ("could", could), ("reason", why),
                         ("change", change))))
    return out


def _node_state_facts(view: View, suggestions: tuple[Any, ...] = ()) -> list[Fact]:
    """Cordoned or NotReady nodes where the pod would fit but for that state: the nodes of the
    scheduler's ``uncordon`` / ``node-condition`` suggestions (a what-if through every filter)."""
    uncordon = {n for s in suggestions if s.kind == "uncordon" for n in s.nodes}
    waiting = {n for s in suggestions if s.kind == "node-condition" for n in s.nodes}
    out = []
    for node in view.list("Node"):
        name = _meta(node).get("name", "")
        if name in uncordon:
            out.append(Fact("cordoned", f"{name} has room but is cordoned (spec.unschedulable); "
                                        f"change: gpusched uncordon {name}",
                            (("node", name), ("change", f"gpusched uncordon {name}"))))
        if name in waiting:
            out.extend(_not_ready_facts(node, name))
    return out


def _not_ready_facts(node: dict[str, Any], name: str) -> list[Fact]:
    """The node's NotReady fact, none when its Ready condition is True or missing."""
    ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
    if not ready or ready[0].get("status") == "True":
        return []
    reason = ready[0].get("reason") or ready[0].get("status")
    return [Fact("not-ready", f"{name} has room but is NotReady (Ready={ready[0].get('status')}, "
                              f"{reason}); it takes pods again when its kubelet reports Ready",
                 (("node", name), ("reason", str(reason))))]


def pending_facts(view: View, info: PodInfo, suggestions: tuple[Any, ...] = ()) -> list[Fact]:
    nodes = view.list("Node")
    allocs = {_meta(n).get("name", ""): _amounts((n.get("status") or {}).get("allocatable")) for n in nodes}
    advertised = {r for alloc in allocs.values() for r, n in alloc.items() if n > 0}
    wants = {r: n for r, n in sorted(info.requests.items()) if n > 0 and r != "pods"}
    out: list[Fact] = []
    for resource, want in wants.items():
        out.extend(_resource_facts(view, resource, want, allocs, advertised))
    out.extend(_node_state_facts(view, suggestions))
    return out


def _resource_facts(view: View, resource: str, want: int, allocs: dict[str, dict[str, int]],
                    advertised: set[str]) -> list[Fact]:
    """Why ``want`` of ``resource`` fits nowhere: no node offers it (a near name when none
    could), or the largest offer is too small; and the nodes that could offer it but do not."""
    offering = {name: alloc[resource] for name, alloc in allocs.items() if alloc.get(resource, 0) > 0}
    not_offered = _not_offered_facts(view, resource, want, offering)
    if not offering and not not_offered:
        near = closest(resource, advertised)
        text = f"no node offers {resource}" + (f"; did you mean {near}?" if near else "")
        return [Fact("unknown-resource", text, (("resource", resource), ("suggestion", near)))]
    out: list[Fact] = []
    if not offering:
        out.append(Fact("unknown-resource", f"no node offers {resource} now",
                        (("resource", resource), ("suggestion", None))))
    elif max(offering.values()) < want:
        largest = max(offering.items(), key=lambda kv: kv[1])   # first of the largest, by name
        out.append(Fact("too-large",
                        f"the largest node ({largest[0]}) has {format_quantity(resource, largest[1])} "
                        f"{resource}; this pod asks for {format_quantity(resource, want)}",
                        (("resource", resource), ("node", largest[0]), ("has", largest[1]),
                         ("asks", want))))
    out.extend(fact for fact in not_offered if fact.fields[2][1] >= want or not offering)
    return out


KUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def queue_facts(pod: dict[str, Any]) -> list[Fact]:
    """Pending because of a queue: the scheduling gates (the only queue that holds a pod in
    gpusched: the SchedulingGates PreEnqueue plugin's ``waiting for scheduling gates: [a b]``,
    ``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go``); and, said honestly
    where a manifest expects one, that gpusched's Kueue queues Jobs, not plain pods (a
    ``kueue.x-k8s.io/queue-name`` label on a pod queues nothing)."""
    out = []
    gates = [g.get("name", "") for g in (pod.get("spec") or {}).get("schedulingGates") or []
             if isinstance(g, dict)]
    if gates:
        text = (f"waiting for scheduling gates: [{' '.join(gates)}] (PodScheduled=False, "
                f"SchedulingGated): the scheduler does not try it until they are removed; change: "
                f"remove them from spec.schedulingGates of pod {_meta(pod).get('name', '')} "
                f"(what added them removes them)")
        out.append(Fact("gated", text, (("gates", gates), ("queue", "gated"),
                                        ("change", "remove spec.schedulingGates"))))
    queue = (_meta(pod).get("labels") or {}).get(KUEUE_LABEL)
    if queue:
        out.append(Fact("no-queue", f"label {KUEUE_LABEL}={queue} queues nothing on a plain pod: "
                                    "gpusched's Kueue queues batch/v1 Jobs, the pod goes straight to the "
                                    "scheduler",
                        (("label", KUEUE_LABEL), ("queue", queue))))
    return out


NO_FINISHING = ("no pod holding room will finish on its own (none has a gpusched.io/duration, a "
                "sleep command or a deadline); room frees up only when one is deleted")


QUEUE_MARKS = ("waiting for backfill reservation of", "strict priority order")


def queue_order_fact(view: View, pod: dict[str, Any]) -> Fact | None:
    """Held by the embedded scheduler's queue order (``cluster.scheduling.backfill``: mode ``backfill`` or
    ``strict`` in ConfigMap kube-system/gpusched-scheduler): the filters may find a node, but the
    pod waits behind a reservation; its recorded FailedScheduling message says whose."""
    from gpusched.cluster.scheduling.mode import CONFIG_NAME, CONFIG_NAMESPACE, scheduler_mode

    mode = scheduler_mode(view).mode
    scheduled = [c for c in (pod.get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodScheduled" and c.get("status") == "False"]
    message = scheduled[0].get("message", "") if scheduled else ""
    if mode == "default" or not any(mark in message for mark in QUEUE_MARKS):
        return None
    config = f"ConfigMap {CONFIG_NAMESPACE}/{CONFIG_NAME}"
    text = (f"held by queue order (mode {mode} in {config}): {message} It starts when the "
            f"reservation allows; change: data.mode in {config} (default starts any pod that fits)")
    return Fact("queue-order", text, (("mode", mode), ("message", message), ("queue", mode),
                                      ("change", f"data.mode in {config}")))


def facts(view: View, pod: dict[str, Any], info: PodInfo, message: str = "", suggestions: tuple[Any, ...] = ()) -> list[Fact]:
    """The facts about ``pod``; ``message`` and ``suggestions`` are the scheduler's (to say
    when none of the room a pending pod lacks will free up on its own)."""
    status = pod.get("status") or {}
    if (pod.get("spec") or {}).get("nodeName"):
        return [running_fact(view, pod)]
    if status.get("phase") in ("Succeeded", "Failed"):
        return [Fact("finished", f"finished: {status['phase']}", (("phase", status["phase"]),))]
    queued = queue_facts(pod)
    if any(f.kind == "gated" for f in queued):
        return queued
    held = queue_order_fact(view, pod)
    if held is not None:
        queued.insert(0, held)
    found = queued + pending_facts(view, info, suggestions)
    if not found and "Insufficient" in message and not any(s.kind == "finishing" for s in suggestions):
        found.append(Fact("no-finishing", NO_FINISHING))
    return found


def explain_pod(view: View, pod: dict[str, Any]) -> Any:
    """``scheduler.explain.Explanation`` of ``pod`` on the state of ``view`` (the pod taken off
    its node first when bound), with the :func:`facts` before its per-node table."""
    import dataclasses

    from gpusched.cluster.scheduling.cache import build_snapshot
    from gpusched.cluster.scheduling.profiles import make_scheduler
    from gpusched.objects.pod import pod_info
    from gpusched.scheduler.explain import Finishing, explain
    snapshot, order = build_snapshot(view)
    if pod["metadata"]["uid"] in snapshot.pod_node:
        snapshot.remove_pod(pod["metadata"]["uid"])
    scheduler = make_scheduler(snapshot, view, order)
    info = pod_info(pod, order.get(pod["metadata"]["uid"], 0))
    result = explain(scheduler, info, Finishing(finish_times(view), view.now(), view.timestamp))
    return dataclasses.replace(result, facts=tuple(facts(view, pod, info, result.message,
                                                         result.suggestions)))
