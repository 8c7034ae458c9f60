"""NVIDIA's DRA kubelet plugin: each DRA-managed node's GPUs published as ResourceSlices.

For a node labelled ``gpusched.io/gpu-management=dra|dra-dynamic-mig`` (``devices.dra_classes``)
the pool ``<node>`` of driver ``gpu.nvidia.com`` holds the slices ``devices.dra_slices`` computes
from the node's GPU model and count (``devices.advertise.node_gpus``), its driver version
(annotation ``gpusched.io/driver-version``), the MIG layout mig-manager recorded (annotation
``gpusched.io/mig-layout``: static MIG devices) and the driver's consumable shares (label
``gpusched.io/dra-consumable-shares``). As the resourceslice controller of
``k8s.io/dynamic-resource-allocation/resourceslice`` does, a changed pool is republished with
``pool.generation`` one higher on every slice, and slices no longer wanted are deleted; an
unchanged pool is left alone. A node that stops being DRA-managed loses its slices; a deleted
node's slices go with it (they are owned by the Node; the garbage collector deletes them).

The driver's DeviceClasses ``gpu.nvidia.com`` and ``mig.nvidia.com`` are created (the Helm chart
installs them) once a node is DRA-managed, and left alone afterwards: an edited class stays.

Neighbours: ``devices.dra_slices``, ``devices.dra_classes``; fed by its work queue (``QUEUE``,
``controllers.base``), run after the device-plugin controller (which records the MIG layout).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, itself
from gpusched.devices.advertise import ANN_DRIVER_VERSION, node_gpus
from gpusched.devices.dra_classes import (CONSUMABLE_SHARES_LABEL, DRA_DYNAMIC_MIG,
                                          device_classes, dra_managed, management)
from gpusched.devices.dra_slices import DRIVER, NodeGpus, node_slices
from gpusched.devices.gfd import DEFAULT_DRIVER_VERSION
from gpusched.devices.mig_manager import MIG_LAYOUT_ANNOTATION, current_layout
from gpusched.devices.user_models import usable_user_models
from gpusched.errors import GpuschedError

# Nodes; the ConfigMaps (user GPU models) every node's GPUs are read with.
QUEUE = WorkQueue("Node", (itself("Node"),), resync_on=frozenset({"ConfigMap"}), pod_creator=False)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every node, or (``changes``) the changed ones (``QUEUE``)."""
    nodes = QUEUE.objects(view, changes)
    if not nodes:
        return
    extra = usable_user_models(view.list("ConfigMap"))
    managed = False
    for node in nodes:
        managed = _reconcile_node(view, node, extra) or managed
    if managed:
        _ensure_classes(view)


def node_gpus_for_dra(node: dict[str, Any], extra: Any = None) -> NodeGpus | None:
    """What the kubelet plugin would discover on ``node``; None when it is not DRA-managed or
    has no GPUs."""
    meta = node.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if not dra_managed(labels):
        return None
    try:
        model, count, _warning = node_gpus(node, extra)
    except GpuschedError:
        return None
    if model is None or count == 0:
        return None
    layout = current_layout(annotations.get(MIG_LAYOUT_ANNOTATION), count)
    return NodeGpus(str(meta.get("name", "")), model, count,
                    str(annotations.get(ANN_DRIVER_VERSION) or DEFAULT_DRIVER_VERSION),
                    tuple(None if gpu is None else tuple(gpu) for gpu in layout),
                    management(labels) == DRA_DYNAMIC_MIG, str(meta.get("uid", "")),
                    str(labels.get(CONSUMABLE_SHARES_LABEL, "")))


def _reconcile_node(view: View, node: dict[str, Any], extra: Any) -> bool:
    """Publish (or withdraw) one node's pool; True when the node is DRA-managed."""
    gpus = node_gpus_for_dra(node, extra)
    current = _published(view, node)
    wanted = node_slices(gpus) if gpus is not None else []
    if _same(current, wanted):
        return gpus is not None
    generation = 1 + max((int(s["spec"]["pool"].get("generation", 0)) for s in current),
                         default=-1)
    names = set()
    for body in node_slices(gpus, generation) if gpus is not None else []:
        names.add(body["metadata"]["name"])
        existing = view.get("ResourceSlice", body["metadata"]["name"])
        if existing is None:
            write.create(view, body)
        else:
            write.update(view, {**existing, "spec": body["spec"]})
    for old in current:
        if old["metadata"]["name"] not in names:
            write.delete(view, "ResourceSlice", old["metadata"]["name"])
    return gpus is not None


def _published(view: View, node: dict[str, Any]) -> list[dict[str, Any]]:
    """The driver's slices the node owns, by name."""
    uid = str((node.get("metadata") or {}).get("uid", ""))
    found = [view.objects[key] for key in view.dependents(uid) if key[0] == "ResourceSlice"]
    return sorted((s for s in found if (s.get("spec") or {}).get("driver") == DRIVER),
                  key=lambda s: str(s["metadata"]["name"]))


def _comparable(body: dict[str, Any]) -> tuple[str, Any]:
    spec = dict(body.get("spec") or {})
    spec["pool"] = {k: v for k, v in (spec.get("pool") or {}).items() if k != "generation"}
    return str(body["metadata"]["name"]), spec


def _same(current: list[dict[str, Any]], wanted: list[dict[str, Any]]) -> bool:
    return sorted(map(_comparable, current), key=lambda c: c[0]) == \
        sorted(map(_comparable, wanted), key=lambda c: c[0])


def _ensure_classes(view: View) -> None:
    """The driver's DeviceClasses, created when missing (never overwritten)."""
    for body in device_classes():
        if view.get("DeviceClass", body["metadata"]["name"]) is None:
            write.create(view, body)
