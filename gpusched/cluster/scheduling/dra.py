"""The DynamicResources plugin's inputs and writes in the embedded cluster.

- :func:`hand_objects`: before each pass, the stored ResourceClaims, ResourceSlices and
  DeviceClasses (and a pod lookup) go to each profile's DynamicResources plugin
  (``DynamicResources.set_objects``), as upstream's informers feed its DRA manager;
- :func:`pre_bind`: the plugin's PreBind, done by the binder before the binding: each claim
  gets its allocation (a ``metadata.finalizers`` update, then the ``status`` subresource, as
  upstream's ``bindClaim`` writes them) and the pod in ``status.reservedFor``; KEP-5004's claim
  is created first (``generateName``) and the pod's ``status.extendedResourceClaimStatus``
  names it. Every write goes through ``apiserver.write`` (the one write path); the stored
  claims go back to the plugin (upstream's assume cache). A claim changed meanwhile (allocated
  elsewhere, deleted) fails the binding, as upstream's PreBind error: the pod is retried;
- :func:`apply_writes`: PostFilter's deallocations and deletions.

Neighbours: ``cluster.scheduling.profiles`` (``make_scheduler``), ``cluster.scheduling.binder``,
``scheduler.plugins.dynamic_resources``.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError
from gpusched.scheduler.plugins.dynamic_resources import NAME, DynamicResources
from gpusched.scheduler.plugins.helper.dra_claims import ClaimProblem
from gpusched.scheduler.plugins.helper.dra_manager import ClaimWrite, DraObjects, claim_key

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.runner import Scheduler

log = logging.getLogger(__name__)


def dra_objects(view: View) -> DraObjects:
    """The DRA objects of the view, as the plugin reads them."""
    claims = {claim_key(body): body for body in view.list("ResourceClaim")}
    classes = {str(body["metadata"]["name"]): body for body in view.list("DeviceClass")}
    return DraObjects(claims, view.list("ResourceSlice"), classes, view.by_uid)


def plugins(scheduler: Scheduler) -> list[DynamicResources]:
    found = []
    for framework in scheduler.frameworks.values():
        plugin = framework.plugins.get(NAME)
        if isinstance(plugin, DynamicResources) and plugin not in found:
            found.append(plugin)
    return found


def hand_objects(view: View, scheduler: Scheduler) -> None:
    """Give this pass's DRA objects to every DynamicResources plugin of the scheduler."""
    found = plugins(scheduler)
    if not found:
        return
    objects = dra_objects(view)
    for plugin in found:
        plugin.set_objects(objects)


def pre_bind(view: View, scheduler: Scheduler, pod: PodInfo, node: str) -> str:
    """The plugin's PreBind for ``pod`` on ``node``: "" when done, else the failure."""
    framework = scheduler.framework_for(pod)
    plugin = framework.plugins.get(NAME) if framework is not None else None
    if not isinstance(plugin, DynamicResources):
        return ""
    try:
        for change in plugin.pre_bind(pod, node):
            plugin.assumed(change, _write(view, change))
    except (ClaimProblem, GpuschedError) as problem:
        plugin.failed_pre_bind(pod)
        return f"running PreBind plugin \"{NAME}\": {problem}"
    return ""


def unreserve(scheduler: Scheduler, pod: PodInfo) -> None:
    """The pod, reserved, will not be bound now (a queue-order mode put it back): its claims'
    allocations are no longer in flight."""
    framework = scheduler.framework_for(pod)
    plugin = framework.plugins.get(NAME) if framework is not None else None
    if isinstance(plugin, DynamicResources):
        plugin.failed_pre_bind(pod)


def apply_writes(view: View, scheduler: Scheduler) -> None:
    """PostFilter's claim writes (deallocations, deletions)."""
    for plugin in plugins(scheduler):
        for change in plugin.take_writes():
            try:
                plugin.assumed(change, _write(view, change))
            except GpuschedError as problem:      # the claim changed meanwhile: retried later
                log.info("DynamicResources PostFilter write of %s failed: %s",
                         "/".join(claim_key(change.body)), problem)


def _write(view: View, change: ClaimWrite) -> dict[str, Any] | None:
    """Apply one write; the stored claim after it (None: deleted)."""
    body = change.body
    namespace, name = claim_key(body)
    if change.delete:
        stored = view.copy("ResourceClaim", name, namespace)
        if stored is not None and stored.get("metadata", {}).get("finalizers"):
            stored["metadata"]["finalizers"] = []
            write.update(view, stored)
        write.delete(view, "ResourceClaim", name, namespace)
        return None
    if change.create:
        return _create(view, change)
    stored = view.copy("ResourceClaim", name, namespace)
    if stored is None:
        raise ClaimProblem(f"claim {namespace}/{name} got deleted in the meantime")
    finalizers = body["metadata"].get("finalizers") or []
    if finalizers != (stored["metadata"].get("finalizers") or []):
        stored["metadata"]["finalizers"] = list(finalizers)
        write.update(view, stored)
        stored = view.copy("ResourceClaim", name, namespace) or stored
    stored["status"] = copy.deepcopy(body.get("status") or {})
    write.update_status(view, stored)
    return view.get("ResourceClaim", name, namespace)


def _create(view: View, change: ClaimWrite) -> dict[str, Any] | None:
    """KEP-5004's claim: created, its status written, the pod's status pointing at it."""
    body = copy.deepcopy(change.body)
    status = body.pop("status", {})
    meta = body["metadata"]
    meta["name"] = meta["generateName"] + view.random_suffix()
    created = write.create(view, body)
    stored = copy.deepcopy(created)
    stored["status"] = status
    write.update_status(view, stored)
    pod = view.by_uid(change.pod_uid)
    if pod is not None:
        patched = copy.deepcopy(pod)
        patched.setdefault("status", {})["extendedResourceClaimStatus"] = {
            "requestMappings": change.mappings, "resourceClaimName": meta["name"]}
        write.update_status(view, patched)
    return view.get("ResourceClaim", meta["name"], meta["namespace"])
