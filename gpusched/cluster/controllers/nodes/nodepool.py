"""NodePool controller: gpusched's compact node definition expanded into Node objects.

``devices.nodepool.expand_nodepool(pool)`` lists the node dicts; missing ones are created with an
ownerReference to the pool (deleting the pool deletes its nodes through the garbage collector),
nodes of the pool no longer listed are deleted. Existing nodes are left as they are (labels and
taints changed by ``label``/``taint`` survive).

Neighbours: ``devices.nodepool``; ``controllers.common.collect_garbage``.
"""

from __future__ import annotations

from gpusched.cluster.controllers.common import owner_reference
from gpusched.cluster.apiserver.view import View


def reconcile(view: View) -> None:
    pools = view.list("NodePool")
    if not pools:
        return
    from gpusched.devices.nodepool import expand_nodepool
    from gpusched.devices.user_models import user_models
    from gpusched.errors import GpuschedError
    try:
        extra = user_models(view.list("ConfigMap"))
    except GpuschedError:
        extra = {}          # the device-plugin controller reports a broken models ConfigMap
    for pool in pools:
        wanted = expand_nodepool(pool, extra)
        names = {n["metadata"]["name"] for n in wanted}
        uid = pool["metadata"]["uid"]
        for node in wanted:
            if view.get("Node", node["metadata"]["name"]) is None:
                node = dict(node, metadata={**node["metadata"],
                                            "ownerReferences": [owner_reference(pool)]})
                view.create(node)
        for node in view.list("Node"):
            refs = node["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs) and node["metadata"]["name"] not in names:
                view.delete("Node", node["metadata"]["name"])
