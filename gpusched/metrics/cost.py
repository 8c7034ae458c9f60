"""GPU-hours and cost by namespace, GPU model and priority class, on the virtual clock.

A pod accrues ``fraction x hours`` on every GPU it holds, from its start
(``gpusched.io/start-time``) to its end (or now), where ``fraction`` is what it holds of the
physical GPU: 1 for a whole GPU, ``1 / replicas`` for a time-slicing/MPS replica, ``milli/1000``
for a fractional (``gpusched.io/gpu-milli``) share, ``compute slices / 7`` for a MIG instance (of
4 on an A30). Ended pods count too (``cluster_source`` keeps them), so the totals only grow.
A 2-GPU pod running 30 minutes is 1.0 GPU-hour; four time-sliced pods sharing one T4 with 4
replicas for an hour are 1.0 GPU-hour together.

Cost = GPU-hours x the model's price in USD per GPU-hour: ``DEFAULT_PRICES`` (typical on-demand
cloud prices, documented in ``docs/monitoring.md``), overridden per model by a YAML/JSON file
``{model: price}`` (``--prices FILE``).

Neighbours: ``cluster_source`` (holdings per GPU); ``cluster_metrics`` exposes the totals,
``cli.monitor`` prints ``gpusched cost``.
"""

from __future__ import annotations

from typing import Any

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from gpusched.devices.prices import DEFAULT_PRICE, DEFAULT_PRICES
from gpusched.errors import UsageError
from gpusched.objects import limits
from gpusched.metrics.cluster_source import GpuState

GROUPS = {"namespace": 0, "model": 1, "priority-class": 2}


@dataclass(frozen=True, slots=True)
class Usage:
    namespace: str
    model: str
    priority_class: str
    gpu_hours: float
    dollars: float


def load_prices(path: str | None) -> dict[str, float]:
    """The default table, updated with ``path`` (YAML or JSON mapping model -> USD/GPU-hour)."""
    prices = dict(DEFAULT_PRICES)
    if not path:
        return prices
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read price file {path}: {error.strerror}") from None
    try:
        data = limits.safe_load(text) if not path.endswith(".json") else limits.json_loads(text)
    except Exception as error:  # yaml.YAMLError / JSONDecodeError: one line for the user
        raise UsageError(f"price file {path}: not valid YAML/JSON: {error}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise UsageError(f"price file {path}: expected a mapping of GPU model to USD per GPU-hour")
    for model, price in data.items():
        if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
            raise UsageError(f"price file {path}: {model}: expected a non-negative number, "
                             f"got {price!r}")
        prices[str(model)] = float(price)
    return prices


def usage(gpus: list[GpuState], now: float, prices: dict[str, float],
          since: float = 0.0) -> list[Usage]:
    """GPU-hours and dollars per (namespace, model, priority class) over [since, now]."""
    hours: dict[tuple[str, str, str], float] = defaultdict(float)
    for gpu in gpus:
        for h in gpu.holdings:
            seconds = min(now, h.end if h.end is not None else now) - max(since, h.start)
            if seconds > 0:
                hours[(h.pod.namespace, gpu.model, h.priority_class)] += seconds / 3600 * h.fraction
    return [Usage(ns, model, klass, value, value * prices.get(model, DEFAULT_PRICE))
            for (ns, model, klass), value in sorted(hours.items())]


def grouped(rows: list[Usage], by: str) -> list[tuple[str, float, float]]:
    """(key, GPU-hours, dollars) summed by ``namespace``, ``model`` or ``priority-class``."""
    if by not in GROUPS:
        raise UsageError(f'unknown grouping "{by}": use namespace, model or priority-class')
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        key = (row.namespace, row.model, row.priority_class)[GROUPS[by]] or "<none>"
        totals[key][0] += row.gpu_hours
        totals[key][1] += row.dollars
    return [(key, h, d) for key, (h, d) in sorted(totals.items())]


# ---- node-hours of NodePools (Cluster Autoscaler cost, issue 11 point 5) -------------------------

@dataclass(frozen=True, slots=True)
class NodeUsage:
    """One NodePool's nodes over a window: a node costs from its creation to its removal,
    used or not (what a cloud bills), at GPU count x the model's price per GPU-hour."""

    pool: str
    model: str
    nodes_now: int
    node_hours: float
    gpu_hours: float
    dollars: float


def node_lifetimes(pool: dict[str, Any], nodes: dict[str, dict[str, Any]], now: float) -> list[tuple[float, float]]:
    """(created, removed-or-now) of every node the pool ever had: an autoscaled pool's
    ``status.created``/``status.removed`` (``cluster.controllers.autoscaling.autoscaler``), else its
    live
    Nodes' ``creationTimestamp``."""
    from gpusched.metrics.cluster_source import seconds_of
    status = pool.get("status") or {}
    out = [(float(r["created"]), float(r["removed"])) for r in status.get("removed") or []]
    created = status.get("created")
    if isinstance(created, dict):
        out += [(float(t), now) for name, t in created.items() if name in nodes]
        return out
    uid = pool["metadata"].get("uid")
    for node in nodes.values():
        refs = node["metadata"].get("ownerReferences") or []
        if any(r.get("uid") == uid for r in refs):
            out.append((seconds_of(node["metadata"].get("creationTimestamp", "")), now))
    return out


def node_usage(pools: list[dict[str, Any]], nodes: list[dict[str, Any]], now: float, prices: dict[str, float],
               since: float = 0.0) -> list[NodeUsage]:
    """Node-hours and dollars per NodePool over [since, now]."""
    by_name = {n["metadata"]["name"]: n for n in nodes}
    rows = []
    for pool in sorted(pools, key=lambda p: p["metadata"]["name"]):
        model, gpus = _pool_gpus(pool)
        hours = sum(max(0.0, min(now, end) - max(since, start)) / 3600
                    for start, end in node_lifetimes(pool, by_name, now))
        live = sum(1 for n in by_name.values()
                   if any(r.get("uid") == pool["metadata"].get("uid")
                          for r in n["metadata"].get("ownerReferences") or []))
        price = gpus * prices.get(model, DEFAULT_PRICE) if model else 0.0
        rows.append(NodeUsage(pool["metadata"]["name"], model or "<none>", live, hours,
                              hours * gpus, hours * price))
    return rows


def _pool_gpus(pool: dict[str, Any]) -> tuple[str, int]:
    """A NodePool's GPU model name (catalog or ``define``; "" for none) and GPUs per node."""
    gpu = (pool.get("spec") or {}).get("gpu") or {}
    model = str(gpu.get("model") or (gpu.get("define") or {}).get("name") or "")
    return model, int(gpu.get("count", 1)) if gpu else 0
