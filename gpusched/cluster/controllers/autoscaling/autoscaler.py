"""Cluster Autoscaler on NodePools: scale-up for unschedulable pods, scale-down of unneeded nodes.

Each autoscaled NodePool (``spec.minNodes``/``maxNodes``, ``devices.nodepool.autoscaling``) is
one node group. Its state lives in the pool's ``status`` (the cloud provider's part):
``nodes`` (registered node names; the NodePool controller creates exactly these),
``upcoming`` (``{name, readyAt}``: provisioning), ``nextIndex``, ``created`` (name -> clock
time, for ``gpusched cost``), ``removed`` (lifetimes of removed nodes), ``lastScaleUp``,
``unneeded`` (name -> since) and ``draining`` (name -> since).

One pass (``reconcile``), as ``core/static_autoscaler.go`` ``RunOnce`` orders it:

1. Upcoming nodes whose ``readyAt`` passed register (``status.nodes``); a pool below
   ``minNodes`` grows to it (``ScaleUpToNodeGroupMinSize``).
2. Scale-up (``core/scaleup/orchestrator/orchestrator.go`` ``ScaleUp``): the pods the
   scheduler marked ``Unschedulable`` (no nominated node), minus those that fit on upcoming
   nodes (``filter_out_schedulable.go``). Per pool (name order): skipped with
   ``max node group size reached`` at ``maxNodes``; else a template node of the pool -- built
   by the same code as its nodes, advertised by the same device plugin/GFD code
   (``devices.nodepool.template_node``, ``device_plugin.advertised``) -- is added to the
   scheduler's snapshot and every pod runs the SAME Filter plugins against it
   (``SchedulablePodGroups``); a rejection's reasons are that pool's reasons for the pod. The
   pods that fit are bin-packed onto as many template nodes as needed, up to ``maxNodes``
   (``estimator/binpacking_estimator.go``). The expander (``autoscaler_config``) picks one
   option; the pool gets that many ``upcoming`` nodes, registered after
   ``provisioningDelay``.
3. Events as ``processors/status/eventing_scale_up_processor.go``: each pod of the chosen
   option ``TriggeredScaleUp`` ``pod triggered scale-up: [{l4 1->2 (max: 6)}]``
   (``nodegroupset.ScaleUpInfo.String``); when nothing scaled up, every remaining pod
   ``NotTriggerScaleUp`` ``pod didn't trigger scale-up: 1 max node group size reached, 2
   node(s) didn't match Pod's node affinity/selector`` (``ReasonsMessage``: per reason, the
   number of pools giving it; upstream's order is Go map order, gpusched sorts by reason).
   The status ConfigMap gets ``ScaledUpGroup`` ``Scale-up: setting group l4 size to 2
   instead of 1 (max: 6)`` (``executor.go``).
4. Scale-down (``autoscaler_scaledown``), then the status ConfigMap (``autoscaler_status``).

The pass is skipped when nothing changed since the last one at the same time (settle calls
every controller each round). Timers (``due``): upcoming nodes' ``readyAt``, unneeded nodes'
``since + scale-down-unneeded-time``, the end of ``scale-down-delay-after-add``.

Neighbours: ``devices.nodepool`` (settings, template), ``cluster.scheduling`` (snapshot,
scheduler), ``controllers.nodes.nodepool`` (creates/deletes the Nodes), ``autoscaler_config``,
``autoscaler_groups`` (node groups, simulation), ``autoscaler_scaledown``,
``autoscaler_status``.
"""

from __future__ import annotations

from typing import Any

from collections import Counter

import numpy as np

from gpusched.cluster.controllers.autoscaling import autoscaler_scaledown, autoscaler_status
from gpusched.cluster.controllers.autoscaling.autoscaler_groups import (Group, Simulation, groups,
                                                                        update_status)
from gpusched.cluster.controllers.autoscaling.autoscaler_config import (COMPONENT, Config, Option,
                                                                        best_option, load_config)
from gpusched.cluster.scheduling.profiles import pending_pods
from gpusched.cluster.apiserver.view import View

MAX_REASON = "max node group size reached"      # orchestrator/skippedreasons.go


def reconcile(view: View) -> None:
    found = groups(view)
    if not found:
        return
    memo = view.memo.setdefault("autoscaler", {})
    if memo.get("seen") == (view.mutations, view.clock):
        return
    config = load_config(view)
    autoscaler_status.ensure(view, config)
    for group in found:
        _register(view, group)
    found = groups(view)
    scaled = _scale_up(view, config, found)
    if config.scale_down_enabled and not scaled:
        autoscaler_scaledown.reconcile(view, config, groups(view))
    autoscaler_status.write(view, config, groups(view))
    memo["seen"] = (view.mutations, view.clock)


def due(view: View, pool: dict[str, Any]) -> float | None:
    """The next time this pool's autoscaling state changes by itself (see module docstring)."""
    status = pool.get("status") or {}
    times = [float(u.get("readyAt", 0)) for u in status.get("upcoming") or []]
    unneeded = status.get("unneeded") or {}
    if unneeded or "lastScaleUp" in status:
        config = load_config(view)
        times += [float(since) + config.unneeded_time for since in unneeded.values()]
        times.append(float(status.get("lastScaleUp", -1e18)) + config.delay_after_add)
    later = [t for t in times if t > view.now()]
    return min(later) if later else None


# ---- step 1: registration and min size -----------------------------------------------------------

def _register(view: View, group: Group) -> None:
    from gpusched.devices.nodepool import expand_nodepool, name_prefix
    now = view.now()
    status = group.status
    if status.get("nodes") is None:
        names = [n["metadata"]["name"] for n in expand_nodepool(group.pool)]
        group = update_status(view, group, {
            "nodes": names, "upcoming": [], "nextIndex": len(names) + 1,
            "created": {n: now for n in names}})
        status = group.status
    ready = [u for u in group.upcoming if float(u["readyAt"]) <= now]
    if ready:
        created = dict(status.get("created") or {})
        created.update({u["name"]: float(u["readyAt"]) for u in ready})
        group = update_status(view, group, {
            "nodes": group.nodes + [u["name"] for u in ready],
            "upcoming": [u for u in group.upcoming if float(u["readyAt"]) > now],
            "created": created})
    if group.target < group.min_nodes:       # ScaleUpToNodeGroupMinSize
        add_upcoming(view, group, group.min_nodes - group.target, name_prefix(group.pool))


def add_upcoming(view: View, group: Group, count: int, prefix: str) -> Group:
    """Grow the pool by ``count`` nodes registering after its provisioning delay; the status
    ConfigMap gets CA's ``ScaledUpGroup`` event."""
    now = view.now()
    index = int(group.status.get("nextIndex") or group.target + 1)
    new = [{"name": f"{prefix}-{index + i}", "readyAt": now + group.delay} for i in range(count)]
    before = group.target
    group = update_status(view, group, {"upcoming": group.upcoming + new,
                                        "nextIndex": index + count, "lastScaleUp": now})
    autoscaler_status.record(view, "ScaledUpGroup",
                             f"Scale-up: setting group {group.name} size to {group.target} "
                             f"instead of {before} (max: {group.max_nodes})")
    return group


# ---- step 2: scale-up ------------------------------------------------------------------------

EXPENDABLE_PRIORITY_CUTOFF = -10     # --expendable-pods-priority-cutoff


def unschedulable_pods(view: View) -> list[dict[str, Any]]:
    """Pending pods the scheduler marked Unschedulable, without a nominated node, queue order;
    pods of priority below ``--expendable-pods-priority-cutoff`` (-10) never trigger a
    scale-up (``core/podlistprocessor/filter_out_expendable.go``)."""
    out = []
    for pod in pending_pods(view):
        status = pod.get("status") or {}
        if status.get("nominatedNodeName") or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if int((pod.get("spec") or {}).get("priority") or 0) < EXPENDABLE_PRIORITY_CUTOFF:
            continue
        scheduled = next((c for c in status.get("conditions") or []
                          if c.get("type") == "PodScheduled"), None)
        if scheduled and scheduled.get("status") == "False" and \
                scheduled.get("reason") == "Unschedulable":
            out.append(pod)
    return out


def template(view: View, group: Group, name: str) -> dict[str, Any]:
    """A Node of ``group`` named ``name`` as it will register: the pool's node, advertised by
    the device plugin and GFD, with the kubelet's status."""
    from gpusched.cluster.kubelet.device_plugin import advertised
    from gpusched.cluster.kubelet.device_inputs import device_inputs
    from gpusched.cluster.kubelet.node_status import kubelet_status
    from gpusched.devices.nodepool import template_node
    from gpusched.devices.user_models import usable_user_models
    extra = usable_user_models(view.list("ConfigMap"))
    node = template_node(group.pool, name, extra)
    inputs = device_inputs(view)
    node, _state = advertised(node, inputs.for_node(name), view.timestamp(), inputs.policy)
    for key, value in kubelet_status(node, view.timestamp()).items():
        node["status"].setdefault(key, value)
    return node


def _scale_up(view: View, config: Config, found: list[Group]) -> bool:
    pods = unschedulable_pods(view)
    if not pods:
        return False
    pods = _not_awaiting_upcoming(view, found, pods)
    if not pods:
        return False
    reasons: dict[str, Counter[str]] = {p["metadata"]["uid"]: Counter() for p in pods}
    options = []
    for group in found:
        option = _option(view, group, pods, reasons)
        if option is not None:
            options.append(option)
    if not options:
        for pod in pods:
            counts = reasons[pod["metadata"]["uid"]]
            text = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
            view.record_event(pod, "NotTriggerScaleUp", f"pod didn't trigger scale-up: {text}",
                              "Normal", COMPONENT)
        return False
    rng = np.random.default_rng([view.seed, view.rv])
    best = best_option(view, config, options, rng)
    group = next(g for g in found if g.name == best.pool)
    from gpusched.devices.nodepool import name_prefix
    before = group.target
    group = add_upcoming(view, group, best.node_count, name_prefix(group.pool))
    info = f"[{{{group.name} {before}->{group.target} (max: {group.max_nodes})}}]"
    helped = set(best.pods)
    for pod in pods:
        if pod["metadata"]["uid"] in helped:
            view.record_event(pod, "TriggeredScaleUp", f"pod triggered scale-up: {info}",
                              "Normal", COMPONENT)
    return True


def _not_awaiting_upcoming(view: View, found: list[Group], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``filter_out_schedulable.go``: the pods that fit neither on a node of the cluster nor
    on one being provisioned (upcoming, or registered without its Node object yet) -- those
    wait for the scheduler. Pods are placed in queue order, each taking its room."""
    upcoming = [(g, u["name"]) for g in found for u in g.upcoming]
    upcoming += [(g, n) for g in found for n in g.nodes if view.get("Node", n) is None]
    sim = Simulation(view)
    for group, name in upcoming:
        sim.add(template(view, group, name))
    rows = sim.snapshot.all_nodes()
    if not len(rows):
        return pods
    return [p for p in pods if not sim.scheduler.place(sim.info(p), rows).node]


def _option(view: View, group: Group, pods: list[dict[str, Any]], reasons: dict[str, Counter[str]]
            ) -> Option | None:
    """``SchedulablePodGroups`` + ``ComputeExpansionOption`` for one pool (None: no option;
    the pods' reasons are counted)."""
    if group.target >= group.max_nodes:
        for pod in pods:
            reasons[pod["metadata"]["uid"]][MAX_REASON] += 1
        return None
    sim = Simulation(view)
    probe = template(view, group, f"template-node-for-{group.name}-0")
    row = sim.add(probe)
    fitting = []
    for pod in pods:
        info = sim.info(pod)
        rejected = sim.check(info, row)
        if rejected:
            for reason in rejected:
                reasons[pod["metadata"]["uid"]][reason] += 1
        else:
            fitting.append(info)
    sim.snapshot.remove_node(probe["metadata"]["name"])
    if not fitting:
        return None
    rows: list[int] = []
    helped = []
    headroom = group.max_nodes - group.target
    for info in fitting:
        placed = sim.scheduler.place(info, np.array(rows, dtype=np.int64)).node if rows else ""
        if not placed and len(rows) < headroom:
            rows.append(sim.add(template(view, group, f"template-node-for-{group.name}-{len(rows) + 1}")))
            placed = sim.scheduler.place(info, np.array(rows[-1:], dtype=np.int64)).node
        if placed:
            helped.append(info)
    if not helped:
        return None
    return _priced_option(group, probe, len(rows), helped)


def _priced_option(group: Group, node: dict[str, Any], count: int, helped: list[Any]) -> Option:
    from gpusched.devices.prices import node_price
    from gpusched.objects.quantity import canonical
    capacity = (node.get("status") or {}).get("capacity") or {}
    annotations = node["metadata"].get("annotations") or {}
    model = annotations.get("gpusched.io/gpu-model", "")
    gpus = int(annotations.get("gpusched.io/gpu-count", "0") or 0)
    return Option(group.name, count, tuple(i.uid for i in helped),
                  cpu=sum(int(i.requests.get("cpu", 0)) for i in helped),
                  memory=sum(int(i.requests.get("memory", 0)) for i in helped),
                  node_cpu=max(1, canonical("cpu", capacity.get("cpu", "1"))),
                  node_memory=max(1, canonical("memory", capacity.get("memory", "1"))),
                  price=node_price(model, gpus))
