"""The plugin registry: plugin name -> factory ``new(args: dict | None) -> plugin``.

Adding a plugin = one module in this package (``NAME``, a class with ``name``, ``new(args)``) plus
one line below. Profiles (``scheduler.profile``) look names up here; an unknown name is a
``UsageError``. Which extension points a plugin serves follows from the methods it has
(``filter``, ``score``, ``reserve`` ...), as upstream's multiPoint does.

Neighbours: used by ``scheduler.profile``; each plugin module imports only framework, snapshot,
messages, objects and devices.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from gpusched.errors import UsageError

from gpusched.scheduler.plugins import (balanced_allocation, gpu_devices, node_affinity, node_name,
                                        node_resources_fit, node_unschedulable, prioritysort,
                                        taint_toleration)
from gpusched.scheduler.plugins import (default_preemption, dynamic_resources, inter_pod_affinity,
                                        node_ports, pod_topology_spread, volume_binding)

Factory = Callable[[dict[str, Any] | None], Any]

IN_TREE: dict[str, Factory] = {
    prioritysort.NAME: prioritysort.new,
    node_unschedulable.NAME: node_unschedulable.new,
    node_name.NAME: node_name.new,
    node_resources_fit.NAME: node_resources_fit.new,
    balanced_allocation.NAME: balanced_allocation.new,
    node_affinity.NAME: node_affinity.new,
    taint_toleration.NAME: taint_toleration.new,
    node_ports.NAME: node_ports.new,
    dynamic_resources.NAME: dynamic_resources.new,
    gpu_devices.NAME: gpu_devices.new,
    pod_topology_spread.NAME: pod_topology_spread.new,
    inter_pod_affinity.NAME: inter_pod_affinity.new,
    volume_binding.NAME: volume_binding.new,
    default_preemption.NAME: default_preemption.new,
}
REGISTRY = IN_TREE    # the registry profiles resolve against unless a caller passes another


def merged(*registries: Mapping[str, Factory]) -> dict[str, Factory]:
    """One registry from several (upstream ``runtime.Registry.Merge``): a name in two is an error."""
    out: dict[str, Factory] = {}
    for registry in registries:
        for name, factory in registry.items():
            if name in out:
                raise UsageError(f"a plugin named {name} already exists")
            out[name] = factory
    return out
