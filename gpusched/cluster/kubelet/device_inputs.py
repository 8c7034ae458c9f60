"""What decides the devices a node's device plugin advertises, read from the view.

Besides the Node itself: the ConfigMaps (the NVIDIA device-plugin config), the GPU Operator's
``ClusterPolicy``, and, per node, the device-plugin ConfigMap its running plugin pod loaded at
start (annotation ``gpusched.io/loaded-config``, written by
``controllers.gpuoperator.clusterpolicy``: the operator does not watch the ConfigMap, so an edit
applies once the plugin pods restart).

:func:`device_inputs` gathers them once per pass; :func:`node_devices_for` turns a Node and those
inputs into its ``NodeDevices`` (``devices.advertise``). The scheduler's snapshot, the kubelet's
admission, the autoscaler's template nodes, the usage model and the metrics read devices through
it, so every reader sees what the plugin advertises.

Neighbours: ``devices.operator`` (ClusterPolicy fields), ``devices.advertise`` (advertising),
``controllers.gpuoperator.clusterpolicy`` (records the loaded config), ``cluster.scheduling``
(snapshot).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gpusched.cluster.apiserver.view import ObjectSource, View
from gpusched.devices.advertise import node_device_state
from gpusched.devices.node import NodeDevices
from gpusched.objects import limits
from gpusched.devices.operator import OPERATOR_NAMESPACE, PolicyConfig, active_policy, policy_config

ANN_LOADED_CONFIG = "gpusched.io/loaded-config"
MEMO_KEY = "node-devices"      # View.memo: node name -> (DeviceInputs.node_key, NodeDevices)


def loaded_config(view: View, config: PolicyConfig) -> str:
    """The annotation value: the ClusterPolicy's device-plugin ConfigMap as it is now."""
    name = config.device_plugin_config
    cm = view.get("ConfigMap", name, OPERATOR_NAMESPACE) if name else None
    record = {"configMap": f"{OPERATOR_NAMESPACE}/{name}" if name else "",
              "resourceVersion": str((cm or {}).get("metadata", {}).get("resourceVersion", "")),
              "found": cm is not None, "data": dict((cm or {}).get("data") or {})}
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def _loaded_record(pod: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(node, the recorded config) of a running, bound plugin pod with a readable record."""
    meta = pod.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(ANN_LOADED_CONFIG)
    node = (pod.get("spec") or {}).get("nodeName")
    if raw is None or not node or meta.get("deletionTimestamp") or \
            (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return None
    try:
        record = limits.json_loads(str(raw))
    except ValueError:
        return None
    return (str(node), record) if isinstance(record, dict) else None


def pinned_configmaps(view: ObjectSource, config: PolicyConfig | None) -> dict[str, dict[str, Any] | None]:
    """Node name -> the device-plugin ConfigMap its newest running plugin pod loaded (None: the
    ConfigMap did not exist). Nodes without such a pod, or whose pod loaded another ConfigMap
    than the policy now names, are absent (the live ConfigMap applies)."""
    out: dict[str, dict[str, Any] | None] = {}
    if config is None:
        return out
    wanted = f"{OPERATOR_NAMESPACE}/{config.device_plugin_config}" \
        if config.device_plugin_config else ""
    pods = sorted(view.list("Pod", OPERATOR_NAMESPACE),
                  key=lambda p: ((p.get("metadata") or {}).get("creationTimestamp", ""),
                                 (p.get("metadata") or {}).get("name", "")))
    for pod in pods:
        loaded = _loaded_record(pod)
        if loaded is None or str(loaded[1].get("configMap", "")) != wanted:
            continue
        node, record = loaded
        namespace, _, name = wanted.partition("/")
        out[node] = None if not record.get("found") else {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace,
                         "resourceVersion": record.get("resourceVersion", "")},
            "data": dict(record.get("data") or {})}
    return out


def configmaps_for(configmaps: list[dict[str, Any]], pinned: dict[str, Any], node: str) -> list[dict[str, Any]]:
    """The ConfigMaps as the node's device plugin sees them: the one its pod loaded at start in
    place of the live one in ``gpu-operator``."""
    if node not in pinned:
        return configmaps
    loaded = pinned[node]
    others = [c for c in configmaps
              if (c.get("metadata") or {}).get("namespace") != OPERATOR_NAMESPACE
              or (loaded is not None and c["metadata"].get("name") != loaded["metadata"]["name"])]
    return others + ([loaded] if loaded is not None else [])


@dataclass(frozen=True)
class DeviceInputs:
    """Everything besides the Node that decides what its device plugin advertises.

    ``memo`` (from a view's ``memo``): node name -> (``node_key``, the node's devices as
    advertised, never handed out), so the device plugin, the scheduler's snapshot and the kubelet
    derive a node's devices once per (node, inputs) per command instead of once each."""

    configmaps: list[dict[str, Any]]
    policy: Any = None                   # devices.operator.PolicyConfig
    pinned: dict[str, Any] = field(default_factory=dict)
    policy_version: str = ""
    memo: dict[str, Any] | None = field(default=None, compare=False)

    def for_node(self, name: str) -> list[dict[str, Any]]:
        return configmaps_for(self.configmaps, self.pinned, name)

    def node_key(self, node: dict[str, Any]) -> tuple[Any, ...] | None:
        """What the node's advertised devices derive from, by version: the node's uid and
        resourceVersion (every write moves it), the ConfigMaps' and the ClusterPolicy's versions
        and the config its plugin loaded. None: not remembered (no memo, or a node never stored,
        such as the autoscaler's template nodes)."""
        meta = node.get("metadata") or {}
        version = meta.get("resourceVersion")
        if self.memo is None or not version:
            return None
        name = meta.get("name", "")
        pin = repr(self.pinned[name]) if name in self.pinned else None
        return (meta.get("uid"), version, self.policy_version, pin,
                tuple((c.get("metadata") or {}).get("resourceVersion") for c in self.configmaps))

    def remember(self, node: dict[str, Any], devices: NodeDevices) -> None:
        """Keep ``devices`` as what ``node`` advertises (the device plugin's own derivation of a
        node it left unchanged)."""
        key = self.node_key(node)
        if key is not None and self.memo is not None:
            self.memo[str((node.get("metadata") or {}).get("name", ""))] = (key, devices)


def device_inputs(view: ObjectSource) -> DeviceInputs:
    body = active_policy(view.list("ClusterPolicy"))
    config = policy_config(body)
    memo = getattr(view, "memo", None)
    return DeviceInputs(view.list("ConfigMap"), config, pinned_configmaps(view, config),
                        str(((body or {}).get("metadata") or {}).get("resourceVersion", "")),
                        memo.setdefault(MEMO_KEY, {}) if isinstance(memo, dict) else None)


def node_devices_for(node: dict[str, Any], inputs: Any) -> Any:
    """The node's ``NodeDevices``, as the device plugin advertises them (``devices.advertise``).
    ``inputs``: ``device_inputs(view)`` (ConfigMaps, ClusterPolicy, the config each node's
    plugin loaded), or a plain list of ConfigMaps (no GPU Operator). A node derived before with
    the same inputs gets a clone of that derivation (its own holder table)."""
    if not isinstance(inputs, DeviceInputs):
        inputs = DeviceInputs(list(inputs))
    name = (node.get("metadata") or {}).get("name", "")
    key = inputs.node_key(node)
    if key is not None and inputs.memo is not None:
        hit = inputs.memo.get(name)
        if hit is not None and hit[0] == key:
            return hit[1].clone()
    devices = node_device_state(node, inputs.for_node(name), policy=inputs.policy,
                                recorded=True).devices
    if key is not None and inputs.memo is not None:
        inputs.memo[name] = (key, devices)
        return devices.clone()
    return devices
