"""How a node says its GPUs are managed by NVIDIA's DRA driver, and the driver's DeviceClasses.

A node's GPUs are DRA-managed when it carries the label ``gpusched.io/gpu-management`` with the
value ``dra`` (whole GPUs and the static MIG devices of ``nvidia.com/mig.config``) or
``dra-dynamic-mig`` (the driver's DynamicMIG gate: every legal MIG placement published,
carved on demand); absent or ``device-plugin`` is the NVIDIA device plugin. A NodePool writes the
label from ``spec.gpu.management``, and ``spec.gpu.consumableShares`` as the label
``gpusched.io/dra-consumable-shares`` (the driver's ConsumableShares gate and its Helm value
``consumableShares``: ``unlimited``, ``memory`` or a number of shares; each device may then be
allocated to many claims, each asking for part of its memory). On a DRA-managed node the device plugin advertises no
``nvidia.com/*`` extended resources (a node has a GPU resource through the device plugin or
through ResourceSlices, never both: KEP-5004); GFD's labels and mig-manager stay.

The DeviceClasses are the Helm chart's (``deployments/helm/dra-driver-nvidia-gpu/templates/
deviceclass-gpu.yaml``, ``deviceclass-mig.yaml``): ``gpu.nvidia.com`` (with
``extendedResourceName: nvidia.com/gpu``, which the chart renders for ``resource.k8s.io/v1``)
and ``mig.nvidia.com``. They exist once any node is DRA-managed.

Neighbours: ``devices.dra_slices`` (the devices the classes select), ``devices.nodepool``
(writes the label), ``devices.advertise`` (advertises nothing on such a node),
``cluster.controllers.dra.slices`` (creates the classes).
"""

from __future__ import annotations

from typing import Any, Mapping

from gpusched.devices.dra_slices import API_VERSION, DRIVER

MANAGEMENT_LABEL = "gpusched.io/gpu-management"
CONSUMABLE_SHARES_LABEL = "gpusched.io/dra-consumable-shares"   # the driver's consumableShares
DEVICE_PLUGIN = "device-plugin"
DRA = "dra"
DRA_DYNAMIC_MIG = "dra-dynamic-mig"
MANAGEMENT_VALUES = (DEVICE_PLUGIN, DRA, DRA_DYNAMIC_MIG)
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
GPU_EXTENDED_RESOURCE = "nvidia.com/gpu"


def management(labels: Mapping[str, Any] | None) -> str:
    """The node's GPU management (``device-plugin`` when unset or unknown)."""
    value = str((labels or {}).get(MANAGEMENT_LABEL, DEVICE_PLUGIN))
    return value if value in MANAGEMENT_VALUES else DEVICE_PLUGIN


def dra_managed(labels: Mapping[str, Any] | None) -> bool:
    return management(labels) != DEVICE_PLUGIN


def _selector(device_type: str) -> dict[str, Any]:
    return {"cel": {"expression": f"device.driver == '{DRIVER}' && "
                                  f"device.attributes['{DRIVER}'].type == '{device_type}'"}}


def device_classes() -> list[dict[str, Any]]:
    """The driver's DeviceClasses, as its chart renders them for ``resource.k8s.io/v1``."""
    return [
        {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": GPU_CLASS},
         "spec": {"selectors": [_selector("gpu")], "extendedResourceName": GPU_EXTENDED_RESOURCE}},
        {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": MIG_CLASS},
         "spec": {"selectors": [_selector("mig")]}},
    ]
