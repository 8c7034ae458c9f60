"""Tiny builders for the devices tests: models, pods, nodes and plugin configs."""

from __future__ import annotations

from gpusched.devices.catalog import CATALOG, GpuModel
from gpusched.devices.mig import layout_for
from gpusched.devices.node import NodeDevices
from gpusched.devices.plugin_config import DevicePluginConfig, parse_config
from gpusched.objects.types import PodInfo


def model(name: str = "A100-40GB") -> GpuModel:
    return CATALOG[name]


def make_pod(uid: str = "p1", gpus: int = 0, milli: int = 0, **resources: int) -> PodInfo:
    """``make_pod(gpus=2)``, ``make_pod(milli=300)``, ``make_pod(**{"nvidia.com/mig-1g.5gb": 1})``."""
    requests = dict(resources)
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    return PodInfo(namespace="default", name=uid, uid=uid, requests=requests, gpu_milli=milli)


def sharing_config(replicas: int = 4, rename: bool = False, kind: str = "timeSlicing",
                   resource: str = "nvidia.com/gpu", policy: str | None = None,
                   fail_gt_one: bool | None = None, mig_strategy: str | None = None) -> DevicePluginConfig:
    body: dict = {"version": "v1", "sharing": {kind: {"renameByDefault": rename, "resources": [
        {"name": resource, "replicas": replicas}]}}}
    if fail_gt_one is not None:
        body["sharing"][kind]["failRequestsGreaterThanOne"] = fail_gt_one
    flags: dict = {}
    if policy:
        flags["plugin"] = {"sharedDevicesAllocationPolicy": policy}
    if mig_strategy:
        flags["migStrategy"] = mig_strategy
    if flags:
        body["flags"] = flags
    return parse_config(body)


def make_node(spec: str = "8xA100-40GB", config: DevicePluginConfig | None = None,
              mig: str | None = None, strategy: str | None = None, name: str = "n1") -> NodeDevices:
    """``make_node("8xA100-40GB", mig="all-balanced", strategy="mixed")``."""
    count, _, model_name = spec.partition("x")
    gpu_model = CATALOG[model_name]
    layout = layout_for(gpu_model, mig, int(count)) if mig else None
    return NodeDevices.build(name, gpu_model, int(count), config, layout, strategy)
