"""``/metrics`` for the gpusched cluster: DCGM-compatible GPU lines plus scheduler/cluster metrics.

``render_cluster(cluster) -> (content type, body)`` is what ``gpusched serve`` returns on
``/metrics``: the DCGM families from ``cluster_source`` in dcgm-exporter's format
(``dcgm.render``), then a fresh ``prometheus_client`` ``CollectorRegistry`` holding one
``ClusterCollector`` rendered with ``generate_latest`` (text format 0.0.4). Everything is read
from one consistent view of the store, so a scrape never sees half a command.

Neighbours: ``dcgm``, ``cluster_source``, ``cluster_metrics``; called by ``server`` and tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest

from gpusched.metrics import dcgm
from gpusched.metrics.dcgm import CONTENT_TYPE
from gpusched.metrics.cluster_metrics import ClusterCollector
from gpusched.metrics.cluster_source import ClusterSource

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster
    from gpusched.cluster.apiserver.view import View


def render_view(view: View, prices: dict[str, float] | None = None) -> bytes:
    """The exposition body for one cluster ``View``."""
    source = ClusterSource(view)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ClusterCollector(view, source, prices))
    return dcgm.render(source.samples()).encode() + generate_latest(registry)


def render_cluster(cluster: Cluster, prices: dict[str, float] | None = None) -> tuple[str, bytes]:
    """(content type, body) of ``/metrics`` for a ``gpusched.cluster.cluster.Cluster``."""
    return CONTENT_TYPE, render_view(cluster.view(), prices)
