"""The web page's two JSON answers, shaped from an :class:`~gpusched.server.web.index.Index`.

``GET /gpusched/v1/summary`` (:func:`summary`) answers with aggregates only, so its size does
not grow with the pods: totals, allocation and fragmentation, one row per node group (pool and
GPU model: nodes, GPUs, used GPUs, cordoned nodes, pods by namespace and phase, and how many of
its nodes match the filter), the namespaces, models and phases to filter by, the first
:data:`PENDING_LIMIT` pending pods that match, the recent events and the chart's history.

``GET /gpusched/v1/summary/nodes?group=ID`` (:func:`nodes_page`) answers with one page of a
group's matching nodes with their GPU cells (``offset``, ``limit`` at most :data:`LIMIT_MAX`).

Both take the same filter parameters (:class:`Filter`): ``namespace``, ``phase`` and ``model``
(exact), ``node`` (part of the node name) and ``q`` (search: part of a node's name, pool or
model, or of ``namespace/name`` of a pod on it), case-insensitive where partial. Pending pods
match on namespace, phase and ``q`` (their ``namespace/name``).
A node matches a namespace or phase filter when a pod of that
namespace or phase is bound to it. Bad values are one ``400`` line naming the parameter.

Neighbours: ``server.web.index`` (the data), ``server.web.routes`` (serves these).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusched.errors import NotFoundError, UsageError
from gpusched.objects import limits
from gpusched.server.web.index import Index, NodeEntry, PodEntry

LIMIT_DEFAULT = 50
LIMIT_MAX = 200
OFFSET_MAX = 1_000_000
PENDING_LIMIT = 100
VALUE_MAX = 253          # a DNS subdomain's length: longer than any name it can match
GROUP_MAX = 4096         # a group id holds a GPU model, which may come from a free annotation
FILTERS = ("namespace", "node", "model", "phase", "q")
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


def _text(query: dict[str, str], name: str, most: int = VALUE_MAX) -> str:
    value = query.get(name, "")
    if len(value) > most:
        raise UsageError(f"query parameter {name}: longer than {most:,} characters")
    return value


def _number(query: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name, "")
    if raw == "":
        return default
    value = limits.small_int(raw)
    if value is None or not low <= value <= high:
        raise UsageError(f'query parameter {name}: "{raw[:40]}" is not an integer from {low} '
                         f"to {high:,}")
    return value


@dataclass(frozen=True)
class Filter:
    """The page's filter (see the module docstring); empty fields match everything."""

    namespace: str = ""
    node: str = ""
    model: str = ""
    phase: str = ""
    q: str = ""

    @classmethod
    def from_query(cls, query: dict[str, str]) -> "Filter":
        values = {name: _text(query, name) for name in FILTERS}
        return cls(values["namespace"], values["node"].lower(), values["model"], values["phase"],
                   values["q"].lower())

    @property
    def active(self) -> bool:
        return any((self.namespace, self.node, self.model, self.phase, self.q))

    def node_matches(self, node: NodeEntry) -> bool:
        return ((not self.namespace or self.namespace in node.namespaces)
                and (not self.phase or self.phase in node.phases)
                and (not self.model or self.model == node.model)
                and (not self.node or self.node in node.name.lower())
                and (not self.q or self.q in node.search))

    def pod_matches(self, pod: PodEntry) -> bool:
        return ((not self.namespace or self.namespace == pod.namespace)
                and (not self.phase or self.phase == pod.phase)
                and (not self.q or self.q in pod.key.lower()))


def _pending(index: Index, flt: Filter) -> tuple[list[dict[str, Any]], int]:
    """Unbound, unfinished pods that match (highest priority first) and how many there are."""
    pending = [p for p in index.pods if not p.node and p.phase not in ("Succeeded", "Failed")
               and flt.pod_matches(p)]
    first = sorted(pending, key=lambda p: (-p.priority, p.key))[:PENDING_LIMIT]
    return [{"pod": p.key, "namespace": p.namespace, "name": p.name, "priority": p.priority,
             "schedulerName": p.scheduler, "message": p.message} for p in first], len(pending)


def summary(index: Index, query: dict[str, str]) -> dict[str, Any]:
    """The summary answer without ``history`` (the caller adds it)."""
    flt = Filter.from_query(query)
    matching: dict[str, int] = {}
    for node in index.nodes:
        if flt.node_matches(node):
            matching[node.group] = matching.get(node.group, 0) + 1
    pending, pending_total = _pending(index, flt)
    namespaces = sorted({p.namespace for p in index.pods})
    return {
        "resourceVersion": index.resource_version, "clock": index.clock,
        "allocation": index.allocation, "fragmentation": index.fragmentation,
        "totals": {"nodes": len(index.nodes), "gpus": sum(g["gpus"] for g in index.groups),
                   "pods": len(index.pods), "matching": sum(matching.values()),
                   "pending": sum(1 for p in index.pods
                                  if not p.node and p.phase not in ("Succeeded", "Failed"))},
        "filter": {name: query.get(name, "") for name in FILTERS},
        "groups": [{**g, "matching": matching.get(g["id"], 0)} for g in index.groups],
        "namespaces": namespaces, "models": sorted({n.model for n in index.nodes if n.model}),
        "phases": list(PHASES),
        "pending": pending, "pendingTotal": pending_total, "events": list(index.events)}


def point(index: Index) -> dict[str, Any]:
    """One point of the chart's history."""
    return {"resourceVersion": index.resource_version, "clock": index.clock,
            "allocation": index.allocation, "fragmentation": index.fragmentation}


def nodes_page(index: Index, query: dict[str, str]) -> dict[str, Any]:
    """One page of a group's matching nodes with their cells."""
    flt = Filter.from_query(query)
    group = _text(query, "group", GROUP_MAX)
    if not group:
        raise UsageError("query parameter group: required (a group id from the summary)")
    offset = _number(query, "offset", 0, 0, OFFSET_MAX)
    limit = _number(query, "limit", LIMIT_DEFAULT, 1, LIMIT_MAX)
    if not any(g["id"] == group for g in index.groups):
        raise NotFoundError("groups", group)
    nodes = [n for n in index.nodes if n.group == group and flt.node_matches(n)]
    return {"resourceVersion": index.resource_version, "group": group, "total": len(nodes),
            "offset": offset, "nodes": [_node_json(n) for n in nodes[offset:offset + limit]]}


def _node_json(node: NodeEntry) -> dict[str, Any]:
    return {"name": node.name, "pool": node.pool, "model": node.model, "gpus": node.gpus,
            "unschedulable": node.unschedulable, "usage": list(node.usage),
            "cells": list(node.cells)}
