"""Coscheduling gangs on the embedded cluster: the ``scheduler-plugins-scheduler`` profile with
scheduler-plugins' Coscheduling (``pkg/coscheduling/coscheduling.go``, ``core/core.go``), Permit
waits held on the virtual clock, and nothing half-placed (``test/integration/
coscheduling_test.go``: a group binds whole or not at all)."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.cluster import Cluster

from .builders import apply, join, node_of, pod, pool

GANG_SCHEDULER = "scheduler-plugins-scheduler"
LABEL = "scheduling.x-k8s.io/pod-group"


def pod_group(name: str, min_member: int, timeout: int | None = None, **spec) -> str:
    body = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, **spec}}
    if timeout is not None:
        body["spec"]["scheduleTimeoutSeconds"] = timeout
    return yaml.safe_dump(body)


def member(name: str, group: str = "pg", gpus: int = 8, **spec) -> str:
    return pod(name, gpus=gpus, labels={LABEL: group}, schedulerName=GANG_SCHEDULER, **spec)


def failed_scheduling(cluster: Cluster, name: str) -> str:
    conditions = cluster.get("pods", [name], "default")[0]["status"].get("conditions") or []
    return next((c.get("message", "") for c in conditions if c["type"] == "PodScheduled"), "")


@pytest.fixture
def cluster(tmp_path):
    with Cluster.open(str(tmp_path / "gangs.db")) as c:
        apply(c, pool("gpu", count=2, gpus=8))
        yield c


def bound(cluster: Cluster, *names: str) -> list[str]:
    return [n for n in names if node_of(cluster, n)]


def test_whole_group_binds_at_once(cluster):
    """coscheduling_test.go TestPermit "pod belongs to a pg that have quorum satisfied": the
    last member's Permit allows the waiting ones; all bind."""
    apply(cluster, join(pod_group("pg", 2), member("a"), member("b")))
    assert bound(cluster, "a", "b") == ["a", "b"]


def test_fewer_pods_than_min_member_wait_with_the_prefilter_message(cluster):
    """core_test.go TestPreFilter "pod count less than minMember"."""
    apply(cluster, join(pod_group("pg", 3), member("a", gpus=4), member("b", gpus=4)))
    assert bound(cluster, "a", "b") == []
    assert failed_scheduling(cluster, "a") == (
        "0/2 nodes are available: pre-filter pod a cannot find enough sibling pods, current pods "
        "number: 2, minMember of group: 3. no new claims to deallocate, preemption: 0/2 nodes are "
        "available: 2 Preemption is "
        "not helpful for scheduling., PodGroup default/pg gets rejected due to Pod a is "
        "unschedulable even after PostFilter")
    apply(cluster, member("c", gpus=4))
    assert bound(cluster, "a", "b", "c") == ["a", "b", "c"]


def test_group_larger_than_the_cluster_is_never_half_placed(cluster):
    """Bad input: minMember 3 gangs of 8-GPU pods on two 8-GPU nodes: the members that fit
    wait, the one that fits nowhere rejects them in PostFilter (``optimistic rejection in
    PostFilter``); no member is bound and every GPU is free again."""
    apply(cluster, join(pod_group("pg", 3), member("a"), member("b"), member("c")))
    assert bound(cluster, "a", "b", "c") == []
    messages = {failed_scheduling(cluster, n) for n in ("a", "b", "c")}
    assert "0/1 nodes are available: 1 optimistic rejection in PostFilter." in messages
    apply(cluster, pod("plain", gpus=8))
    assert node_of(cluster, "plain")


def test_waiting_members_time_out_and_release_the_whole_group(cluster):
    """waiting_pods_map.go: the wait ends after scheduleTimeoutSeconds on the virtual clock:
    ``rejected due to timeout after waiting 30s at plugin Coscheduling``; Unreserve rejects the
    sibling (``rejection in Unreserve``) and both release their node. The third member names
    another scheduler, so it counts for minMember (the plugin lists every labelled pod) but is
    never attempted here."""
    cluster.frozen_clock = False
    other = pod("c", gpus=1, labels={LABEL: "pg"}, schedulerName="other-scheduler")
    apply(cluster, join(pod_group("pg", 3, timeout=30), member("a"), member("b"), other))
    assert bound(cluster, "a", "b") == []
    apply(cluster, pod("blocked", gpus=8))
    assert not node_of(cluster, "blocked")       # the waiting members hold both nodes
    cluster.advance(31)
    messages = {e["message"] for e in cluster.get("events") if e["reason"] == "FailedScheduling"
                and e["involvedObject"]["name"] in ("a", "b")}
    assert "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin Coscheduling." in messages
    assert "0/1 nodes are available: 1 rejection in Unreserve." in messages
    assert node_of(cluster, "blocked")


def group_status(cluster: Cluster, name: str = "pg") -> dict:
    return cluster.get("podgroups", [name], "default")[0].get("status") or {}


def test_pod_group_status_follows_its_pods(cluster):
    """podgroup_controller.go: Pending until minMember pods exist, then Scheduling, Running once
    running + succeeded reach minMember, with the counts."""
    apply(cluster, join(pod_group("pg", 2), member("a", gpus=4)))
    assert group_status(cluster) == {"phase": "Pending"}
    apply(cluster, member("b", gpus=4))
    assert group_status(cluster) == {"phase": "Running", "running": 2}


def test_deleting_a_waiting_member_releases_the_group(cluster):
    """eventhandlers.go: a deleted waiting pod is rejected (``RejectWaitingPod``); its
    Unreserve rejects the sibling, whose node is free again."""
    other = pod("c", gpus=1, labels={LABEL: "pg"}, schedulerName="other-scheduler")
    apply(cluster, join(pod_group("pg", 3), member("a"), member("b"), other, pod("blocked", gpus=8)))
    assert bound(cluster, "a", "b", "blocked") == []
    cluster.delete("pods", "a", "default")
    messages = {e["message"] for e in cluster.get("events") if e["reason"] == "FailedScheduling"
                and e["involvedObject"]["name"] == "b"}
    assert "0/1 nodes are available: 1 rejection in Unreserve." in messages
    assert node_of(cluster, "blocked")


# ---- a group that can never fit: bounded, on the virtual clock ----------------------------------

class TooManyAttempts(Exception):
    pass


def attempts(cluster: Cluster) -> int:
    """``scheduler_schedule_attempts_total``, every result and profile."""
    with cluster.reading() as view:
        return sum(view.stats.get("attempts", {}).values())


@pytest.fixture
def capped(monkeypatch):
    """Stop a command at ``cap[0]`` attempts (the spin this guards against never ended)."""
    from gpusched.cluster.scheduling import binder
    cap, count, record = [10**9], [0], binder.record_attempt

    def counted(*args, **kwargs):
        count[0] += 1
        if count[0] > cap[0]:
            raise TooManyAttempts(f"more than {cap[0]} scheduling attempts in one command")
        record(*args, **kwargs)
    monkeypatch.setattr(binder, "record_attempt", counted)
    return cap, count


@pytest.mark.parametrize("members,min_member,nodes", [
    pytest.param(20, 20, 4, id="20 pods x 8 GPUs, minMember 20, 4 nodes of 8"),
    pytest.param(14, 12, 4, id="14 pods, minMember 12, 4 nodes"),
    pytest.param(6, 6, 2, id="6 pods, minMember 6, 2 nodes"),
])
def test_group_that_can_never_fit_costs_each_member_one_attempt_per_backoff(
        tmp_path, capped, members, min_member, nodes):
    """Bad input: a PodGroup whose minMember exceeds what the cluster could ever hold. Each
    round, the members that fit wait at Permit, the next one fails and PostFilter rejects them
    (coscheduling.go PostFilter), and a member reaching Permit first activates the rest (core.go
    ActivateSiblings, scheduling_queue.go Activate). On the virtual clock a member activated at
    the instant it failed waits out its back-off (1 s doubling to 10 s): ``apply`` attempts each
    member once, ``advance 5s`` runs a few rounds; nothing is bound, no pod runs, and the
    members carry the plugin's messages. Before, one apply never ended."""
    cap, count = capped
    cap[0] = 4 * members
    with Cluster.open(str(tmp_path / "spin.db")) as cluster:
        cluster.frozen_clock = False           # the clock runs: back-offs end on it
        apply(cluster, pool("gpu", count=nodes, gpus=8))
        count[0] = 0
        names = [f"m{i}" for i in range(members)]
        apply(cluster, join(pod_group("pg", min_member), *(member(n) for n in names)))
        assert count[0] <= members
        per_advance = []
        for _ in range(3):
            count[0] = 0
            cluster.advance(5)
            per_advance.append(count[0])
        # rounds when back-offs end (+1 s, +2 s, +4 s, ... at most 10 s): at least one, few
        assert per_advance[0] >= members and max(per_advance) <= 3 * members, per_advance
        pods = cluster.get("pods", names, "default")
        assert {p["status"].get("phase") for p in pods} == {"Pending"}
        assert bound(cluster, *names) == []
        seen = {failed_scheduling(cluster, n) for n in names}
        assert "0/1 nodes are available: 1 optimistic rejection in PostFilter." in seen
        assert any("PodGroup default/pg gets rejected due to Pod" in m for m in seen), seen
        assert attempts(cluster) > 0
