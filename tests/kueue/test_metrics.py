"""Kueue's per-queue gauges (``gpusched.kueue.metrics``), names and labels as upstream's
``pkg/metrics/metrics.go`` (``PendingWorkloads``, ``AdmittedActiveWorkloads``,
``ClusterQueueResourceUsage``, ``ClusterQueueResourceNominalQuota``, ``...BorrowingLimit``).
"""

from __future__ import annotations

import math

from gpusched.kueue.metrics import QueueCounts, samples
from gpusched.kueue.quota import add_usage, build_forest
from tests.kueue.builders import flavor_quota, make_cq


def test_per_queue_gauges() -> None:
    forest = build_forest([make_cq("team-a", flavor_quota("a100", gpu=(8, 4, None)), cohort="org"),
                           make_cq("team-b", flavor_quota("a100", gpu=8), cohort="org")])
    add_usage(forest.queues["team-a"], ("a100", "nvidia.com/gpu"), 10)
    got = {(name, labels): value for name, labels, value in
           samples(forest, {"team-a": QueueCounts(active=3, inadmissible=1, admitted=2)})}
    quota = (("cohort", "org"), ("cluster_queue", "team-a"), ("flavor", "a100"), ("resource", "nvidia.com/gpu"),
             ("replica_role", "standalone"))
    assert got[("kueue_pending_workloads", (("cluster_queue", "team-a"), ("status", "active"),
                                           ("replica_role", "standalone")))] == 3
    assert got[("kueue_admitted_active_workloads", (("cluster_queue", "team-a"), ("replica_role", "standalone")))] == 2
    assert got[("kueue_cluster_queue_resource_usage", quota)] == 10
    assert got[("kueue_cluster_queue_nominal_quota", quota)] == 8
    assert got[("kueue_cluster_queue_borrowing_limit", quota)] == 4
    assert math.isinf(got[("kueue_cluster_queue_lending_limit", quota)])
    assert got[("kueue_cluster_queue_weighted_share", (("cluster_queue", "team-a"), ("replica_role", "standalone")))] == 125
