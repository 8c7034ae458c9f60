"""Device plugin + GPU Feature Discovery: what each GPU node advertises and how it is labelled.

For every node, ``devices.advertise.node_device_state(node, configmaps)`` computes, from the
node's GPU model/count labels, its ``nvidia.com/device-plugin.config`` and ``nvidia.com/mig.config``
labels and the device-plugin ConfigMap(s), the GFD labels and the GPU resources. This controller
writes them into the Node (``nvidia.com/*`` labels replaced, except the two users set:
``nvidia.com/device-plugin.config`` and ``nvidia.com/mig.config``; every ``nvidia.com/*`` capacity
/allocatable entry replaced). A changed ConfigMap or label therefore re-advertises the node as a plugin restart
would; running pods keep their devices (their assignment annotations are untouched; the
scheduler's device view is rebuilt from them, see ``cluster.scheduling``). A config error is
recorded as a Warning event on the node and advertises nothing new. A GPU product gpusched does
not know (``devices.user_models``) is advertised with the node's GPU count and a Warning event
``UnknownGPUModel`` recorded when the node's labels change.

Neighbours: ``devices.advertise`` computes; ``cluster.scheduling`` reads the Node it writes.
"""

from __future__ import annotations

import copy
import logging

from gpusched.cluster.view import View
from gpusched.devices.advertise import node_device_state

log = logging.getLogger(__name__)
COMPONENT = "nvidia-device-plugin"
GPU_PREFIXES = ("nvidia.com/", "gpusched.io/")
USER_LABELS = frozenset({"nvidia.com/device-plugin.config", "nvidia.com/mig.config"})


def reconcile(view: View) -> None:
    configmaps = view.list("ConfigMap")
    # What is advertised is a pure function of the node and the ConfigMaps: a node whose
    # resourceVersion and the ConfigMaps' versions are those of the last pass is skipped (this
    # pass runs at every settle round; re-deriving 1,000 nodes each time dominated `advance`).
    seen = view.memo.setdefault("device-plugin", {})
    cm_versions = tuple(c["metadata"].get("resourceVersion") for c in configmaps)
    for node in view.list("Node"):
        name = node["metadata"]["name"]
        version = (node["metadata"].get("resourceVersion"), cm_versions)
        if seen.get(name) == version:
            continue
        _reconcile_node(view, node, configmaps)
        current = view.get("Node", name)
        seen[name] = (current["metadata"].get("resourceVersion"), cm_versions) if current else None


def _reconcile_node(view: View, node: dict, configmaps: list[dict]) -> None:
    state = node_device_state(node, configmaps)
    new = copy.deepcopy(node)
    if getattr(state, "error", ""):
        view.record_event(node, "FailedDevicePluginConfig", str(state.error), "Warning",
                          COMPONENT)
    labels = new.setdefault("metadata", {}).setdefault("labels", {})
    for key in [k for k in labels if k.startswith("nvidia.com/") and k not in USER_LABELS
                and k not in state.labels]:
        del labels[key]          # GFD labels of the previous config go with it
    labels.update(dict(state.labels))
    status = new.setdefault("status", {})
    for field in ("capacity", "allocatable"):
        values = {k: v for k, v in (status.get(field) or {}).items()
                  if not k.startswith(GPU_PREFIXES)}
        values.update({k: str(v) for k, v in dict(state.capacity).items()})
        status[field] = values
    if view.update(new) and state.warning:
        view.record_event(new, "UnknownGPUModel", state.warning, "Warning", COMPONENT)
