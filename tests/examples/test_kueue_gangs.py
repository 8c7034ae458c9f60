"""examples/kueue/gangs through the real console script, on the three-team cluster of
examples/kueue with examples/kueue/embedded/nodes.yaml: the JobSet is admitted as one Workload
and all its pods run; the Coscheduling gang binds its 4 pods together and its PodGroup runs."""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched


@pytest.fixture
def g(tmp_path) -> Gpusched:
    cli = Gpusched(tmp_path)
    cli.ok("apply", "-f", "examples/kueue/embedded/nodes.yaml", "-f", "examples/kueue/")
    return cli


def running(g: Gpusched, namespace: str) -> list[str]:
    pods = g.json("get", "pods", "-n", namespace)["items"]
    return sorted(p["metadata"]["name"].rsplit("-", 1)[0] for p in pods if p["status"].get("phase") == "Running")


def test_jobset_leader_workers_is_admitted_whole(g):
    g.ok("apply", "-f", "examples/kueue/gangs/jobset-leader-workers.yaml")
    [wl] = g.json("get", "workloads", "-n", "team-a")["items"]
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("leader", 1), ("workers", 3)]
    assert running(g, "team-a") == ["llm-pretrain-leader-0-0", "llm-pretrain-workers-0-0",
                                    "llm-pretrain-workers-0-1", "llm-pretrain-workers-0-2"]


def test_podgroup_indexed_job_binds_as_one_gang(g):
    g.ok("apply", "-f", "examples/kueue/gangs/podgroup-indexed-job.yaml")
    assert running(g, "team-b") == ["allreduce-0", "allreduce-1", "allreduce-2", "allreduce-3"]
    lines = g.ok("get", "podgroups", "-n", "team-b").lines
    assert lines[1].split()[:4] == ["allreduce", "Running", "4", "4"]
