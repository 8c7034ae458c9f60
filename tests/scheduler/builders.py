"""Tiny builders for scheduler tests: ``make_node``, ``make_pod``, ``cluster``, ``scheduler``.

``make_node("gpu-1", gpus=8, model="A100-40GB")`` returns ``(NodeInfo, NodeDevices | None)``
built with the real ``devices.node.NodeDevices`` (``replicas=4`` gives a time-slicing config).
"""

from __future__ import annotations

import itertools

import numpy as np

from gpusched.devices.catalog import lookup_model
from gpusched.devices.node import NodeDevices
from gpusched.devices.plugin_config import parse_config
from gpusched.objects.quantity import canonical
from gpusched.objects.types import (NodeInfo, NodeSelectorTerm, PodInfo, PreferredTerm,
                                    Requirement, Taint, Toleration)
from gpusched.scheduler.framework import SKIP, Code, CycleState
from gpusched.scheduler.runner import Scheduler
from gpusched.scheduler.snapshot import Snapshot

_seq = itertools.count(1)


def make_node(name: str = "node-1", gpus: int = 0, model: str = "A100-40GB", cpu: str = "32",
              memory: str = "256Gi", pods: int = 110, labels: dict | None = None,
              taints: tuple[Taint, ...] = (), unschedulable: bool = False,
              extra: dict[str, int] | None = None, replicas: int = 0
              ) -> tuple[NodeInfo, NodeDevices | None]:
    devices = None
    allocatable = {"cpu": canonical("cpu", cpu), "memory": canonical("memory", memory), "pods": pods}
    if gpus:
        config = None
        if replicas:
            config = parse_config({"version": "v1", "sharing": {"timeSlicing": {"resources": [
                {"name": "nvidia.com/gpu", "replicas": replicas}]}}})
        devices = NodeDevices.build(name, lookup_model(model), gpus, config)
        allocatable.update(devices.advertised)
    allocatable.update(extra or {})
    info = NodeInfo(name=name, allocatable=allocatable, capacity=dict(allocatable),
                    labels={"kubernetes.io/hostname": name, **(labels or {})}, taints=tuple(taints),
                    unschedulable=unschedulable, gpu_model=model if gpus else "", gpu_count=gpus)
    return info, devices


def make_pod(name: str | None = None, gpus: int = 0, cpu: str = "", memory: str = "",
             priority: int = 0, gpu_milli: int = 0, gpu_models: tuple[str, ...] = (),
             extra: dict[str, int] | None = None, **fields) -> PodInfo:
    seq = next(_seq)
    name = name or f"pod-{seq}"
    requests: dict[str, int] = {}
    if cpu:
        requests["cpu"] = canonical("cpu", cpu)
    if memory:
        requests["memory"] = canonical("memory", memory)
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    requests.update(extra or {})
    return PodInfo(namespace="default", name=name, uid=f"uid-{name}", requests=requests,
                   priority=priority, gpu_milli=gpu_milli, gpu_models=tuple(gpu_models),
                   creation_seq=fields.pop("creation_seq", seq), **fields)


def snapshot_of(*nodes: tuple[NodeInfo, NodeDevices | None]) -> Snapshot:
    snap = Snapshot()
    for info, devices in nodes:
        snap.add_node(info, devices)
    return snap


def labelled_snapshot(nodes: dict[str, dict[str, str]],
                      placed: dict[str, list[PodInfo]] | None = None) -> Snapshot:
    """Roomy CPU nodes with the given labels, and pods already placed on them by node name."""
    snap = Snapshot()
    for name, labels in nodes.items():
        snap.add_node(NodeInfo(name, {"cpu": 64000, "memory": 2**40}, {}, labels=labels))
    for node, pods in (placed or {}).items():
        for pod in pods:
            snap.add_pod(pod, node)
    return snap


def filter_outcome(plugin, snap: Snapshot, pod: PodInfo) -> dict[str, tuple[str, Code]]:
    """PreFilter + Filter of one plugin over every node: node name -> (reason, code) for the
    rejected ones ({} when PreFilter skips). A node must get only its first failing rule."""
    state = CycleState()
    if plugin.pre_filter(state, pod, snap) == SKIP:
        return {}
    out: dict[str, tuple[str, Code]] = {}
    for rejection in plugin.filter(state, pod, snap, snap.all_nodes()):
        for row in np.flatnonzero(rejection.nodes):
            assert snap.names[row] not in out, "a node gets only its first failing rule"
            out[snap.names[row]] = (rejection.reason, rejection.code)
    return out


def score_outcome(plugin, snap: Snapshot, pod: PodInfo) -> dict[str, int]:
    """PreScore + Score + NormalizeScore of one plugin: node name -> normalized score."""
    state = CycleState()
    nodes = snap.all_nodes()
    if plugin.pre_score(state, pod, snap, nodes) == SKIP:
        return {}
    raw = plugin.score(state, pod, snap, nodes)
    return dict(zip(snap.names, plugin.normalize(state, pod, nodes, raw).tolist()))


def scheduler_of(*nodes: tuple[NodeInfo, NodeDevices | None], profiles=None, seed: int = 0) -> Scheduler:
    return Scheduler(snapshot_of(*nodes), profiles, np.random.default_rng(seed), lambda: 0.0)


def req(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, op, tuple(values))


def term(*reqs: Requirement) -> NodeSelectorTerm:
    return NodeSelectorTerm(tuple(reqs))


def preferred(weight: int, *reqs: Requirement) -> PreferredTerm:
    return PreferredTerm(weight, term(*reqs))


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Taint:
    return Taint(key, value, effect)


def toleration(key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> Toleration:
    return Toleration(key, operator, value, effect)
