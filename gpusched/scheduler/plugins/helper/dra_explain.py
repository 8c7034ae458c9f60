"""Why the allocator found no solution on a node, in words ``explain pod`` can show: the first
request of the pod's claims that the node's free devices cannot satisfy, and where its
candidates ran out - the request's DeviceClass, or which of its CEL selectors.

The allocator answers only "cannot allocate all claims" (upstream's Filter says no more); this
narrows it down per request, as a person would: the node's devices (the pools the node sees,
``SliceSet.pools_for``), minus those in use, then the class's selectors, then each of the
request's selectors in turn; the first count below what is asked is the answer. When every
request has enough candidates on its own, the conflict is between them (constraints, counters,
devices wanted by two requests). Computed only when ``explain`` renders it (the plugin stores
:func:`why` unevaluated).

Neighbours: ``helper.dra_manager`` (slices, classes, devices in use), the plugin;
``gpusched.dra.cel`` (the selectors).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from gpusched.dra.allocator import NodeFacts
from gpusched.dra.cel import CelCompileError, CelRuntimeError, compile_selector
from gpusched.dra.model import Device, Request
from gpusched.scheduler.plugins.helper.dra_manager import DraManager


def why(manager: DraManager, node: str, labels: Mapping[str, str],
        claims: Sequence[dict[str, Any]]) -> str:
    """The first request the node cannot serve, and why (see the module docstring)."""
    in_use = manager.in_use(node)
    free = [device for pool in manager.node_slices(node).pools_for(NodeFacts(node, labels))
            for slice_ in pool.slices for device in slice_.devices
            if (pool.driver, pool.name, device.name) not in in_use.devices]
    for body in claims:
        claim = manager.parsed(body)
        meta = body.get("metadata") or {}
        ref = f"claim {meta.get('namespace', '')}/{meta.get('name', '')}"
        for request in claim.requests:
            options = request.first_available or (request,)
            found = [_shortage(manager, option, free) for option in options]
            if all(found):
                name = request.name if not request.first_available else \
                    "/".join((request.name, options[-1].name))
                return f"{ref}, request {name}: {found[-1]}"
    return "each request has devices on the node, but not all of them together " \
           "(constraints, shared counters, or the same devices wanted twice)"


def _shortage(manager: DraManager, request: Request, free: list[Device]) -> str:
    """"" when enough free devices pass the class's and the request's selectors, else where
    the candidates ran out."""
    wanted = request.count if request.allocation_mode == "ExactCount" else 1
    klass = manager.classes.get(request.device_class_name)
    candidates = [d for d in free if klass is None or _all_match(klass.selectors, d)]
    if len(candidates) < wanted:
        return (f"{len(candidates)} free device(s) of class {request.device_class_name} on the "
                f"node, {wanted} requested")
    for index, expression in enumerate(request.selectors):
        candidates = [d for d in candidates if _all_match((expression,), d)]
        if len(candidates) < wanted:
            return (f"{len(candidates)} free device(s) of class {request.device_class_name} match "
                    f"selector #{index} ({expression}), {wanted} requested")
    return ""


def _all_match(expressions: Sequence[str], device: Device) -> bool:
    try:
        return all(compile_selector(e).matches(device) for e in expressions)
    except (CelCompileError, CelRuntimeError):
        return False
