"""GPU prices in USD per GPU-hour: the table ``gpusched cost`` charges and the Cluster
Autoscaler's ``price`` expander compares (``cluster.controllers.autoscaler_expander``).

``DEFAULT_PRICES`` are typical on-demand cloud prices (documented in ``docs/monitoring.md``);
``metrics.cost.load_prices`` overrides them from a file. A node's price per hour is its GPU
count times its model's price (:func:`node_price`); CPU-only nodes cost ``CPU_NODE_PRICE``.

Neighbours: ``metrics.cost`` (accounting), ``cluster.controllers.autoscaler_expander``.
"""

from __future__ import annotations

from typing import Mapping

DEFAULT_PRICES: dict[str, float] = {
    "B200": 6.00, "H200-141GB": 4.50, "H100-80GB": 3.90, "H100-NVL": 3.50,
    "A100-80GB": 2.50, "A100-40GB": 1.80, "A30": 1.00, "L40S": 1.40, "A10": 0.75, "L4": 0.60,
    "V100-16GB": 1.20, "V100M16": 1.20, "V100-32GB": 1.40, "V100M32": 1.40, "T4": 0.35,
    "P100": 0.60, "G2": 0.80, "G3": 1.00,
}
DEFAULT_PRICE = 1.00          # a model missing from the table
CPU_NODE_PRICE = 0.0          # gpusched charges GPUs only: a CPU-only node costs nothing


def node_price(model: str, gpus: int, prices: Mapping[str, float] | None = None) -> float:
    """USD per hour of a node with ``gpus`` GPUs of ``model`` (``""``: a CPU-only node).

    >>> node_price("L4", 1), node_price("A100-40GB", 8), node_price("", 0)
    (0.6, 14.4, 0.0)
    """
    if not model or gpus <= 0:
        return CPU_NODE_PRICE
    table = DEFAULT_PRICES if prices is None else prices
    return round(gpus * table.get(model, DEFAULT_PRICE), 6)
