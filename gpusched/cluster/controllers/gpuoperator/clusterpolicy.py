"""The NVIDIA GPU Operator: from a ``ClusterPolicy`` to its operand DaemonSets and pods.

With a ClusterPolicy (the oldest one; later ones get ``status.state: ignored``), every pass:

1. the namespace ``gpu-operator`` exists;
2. GPU nodes (``nvidia.com/gpu.present=true``) carry ``nvidia.com/gpu.deploy.<operand>=true``
   for every operand (mig-manager only where ``nvidia.com/mig.capable=true``), as the operator
   labels them;
3. each enabled component of ``devices.operator.COMPONENTS`` exists as a DaemonSet in
   ``gpu-operator`` with its upstream name, ``app`` label, node selector on its deploy label,
   the ``nvidia.com/gpu`` toleration and (when the class exists) ``system-node-critical``;
   the device plugin and GFD get the ``config-manager`` sidecar when
   ``devicePlugin.config.name`` is set. The DaemonSet is rewritten only when the policy's
   rendering of it changes (annotation ``nvidia.com/last-applied-hash``, as the operator
   compares), so ``kubectl rollout restart`` (a template annotation) is not undone; a
   disabled component's DaemonSet is deleted. The DaemonSet controller makes one pod per node;
4. a device-plugin pod bound to a node records the device-plugin ConfigMap it read at start
   (annotation ``gpusched.io/loaded-config``: the ConfigMap's name, resourceVersion and data).
   The ``device_plugin`` controller advertises from that copy, not from the live ConfigMap:
   the operator does not watch the ConfigMap, so an edited config takes effect only when the
   plugin pods restart (``kubectl rollout restart -n gpu-operator
   daemonset/nvidia-device-plugin-daemonset``, as NVIDIA's time-slicing guide says). Node label
   changes (``nvidia.com/device-plugin.config``) still apply at once (config-manager);
5. ``status``: ``state: ready`` once every operand DaemonSet has all its pods ready
   (``notReady`` before), ``namespace: gpu-operator``.

Deleting the ClusterPolicy deletes its DaemonSets (owner references) and their pods.

Neighbours: ``devices.operator`` (the policy's fields, the components),
``controllers.workloads.daemonset`` (pods), ``kubelet.device_plugin`` (reads the loaded config).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.common import owner_reference, set_status
from gpusched.cluster.kubelet.device_inputs import ANN_LOADED_CONFIG, loaded_config
from gpusched.cluster.apiserver.view import View
from gpusched.objects import limits
from gpusched.devices.operator import (COMPONENTS, DEPLOY_LABEL, DEVICE_PLUGIN,
                                       OPERATOR_NAMESPACE, Component, PolicyConfig,
                                       active_policy, policy_config)

ANN_HASH = "nvidia.com/last-applied-hash"
GPU_PRESENT = "nvidia.com/gpu.present"
MIG_CAPABLE = "nvidia.com/mig.capable"
CRITICAL_CLASS = "system-node-critical"
COMPONENT = "gpu-operator"


def reconcile(view: View) -> None:
    policies = view.list("ClusterPolicy")
    policy = active_policy(policies)
    if policy is None:
        return
    config = policy_config(policy)
    if config is None:          # only for an empty policy, which active_policy never returns
        return
    for other in policies:
        if other is not policy:
            _set_state(view, other, "ignored")
    if view.get("Namespace", OPERATOR_NAMESPACE) is None:
        write.create(view, {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": OPERATOR_NAMESPACE}})
    _label_nodes(view)
    ready = True
    for component in COMPONENTS:
        name = component.name
        current = view.get("DaemonSet", name, OPERATOR_NAMESPACE)
        if not config.is_enabled(component.spec_key):
            if current is not None:
                write.delete(view, "DaemonSet", name, OPERATOR_NAMESPACE)
            continue
        ready = _ensure_daemonset(view, policy, config, component, current) and ready
    _record_loaded_configs(view, config)
    _set_state(view, policy, "ready" if ready else "notReady")


def _set_state(view: View, policy: dict[str, Any], state: str) -> None:
    current = view.get("ClusterPolicy", policy["metadata"]["name"]) or policy
    status = dict(current.get("status") or {})
    wanted = {**status, "state": state, "namespace": OPERATOR_NAMESPACE}
    if state == "ignored":
        wanted.pop("namespace", None)
    set_status(view, current, wanted)


def _label_nodes(view: View) -> None:
    for node in view.list("Node"):
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(GPU_PRESENT) != "true":
            continue
        wanted = {f"{DEPLOY_LABEL}{c.operand}": "true" for c in COMPONENTS
                  if not c.mig_only or labels.get(MIG_CAPABLE) == "true"}
        if all(labels.get(k) == v for k, v in wanted.items()):
            continue
        new = copy.deepcopy(node)
        new["metadata"].setdefault("labels", {}).update(wanted)
        write.update(view, new)


def _ensure_daemonset(view: View, policy: dict[str, Any], config: PolicyConfig, component: Component,
                      current: dict[str, Any] | None) -> bool:
    """Create or update the component's DaemonSet; True when all its pods are ready."""
    body = daemonset(view, policy, config, component)
    digest = body["metadata"]["annotations"][ANN_HASH]
    if current is None:
        write.create(view, body)
        return False
    if ((current.get("metadata") or {}).get("annotations") or {}).get(ANN_HASH) != digest:
        new = copy.deepcopy(current)
        kept = ((current["spec"].get("template") or {}).get("metadata") or {}).get("annotations")
        new["metadata"].setdefault("annotations", {})[ANN_HASH] = digest
        new["spec"] = body["spec"]
        if kept:
            new["spec"]["template"]["metadata"]["annotations"] = dict(kept)
        write.update(view, new)
        return False
    status = current.get("status") or {}
    return int(status.get("numberReady", 0)) >= int(status.get("desiredNumberScheduled", 0))


def daemonset(view: View, policy: dict[str, Any], config: PolicyConfig, component: Component) -> dict[str, Any]:
    """The DaemonSet the operator renders for ``component`` (assets/state-*/..._daemonset.yaml)."""
    image = (config.images or {}).get(component.spec_key, component.image)
    env = []
    if component.spec_key in ("devicePlugin", "gfd") and config.mig_strategy:
        env.append({"name": "MIG_STRATEGY", "value": config.mig_strategy})
    containers = [{"name": component.container, "image": image, **({"env": env} if env else {})}]
    if component.spec_key in ("devicePlugin", "gfd") and config.device_plugin_config:
        containers.append({"name": "config-manager", "image": image, "env": [
            {"name": "NODE_LABEL", "value": "nvidia.com/device-plugin.config"},
            {"name": "DEFAULT_CONFIG", "value": config.device_plugin_default},
            {"name": "FALLBACK_STRATEGIES", "value": "empty"}]})
    labels = {"app": component.name}
    volumes = []
    if component.spec_key in ("devicePlugin", "gfd") and config.device_plugin_config:
        volumes = [{"name": config.device_plugin_config,
                    "configMap": {"name": config.device_plugin_config}}]
    pod_spec: dict[str, Any] = {
        "nodeSelector": {f"{DEPLOY_LABEL}{component.operand}": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": containers, **({"volumes": volumes} if volumes else {})}
    if view.get("PriorityClass", CRITICAL_CLASS) is not None:
        pod_spec["priorityClassName"] = CRITICAL_CLASS
    spec = {"selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
            "updateStrategy": {"type": "RollingUpdate"}}
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": component.name, "namespace": OPERATOR_NAMESPACE,
                         "labels": dict(labels), "annotations": {ANN_HASH: digest},
                         "ownerReferences": [owner_reference(policy)]},
            "spec": spec}


def _found(recorded: Any) -> bool:
    """Whether a pod's recorded config says its ConfigMap was found (an unreadable record,
    e.g. one a user wrote, says not)."""
    try:
        record = limits.json_loads(str(recorded))
    except ValueError:
        return False
    return isinstance(record, dict) and bool(record.get("found"))


def _record_loaded_configs(view: View, config: PolicyConfig) -> None:
    """Step 4: a device-plugin pod on a node notes the config it read at start."""
    snapshot = loaded_config(view, config)
    for pod in view.list("Pod", OPERATOR_NAMESPACE):
        meta = pod.get("metadata") or {}
        if (meta.get("labels") or {}).get("app") != DEVICE_PLUGIN.name:
            continue
        recorded = (meta.get("annotations") or {}).get(ANN_LOADED_CONFIG)
        if not (pod.get("spec") or {}).get("nodeName") or (
                recorded is not None and _found(recorded)):
            continue          # not started yet, or started with its config (a missing
        if recorded == snapshot:          # ConfigMap keeps the pod waiting for its volume)
            continue
        new = copy.deepcopy(pod)
        new["metadata"].setdefault("annotations", {})[ANN_LOADED_CONFIG] = snapshot
        write.update(view, new)
