"""Device plugin + GPU Feature Discovery: what each GPU node advertises and how it is labelled.

For every node, ``devices.advertise.node_device_state(node, configmaps)`` computes, from the
node's GPU model/count labels, its ``nvidia.com/device-plugin.config`` and ``nvidia.com/mig.config``
labels and the device-plugin ConfigMap(s), the GFD labels and the GPU resources. This controller
writes them into the Node: only the labels GFD owns are replaced (those NFD's annotation
``nfd.node.kubernetes.io/feature-labels`` lists from the last write; ``gfd.is_gfd_label`` on a node
never labelled); labels and annotations users set (``nvidia.com/gpu=true``,
``nvidia.com/device-plugin.config``, ``nvidia.com/mig.config``) are never removed; every
``nvidia.com/*`` capacity/allocatable entry is replaced. A changed ConfigMap or label therefore
re-advertises the node as a plugin restart would; running pods keep their devices (their assignment
annotations are untouched; the scheduler's device view is rebuilt from them, see
``cluster.scheduling``). A config error is recorded as a Warning event on the node and advertises
nothing new. A GPU product gpusched does not know (``devices.user_models``) is advertised with the
node's GPU count and a Warning event ``UnknownGPUModel`` recorded when the node's labels change.
With a ClusterPolicy its device-plugin ConfigMap, default and ``mig.strategy`` apply, and a node's
plugin keeps the ConfigMap it loaded when its pod started
(``controllers.gpuoperator.clusterpolicy``) until that pod is replaced; the operator's
``nvidia.com/gpu.deploy.*`` labels are left alone. mig-manager's outcome (``devices.mig_manager``)
is written back as the annotation ``gpusched.io/mig-layout`` (the GPUs' MIG state) and the label
``nvidia.com/mig.config.state``; a failure adds a Warning event ``MigConfigFailed`` (source
``nvidia-mig-manager``) whose message is mig-manager's log lines. A change that would touch GPUs
pods hold devices on is held (``mig.config.state=pending``, a Warning event ``MigConfigPending``
naming the GPUs and pods) and applied once they are free: a pending node is revisited when a pod
bound to it changes (``Changes.node_names``).

Neighbours: ``devices.advertise`` computes; ``cluster.scheduling`` reads the Node it writes.
"""

from __future__ import annotations

from typing import Any

import json
import logging
from datetime import datetime, timezone

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes, changed_nodes
from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.cluster.kubelet.device_inputs import device_inputs
from gpusched.devices.operator import OPERATOR_NAMESPACE
from gpusched.devices.advertise import NodeDeviceState, node_device_state
from gpusched.devices.operator import PolicyConfig
from gpusched.devices.gfd import USER_SET_LABELS, is_gfd_label
from gpusched.devices.mig import MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL
from gpusched.devices.mig_manager import STATE_PENDING
from gpusched.objects.assignment import held_by

log = logging.getLogger(__name__)
COMPONENT = "nvidia-device-plugin"
MIG_MANAGER_COMPONENT = "nvidia-mig-manager"
MIG_EVENT_REASON = "MigConfigFailed"     # gpusched's: mig-manager itself records no events
MIG_PENDING_REASON = "MigConfigPending"
GPU_PREFIXES = ("nvidia.com/", "gpusched.io/")
FEATURE_LABELS = "nfd.node.kubernetes.io/feature-labels"
TIMESTAMP_LABEL = "nvidia.com/gfd.timestamp"


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every node, or (``changes``) the changed nodes unless what every node's devices derive
    from changed (ConfigMaps, the ClusterPolicy, the GPU operator's pods): then every node."""
    inputs = device_inputs(view)
    # What is advertised is a pure function of the node, the ConfigMaps, the ClusterPolicy and
    # the config the node's plugin pod loaded: a node whose inputs have the versions of the last
    # pass is skipped (this pass runs at every settle round; re-deriving 1,000 nodes each time
    # dominated `advance`).
    seen = view.memo.setdefault("device-plugin", {})
    versions = (tuple(c["metadata"].get("resourceVersion") for c in inputs.configmaps),
                inputs.policy_version)
    keyed = changes is not None and not _inputs_changed(changes)
    for node in _nodes_to_visit(view, changes) if keyed and changes is not None else view.list("Node"):
        name = node["metadata"]["name"]
        pin = json.dumps(inputs.pinned[name], sort_keys=True) if name in inputs.pinned else None
        busy = busy_gpus(view, name) if MIG_CONFIG_LABEL in (node["metadata"].get("labels") or {}) else {}
        version = (node["metadata"].get("resourceVersion"), versions, pin, busy)
        if seen.get(name) == version:
            continue
        state = _reconcile_node(view, node, inputs.for_node(name), inputs.policy, busy)
        current = view.get("Node", name)
        if current is node and MIG_CONFIG_LABEL not in (node["metadata"].get("labels") or {}):
            # left as it was, and no mig-manager ran: what the node's readers (the snapshot, the
            # kubelet) would derive with recorded=True, so they reuse it (device_inputs.memo)
            inputs.remember(node, state.devices)
        seen[name] = (current["metadata"].get("resourceVersion"), versions, pin, busy) \
            if current else None


def _nodes_to_visit(view: View, changes: Changes) -> list[dict[str, Any]]:
    """The changed nodes, and the nodes with a MIG change pending whose pods changed."""
    nodes = {n["metadata"]["name"]: n for n in changed_nodes(view, changes)}
    for name in sorted(changes.node_names() - set(nodes)):
        node = view.get("Node", name)
        if node is not None and (node["metadata"].get("labels") or {}).get(
                MIG_CONFIG_STATE_LABEL) == STATE_PENDING:
            nodes[name] = node
    return [nodes[name] for name in sorted(nodes)]


def busy_gpus(view: View, node: str) -> dict[int, str]:
    """GPU index -> the live pods holding devices on it (``ns/name`` joined by commas)."""
    users: dict[int, list[str]] = {}
    for key in view.live_pods_on(node):
        pod = view.objects[key]
        for index in held_by(pod).gpu_indices:
            users.setdefault(index, []).append(f"{key[1]}/{key[2]}")
    return {index: ",".join(pods) for index, pods in sorted(users.items())}


def _inputs_changed(changes: Changes) -> bool:
    """A change to what every node's devices derive from (``cluster.kubelet.device_inputs``)."""
    return any(key[0] in ("ConfigMap", "ClusterPolicy") or
               (key[0] == "Pod" and key[1] == OPERATOR_NAMESPACE) for key in changes.keys)


def advertised(node: dict[str, Any], configmaps: list[dict[str, Any]], now: str,
               policy: PolicyConfig | None = None,
               busy: dict[int, str] | None = None) -> tuple[dict[str, Any], NodeDeviceState]:
    """``node`` as the device plugin and GFD leave it (GFD labels, MIG state annotations,
    ``nvidia.com/*`` capacity and allocatable), and the device state it came from. Pure: the
    Cluster Autoscaler's template nodes (``controllers.autoscaling.autoscaler``) are built with
    it."""
    state = node_device_state(node, configmaps, policy=policy, busy=busy)
    new = copy_tree(node)
    write_gfd_labels(new, dict(state.labels), now)
    if state.annotations:           # the GPUs' MIG state after mig-manager (devices.mig_manager)
        new.setdefault("metadata", {}).setdefault("annotations", {}).update(state.annotations)
    status = new.setdefault("status", {})
    for field in ("capacity", "allocatable"):
        values = {k: v for k, v in (status.get(field) or {}).items()
                  if not k.startswith(GPU_PREFIXES)}
        values.update({k: str(v) for k, v in dict(state.capacity).items()})
        status[field] = values
    return new, state


def _reconcile_node(view: View, node: dict[str, Any], configmaps: list[dict[str, Any]],
                    policy: PolicyConfig | None = None,
                    busy: dict[int, str] | None = None) -> NodeDeviceState:
    new, state = advertised(node, configmaps, view.timestamp(), policy, busy)
    if getattr(state, "error", ""):
        view.record_event(node, "FailedDevicePluginConfig", str(state.error), "Warning",
                          COMPONENT)
    changed = write.update(view, new)
    if changed and state.warning:
        view.record_event(new, "UnknownGPUModel", state.warning, "Warning", COMPONENT)
    if changed and state.mig_log:   # mig-manager only logs; gpusched shows its lines as an event
        pending = state.labels.get(MIG_CONFIG_STATE_LABEL) == STATE_PENDING
        view.record_event(new, MIG_PENDING_REASON if pending else MIG_EVENT_REASON,
                          "; ".join(state.mig_log), "Warning", MIG_MANAGER_COMPONENT)
    return state


def owned_labels(node: dict[str, Any]) -> set[str]:
    """The labels GFD wrote last time: NFD's ``feature-labels`` annotation (labels NFD created
    for GFD's features), or, on a node GFD never labelled, the keys GFD writes
    (``gfd.is_gfd_label``). A user's ``nvidia.com/gpu=true`` is in neither."""
    meta = node.get("metadata") or {}
    listed = (meta.get("annotations") or {}).get(FEATURE_LABELS)
    if listed is not None:
        return {key for key in listed.split(",") if key}
    return {key for key in meta.get("labels") or {} if is_gfd_label(key)}


def write_gfd_labels(node: dict[str, Any], computed: dict[str, str], now: str) -> None:
    """Replace the GFD-owned labels of ``node`` with ``computed`` (user labels and annotations
    untouched). ``nvidia.com/gfd.timestamp`` (Unix seconds of the virtual clock) changes only
    when another GFD label does, so settling reaches a fixpoint."""
    meta = node.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    owned = owned_labels(node) - USER_SET_LABELS
    gfd = {k: v for k, v in computed.items() if is_gfd_label(k)}
    previous = {k: labels[k] for k in owned if k in labels and k != TIMESTAMP_LABEL}
    stamp = labels.get(TIMESTAMP_LABEL) if previous == gfd else None
    for key in owned:
        labels.pop(key, None)
    labels.update(computed)
    annotations = meta.setdefault("annotations", {})
    if gfd:
        labels[TIMESTAMP_LABEL] = stamp or _unix_seconds(now)
        annotations[FEATURE_LABELS] = ",".join(sorted([*gfd, TIMESTAMP_LABEL]))
    else:
        annotations.pop(FEATURE_LABELS, None)
    for field in ("labels", "annotations"):
        if not meta[field]:
            del meta[field]


def _unix_seconds(rfc3339: str) -> str:
    return str(int(datetime.strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ")
                   .replace(tzinfo=timezone.utc).timestamp()))
