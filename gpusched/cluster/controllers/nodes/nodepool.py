"""NodePool controller: gpusched's compact node definition expanded into Node objects.

``devices.nodepool.expand_nodepool(pool)`` lists the node dicts; missing ones are created with an
ownerReference to the pool (deleting the pool deletes its nodes through the garbage collector),
nodes of the pool no longer listed are deleted. Existing nodes are left as they are (labels and
taints changed by ``label``/``taint`` survive).

Neighbours: ``devices.nodepool``; ``controllers.common.collect_garbage``; fed by its work queue
(``QUEUE``, ``controllers.base``).
"""

from __future__ import annotations

from gpusched.cluster.apiserver import write
from typing import TYPE_CHECKING, Any, Iterable

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.base import Informer, WorkQueue, itself
from gpusched.cluster.controllers.common import owner_reference
from gpusched.cluster.apiserver.view import Key, View

if TYPE_CHECKING:
    from gpusched.devices.catalog import GpuModel


def _pools_of_node(changes: Changes, keys: list[Key]) -> Iterable[Key]:
    """A Node enqueues the pool that controls it; a deleted one every pool (one of them may
    want a node of that name back)."""
    if any(key not in changes.view.objects for key in keys):
        return [("NodePool", "", p["metadata"]["name"]) for p in changes.view.list("NodePool")]
    return changes.owners("NodePool", keys)


# NodePools, their Nodes, and the ConfigMaps (user GPU models) every pool's expansion reads.
QUEUE = WorkQueue("NodePool", (itself("NodePool"), Informer("Node", _pools_of_node)),
                  resync_on=frozenset({"ConfigMap"}), pod_creator=False)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every NodePool, or (``changes``) those its informers enqueue (``QUEUE``)."""
    pools = QUEUE.objects(view, changes)
    if not pools:
        return
    from gpusched.devices.user_models import usable_user_models
    extra = usable_user_models(view.list("ConfigMap"))
    for pool in pools:
        _reconcile_pool(view, pool, extra)


def _reconcile_pool(view: View, pool: dict[str, Any], extra: dict[str, "GpuModel"]) -> None:
    """Create the pool's missing nodes; delete the nodes it controls that it no longer lists
    (read from the owner index, not a listing of every Node)."""
    from gpusched.devices.nodepool import expand_nodepool
    wanted = expand_nodepool(pool, extra)
    names = {n["metadata"]["name"] for n in wanted}
    for node in wanted:
        if view.get("Node", node["metadata"]["name"]) is None:
            node = dict(node, metadata={**node["metadata"],
                                        "ownerReferences": [owner_reference(pool)]})
            write.create(view, node)
    for key in view.dependents(pool["metadata"]["uid"]):
        if key[0] == "Node" and key[2] not in names:
            write.delete(view, "Node", key[2])
