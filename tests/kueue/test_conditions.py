"""Kueue's conditions (``gpusched.kueue.conditions``): ClusterQueue ``Active`` as
``clusterqueue.go`` ``inactiveReason`` (``clusterqueue_test.go`` "TestClusterQueueUpdate" messages),
LocalQueue ``Active`` as ``localqueue_controller.go``, and SetStatusCondition's transition rule.
"""

from __future__ import annotations

import pytest

from gpusched.kueue.conditions import (Condition, cluster_queue_active, local_queue_active, pending,
                                       set_condition)


@pytest.mark.parametrize("stopped,missing,cycle,want", [
    (False, [], False, ("True", "Ready", "Can admit new workloads")),
    (False, ["a100", "h100"], False,
     ("False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): a100,h100.")),
    (True, ["a100"], False,
     ("False", "Stopped", "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): a100.")),
    (False, [], True, ("False", "Unknown", "Can't admit new workloads.")),
], ids=["ready", "missing flavors", "stopped and missing", "cohort cycle"])
def test_cluster_queue_active(stopped, missing, cycle, want) -> None:
    got = cluster_queue_active(stopped, missing, cycle)
    assert (got.status, got.reason, got.message) == want


@pytest.mark.parametrize("exists,active,stopped,want", [
    (True, True, False, ("True", "Ready")), (False, False, False, ("False", "ClusterQueueDoesNotExist")),
    (True, False, False, ("False", "ClusterQueueIsInactive")), (True, True, True, ("False", "Stopped")),
], ids=["ready", "no cluster queue", "inactive cluster queue", "stopped"])
def test_local_queue_active(exists, active, stopped, want) -> None:
    got = local_queue_active(exists, active, stopped)
    assert (got.status, got.reason) == want


def test_transition_time_moves_only_on_a_status_change() -> None:
    first = set_condition([], pending("WaitingForQuota", "a"), "t1")
    same = set_condition(first, pending("ExceedsMaxQuota", "b"), "t2")
    flipped = set_condition(same, Condition("QuotaReserved", "True", "QuotaReserved", "c"), "t3")
    assert [c["lastTransitionTime"] for c in (first[0], same[0], flipped[0])] == ["t1", "t1", "t3"]
    assert same[0]["reason"] == "ExceedsMaxQuota"
