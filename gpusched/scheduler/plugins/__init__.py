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
from gpusched.scheduler.plugins import (default_preemption, dynamic_resources, inter_pod_affinity,
                                        node_ports, pod_topology_spread, volume_binding)
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
)
REGISTRY = IN_TREE


@functools.cache
def default_registry() -> dict[str, PluginEntry]:
    """The in-tree plugins merged with the installed out-of-tree ones (read once per process)."""
    return merged(IN_TREE, entry_point_plugins())
