"""Kueue's one reconciler over its job integrations (``cluster.controllers.kueue.jobframework``),
the same for a batch/v1 Job and a JobSet: the events a queued owner gets through its life
(``CreatedWorkload``, ``Started``, ``Stopped``, ``FinishedWorkload``) with their messages.
Upstream: ``pkg/controller/jobframework/reconciler.go`` (``ReconcileGenericJob``, the events and
their messages). (``FailedToStart``, ``podset.Merge``'s conflict, cannot be reached here: the
flavor assigner already refuses a flavor whose nodeLabels the template's nodeSelector
contradicts; ``tests/kueue/test_jobs.py`` checks the conflict's message.)"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.jobs import JOB
from gpusched.kueue.jobsets import JOBSET
from tests.cluster.builders import apply, pool
from tests.kueue.builders import condition, manifests, queued_job, queued_jobset

from .test_kueue_jobs import SETUP

TIMED = {"gpusched.io/duration": "60s"}


def job(name: str, gpus: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return queued_job(name, gpus, "team-a-queue", pods=1, annotations=annotations, command=())


def jobset(name: str, gpus: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return queued_jobset(name, "team-a-queue", [("leader", 1, 1, 1), ("workers", 1, 1, gpus - 1)],
                         annotations=annotations)


# (id, the integration, a builder of its queued owner: name, GPUs, its pods' annotations)
INTEGRATIONS = [pytest.param(JOB, job, id="job"), pytest.param(JOBSET, jobset, id="jobset")]


@pytest.fixture
def kueue(cluster):
    apply(cluster, pool(gpus=8) + "---\n" + SETUP)
    return cluster


def owner_events(cluster, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in cluster.events(namespace="team-a")
            if e["involvedObject"]["name"] == name and e.get("source", {}).get("component", "").startswith("kueue-")]


def workload_of(cluster, integration, name: str) -> dict[str, Any]:
    [owner] = cluster.get(integration.kind, [name], namespace="team-a")
    [wl] = cluster.get("Workload", [integration.workload_name(owner)], namespace="team-a")
    return wl


@pytest.mark.parametrize("integration, build", INTEGRATIONS)
def test_a_finished_owner_finishes_its_workload_with_the_events_of_its_life(kueue, integration, build) -> None:
    apply(kueue, manifests(build("train", 4, annotations=TIMED)))
    wl_name = workload_of(kueue, integration, "train")["metadata"]["name"]
    kueue.advance(120)
    assert condition(workload_of(kueue, integration, "train"), "Finished")[:2] == ("True", "Succeeded")
    assert owner_events(kueue, "train") == [
        ("CreatedWorkload", f"Created Workload: team-a/{wl_name}"),
        ("Started", "Admitted by clusterQueue team-a"),
        ("FinishedWorkload", f"Workload 'team-a/{wl_name}' is declared finished")]


@pytest.mark.parametrize("integration, build", INTEGRATIONS)
def test_a_preempted_owner_is_stopped_with_the_eviction_message(kueue, integration, build) -> None:
    apply(kueue, manifests(build("low", 8)))
    apply(kueue, manifests(queued_job("urgent", 8, "team-a-queue", priority_class="high", command=())))
    evicted = condition(workload_of(kueue, integration, "low"), "Evicted")
    assert evicted[:2] == ("True", "Preempted")
    [low] = kueue.get(integration.kind, ["low"], namespace="team-a")
    assert low["spec"]["suspend"] is True
    assert owner_events(kueue, "low")[-1] == ("Stopped", evicted[2])
