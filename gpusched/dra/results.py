"""A solution as upstream writes it into ``status.allocation``.

Per claim: ``devices.results`` (request, driver, pool, device; ``adminAccess`` when asked,
the request's ``tolerations``, the device's binding conditions, ``shareID`` and
``consumedCapacity`` for a share), ``devices.config`` (first each used class's config,
``source: FromClass``, then the claim's own config that applies to an allocated request,
``source: FromClaim``) and ``nodeSelector``: the node by name when a device is bound to a
node's slice (``matchFields metadata.name In [node]``), the merged selector of node-selector
slices, none for ``allNodes`` slices. Empty fields are left out, as Go's ``omitempty`` does.

Upstream: the end of ``Allocate`` and ``createNodeSelector`` in
``structured/internal/incubating/allocator_incubating.go``.
"""

from __future__ import annotations

from typing import Any

from gpusched.dra.model import Number
from gpusched.dra.search import Failure, RequestData, Search, Taken
from gpusched.objects.quantity import quantity_string


def _amount(value: Number) -> str:
    """A consumed amount as a quantity: in the binary form (``4Gi``), as upstream's copies of
    the device's capacity and its ``NewQuantity(v, BinarySI)`` print."""
    if isinstance(value, int):
        return quantity_string(str(value), "BinarySI")
    return quantity_string(f"{value.numerator * 1000 // value.denominator}m")


def _result(taken: Taken) -> dict[str, Any]:
    candidate, device = taken.candidate, taken.candidate.device
    out: dict[str, Any] = {"request": taken.data.name, "driver": candidate.id[0], "pool": candidate.id[1],
                           "device": candidate.id[2]}
    if taken.admin_access:
        out["adminAccess"] = True
    if taken.data.request.tolerations_raw:
        out["tolerations"] = [dict(t) for t in taken.data.request.tolerations_raw]
    if device.binding_conditions:
        out["bindingConditions"] = list(device.binding_conditions)
    if device.binding_failure_conditions:
        out["bindingFailureConditions"] = list(device.binding_failure_conditions)
    if taken.share_id is not None:
        out["shareID"] = taken.share_id
    if taken.consumed:
        out["consumedCapacity"] = {name: _amount(v) for name, v in taken.consumed.items()}
    return out


def _chosen(search: Search, ci: int, ri: int) -> RequestData:
    data = search.data[(ci, ri, 0)]
    if data.parent is not None:
        data = search.data[(ci, ri, data.selected)]
    return data


def _config(search: Search, ci: int) -> list[dict[str, Any]]:
    claim = search.claims[ci]
    config: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for ri in range(len(claim.requests)):
        data = _chosen(search, ci, ri)
        if data.klass is None:
            continue
        if data.klass.name in class_ranges:
            start, end = class_ranges[data.klass.name]
            for entry in config[start:end]:
                entry["requests"].append(data.name)
            continue
        start = len(config)
        config += [{"source": "FromClass", "requests": [data.name], **_without_requests(c)} for c in data.klass.config]
        class_ranges[data.klass.name] = (start, len(config))
    for entry in map(dict, claim.config):
        names = list(entry.get("requests") or ())
        if not names:
            config.append({"source": "FromClaim", **_without_requests(entry)})
            continue
        for ri, request in enumerate(claim.requests):
            data = _chosen(search, ci, ri)
            if request.name in names or (data.parent is not None and data.name in names):
                config.append({"source": "FromClaim", "requests": names, **_without_requests(entry)})
    return config


def _without_requests(entry: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(entry).items() if k not in ("requests", "source")}


def _selection(taken: Taken) -> tuple[str, Any]:
    """The node name and node selector a taken device came with (its own with per-device node
    selection, else its slice's)."""
    slice_, device = taken.candidate.slice, taken.candidate.device
    if slice_.per_device_node_selection:
        return device.node_name, device.node_selector
    return slice_.node_name, slice_.node_selector


def _node_selector(search: Search, ci: int) -> dict[str, Any] | None:
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for taken in search.results[ci]:
        node_name, selector = _selection(taken)
        if node_name or taken.candidate.device.binds_to_node:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [search.node.name]}]}]}
        terms = [t for t in (selector or {}).get("nodeSelectorTerms") or [] if isinstance(t, dict)]
        if len(terms) > 1:
            raise Failure(f"create NodeSelector for claim {search.claims[ci].name}: "
                          f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if terms:
            _merge(terms[0].get("matchFields") or (), fields)
            _merge(terms[0].get("matchExpressions") or (), expressions)
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]} if term else None


def _merge(found: Any, into: list[dict[str, Any]]) -> None:
    for requirement in found if isinstance(found, list) else ():
        if not isinstance(requirement, dict):
            continue
        same = any(r.get("key") == requirement.get("key") and r.get("operator") == requirement.get("operator")
                   and set(r.get("values") or ()) == set(requirement.get("values") or ()) for r in into)
        if not same:
            into.append(dict(requirement))


def allocation(search: Search, ci: int) -> dict[str, Any]:
    devices: dict[str, Any] = {"results": [_result(t) for t in search.results[ci]]}
    config = _config(search, ci)
    if config:
        devices["config"] = config
    out: dict[str, Any] = {"devices": devices}
    selector = _node_selector(search, ci)
    if selector is not None:
        out["nodeSelector"] = selector
    return out
