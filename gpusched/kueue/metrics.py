"""Kueue's per-queue gauges, named as upstream's ``pkg/metrics/metrics.go`` (subsystem ``kueue``,
label ``replica_role="standalone"`` for a single manager): pending workloads per ClusterQueue
and status (``active`` in the queue, ``inadmissible`` parked until the cluster changes),
admitted active workloads, the ClusterQueue's resource usage, nominal quota, borrowing and
lending limits (``+Inf`` when unset) per flavor and resource, and its weighted share; and the
scheduler's counter ``kueue_admission_attempts_total{result}``: scheduling cycles, ``success``
when one admitted a Workload, else ``inadmissible`` (``scheduler.go`` ``AdmissionAttempt``),
which the controller keeps in ``view.stats`` (``ADMISSION_ATTEMPTS``).

``samples`` returns (name, labels, value) triples; ``server``/``metrics`` render them.

Neighbours: ``quota``, ``fair_sharing``; fed by the Kueue controllers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpusched.kueue.fair_sharing import dominant_resource_share
from gpusched.kueue.quota import CohortForest, QuotaNode

ROLE = "standalone"
ADMISSION_ATTEMPTS = "kueue_admission_attempts"    # view.stats key: {result: count}
SUCCESS, INADMISSIBLE = "success", "inadmissible"
HELP = {
    "kueue_pending_workloads": "The number of pending workloads, per 'cluster_queue' and 'status'.",
    "kueue_admitted_active_workloads": "The number of admitted Workloads that are active, per 'cluster_queue'",
    "kueue_cluster_queue_resource_usage": "Reports the cluster_queue's total resource usage within all the flavors",
    "kueue_cluster_queue_nominal_quota": "Reports the cluster_queue's resource nominal quota within all the flavors",
    "kueue_cluster_queue_borrowing_limit": "Reports the cluster_queue's resource borrowing limit within all the "
                                           "flavors. If borrowingLimit is unset, this metric reports +Inf.",
    "kueue_cluster_queue_lending_limit": "Reports the cluster_queue's resource lending limit within all the "
                                         "flavors. If lendingLimit is unset, this metric reports +Inf.",
    "kueue_admission_attempts": "The total number of attempts to admit workloads.\nEach admission attempt might "
                                "try to admit more than one workload.\nThe label 'result' can have the following "
                                "values:\n- 'success' means that at least one workload was admitted.,\n- "
                                "'inadmissible' means that no workload was admitted.",
    "kueue_cluster_queue_weighted_share": "Reports a value that representing the maximum of the ratios of usage "
                                          "above nominal quota to the lendable resources in the cohort, among all "
                                          "the resources provided by the ClusterQueue, and divided by the weight.",
}
Sample = tuple[str, tuple[tuple[str, str], ...], float]


@dataclass(frozen=True)
class QueueCounts:
    """Workload counts of one ClusterQueue."""

    active: int = 0
    inadmissible: int = 0
    admitted: int = 0


def _cohort(node: QuotaNode) -> str:
    return node.parent.name if node.parent is not None else ""


def _quota_samples(node: QuotaNode) -> list[Sample]:
    out: list[Sample] = []
    for (flavor, resource), quota in sorted(node.quotas.items()):
        labels = (("cohort", _cohort(node)), ("cluster_queue", node.name), ("flavor", flavor),
                  ("resource", resource), ("replica_role", ROLE))
        out.append(("kueue_cluster_queue_resource_usage", labels, float(node.usage.get((flavor, resource), 0))))
        out.append(("kueue_cluster_queue_nominal_quota", labels, float(quota.nominal)))
        out.append(("kueue_cluster_queue_borrowing_limit", labels,
                    math.inf if quota.borrowing_limit is None else float(quota.borrowing_limit)))
        out.append(("kueue_cluster_queue_lending_limit", labels,
                    math.inf if quota.lending_limit is None else float(quota.lending_limit)))
    return out


def samples(forest: CohortForest, counts: Mapping[str, QueueCounts]) -> list[Sample]:
    """Every gauge of every ClusterQueue in ``forest`` (by name, then metric)."""
    out: list[Sample] = []
    for name in sorted(forest.queues):
        node, count = forest.queues[name], counts.get(name, QueueCounts())
        for status, value in (("active", count.active), ("inadmissible", count.inadmissible)):
            out.append(("kueue_pending_workloads",
                        (("cluster_queue", name), ("status", status), ("replica_role", ROLE)), float(value)))
        out.append(("kueue_admitted_active_workloads", (("cluster_queue", name), ("replica_role", ROLE)),
                    float(count.admitted)))
        out.extend(_quota_samples(node))
        share = dominant_resource_share(node).weighted_share()
        out.append(("kueue_cluster_queue_weighted_share", (("cluster_queue", name), ("replica_role", ROLE)),
                    float(share)))
    return out
