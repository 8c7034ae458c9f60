"""The in-tree plugin registry: kube-scheduler's plugins gpusched implements, and GpuDevices.

Adding a plugin = one module in this package (``NAME``, a class with ``name`` and the methods
of the extension points it serves, ``new(args)``) plus one ``PluginEntry`` line below. Which
extension points a plugin serves is read off its class (``framework.extension_points``), as
upstream's multiPoint does with the interfaces a plugin implements.

``default_registry()`` is what profiles resolve against unless a caller passes its own: these
plugins merged with the out-of-tree ones installed distributions declare in the entry-point
group ``gpusched.plugins`` (``scheduler.registry``). Callers above the scheduler layer merge in
more (``gpusched.policies``) with ``merged``.

Neighbours: ``scheduler.registry``; used by ``scheduler.profile``; each plugin module imports
only framework, snapshot, messages, objects and devices.
"""

from __future__ import annotations

import functools

from gpusched.scheduler.plugins import (balanced_allocation, gpu_devices, node_affinity, node_name,
                                        node_resources_fit, node_unschedulable, prioritysort,
                                        taint_toleration)
from gpusched.scheduler.plugins import (coscheduling, default_preemption, dynamic_resources,
                                        inter_pod_affinity, node_ports, pod_topology_spread,
                                        volume_binding)
from gpusched.scheduler import framework
from gpusched.scheduler.registry import (Factory, PluginEntry, Registry, entry_point_plugins,
                                         merged, registry_of)

__all__ = ["IN_TREE", "REGISTRY", "Factory", "PluginEntry", "Registry", "default_registry",
           "merged", "registry_of"]

IN_TREE: dict[str, PluginEntry] = registry_of(
    PluginEntry(prioritysort.PrioritySort, prioritysort.new),
    PluginEntry(node_unschedulable.NodeUnschedulable, node_unschedulable.new),
    PluginEntry(node_name.NodeName, node_name.new),
    PluginEntry(node_resources_fit.NodeResourcesFit, node_resources_fit.new),
    PluginEntry(balanced_allocation.BalancedAllocation, balanced_allocation.new),
    PluginEntry(node_affinity.NodeAffinity, node_affinity.new),
    PluginEntry(taint_toleration.TaintToleration, taint_toleration.new),
    PluginEntry(node_ports.NodePorts, node_ports.new),
    PluginEntry(dynamic_resources.DynamicResources, dynamic_resources.new),
    PluginEntry(gpu_devices.GpuDevices, gpu_devices.new),
    PluginEntry(pod_topology_spread.PodTopologySpread, pod_topology_spread.new),
    PluginEntry(inter_pod_affinity.InterPodAffinity, inter_pod_affinity.new),
    PluginEntry(volume_binding.VolumeBinding, volume_binding.new),
    PluginEntry(default_preemption.DefaultPreemption, default_preemption.new),
    PluginEntry(coscheduling.Coscheduling, coscheduling.new),    # optional: in no default profile
)
REGISTRY = IN_TREE


@functools.cache
def default_registry() -> dict[str, PluginEntry]:
    """The in-tree plugins merged with the installed out-of-tree ones (read once per process)."""
    return merged(IN_TREE, entry_point_plugins())


# upstream's `var _ framework.FilterPlugin = &NodeName{}` lines: mypy checks each class's methods
# against the point's Protocol (arguments and results); tests/scheduler/test_plugin_contract.py
# checks these lists against what the classes implement and every profile entry against its class.
_QUEUE_SORT: tuple[type[framework.QueueSortPlugin], ...] = (prioritysort.PrioritySort,
                                                             coscheduling.Coscheduling)
_PRE_FILTER: tuple[type[framework.PreFilterPlugin], ...] = (
    node_affinity.NodeAffinity, node_resources_fit.NodeResourcesFit, node_ports.NodePorts,
    volume_binding.VolumeBinding, pod_topology_spread.PodTopologySpread,
    inter_pod_affinity.InterPodAffinity, dynamic_resources.DynamicResources, gpu_devices.GpuDevices,
    coscheduling.Coscheduling)
_FILTER: tuple[type[framework.FilterPlugin], ...] = (
    node_unschedulable.NodeUnschedulable, node_name.NodeName, taint_toleration.TaintToleration,
    node_affinity.NodeAffinity, node_ports.NodePorts, node_resources_fit.NodeResourcesFit,
    volume_binding.VolumeBinding, pod_topology_spread.PodTopologySpread,
    inter_pod_affinity.InterPodAffinity, dynamic_resources.DynamicResources,
    gpu_devices.GpuDevices)
_POST_FILTER: tuple[type[framework.PostFilterPlugin], ...] = (
    dynamic_resources.DynamicResources, default_preemption.DefaultPreemption,
    coscheduling.Coscheduling)
_PRE_SCORE: tuple[type[framework.PreScorePlugin], ...] = (
    balanced_allocation.BalancedAllocation, node_affinity.NodeAffinity,
    pod_topology_spread.PodTopologySpread, inter_pod_affinity.InterPodAffinity,
    dynamic_resources.DynamicResources, gpu_devices.GpuDevices)
_SCORE: tuple[type[framework.ScorePlugin], ...] = (
    taint_toleration.TaintToleration, node_affinity.NodeAffinity,
    node_resources_fit.NodeResourcesFit, pod_topology_spread.PodTopologySpread,
    inter_pod_affinity.InterPodAffinity, balanced_allocation.BalancedAllocation,
    dynamic_resources.DynamicResources, gpu_devices.GpuDevices)
_NORMALIZE: tuple[type[framework.ScoreExtensions], ...] = (
    taint_toleration.TaintToleration, node_affinity.NodeAffinity,
    pod_topology_spread.PodTopologySpread, inter_pod_affinity.InterPodAffinity,
    dynamic_resources.DynamicResources)
_RESERVE: tuple[type[framework.ReservePlugin], ...] = (
    dynamic_resources.DynamicResources, gpu_devices.GpuDevices, coscheduling.Coscheduling)
_PERMIT: tuple[type[framework.PermitPlugin], ...] = (coscheduling.Coscheduling,)
DECLARED: dict[str, tuple[type, ...]] = {
    "queueSort": _QUEUE_SORT, "preFilter": _PRE_FILTER, "filter": _FILTER,
    "postFilter": _POST_FILTER, "preScore": _PRE_SCORE, "score": _SCORE, "reserve": _RESERVE,
    "permit": _PERMIT, "normalize": _NORMALIZE,
}
