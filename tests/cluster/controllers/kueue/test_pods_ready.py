"""Kueue's waitForPodsReady on the embedded cluster (``cluster.controllers.kueue.pods_ready``),
on the virtual clock: the PodsReady condition, eviction at the time-out with Kueue's conditions,
requeue after the back-off, deactivation past ``backoffLimitCount``. Upstream:
``pkg/controller/core/workload_controller_test.go`` (``TestReconcile`` "should set the Evicted
condition with PodsReadyTimeout reason ...", ``TestAdmittedNotReadyWorkload``),
``workload_controller_requeue_test.go``, ``test/integration/singlecluster/scheduler/podsready``
(the conditions after a PodsReady time-out)."""

from __future__ import annotations

import pytest
import yaml

from tests.cluster.builders import apply, pod, pool
from tests.kueue.builders import condition, manifests, namespace

from .test_kueue_jobs import SETUP, job, workload

MESSAGE = "Exceeded the PodsReady timeout team-a/{name}"


@pytest.fixture
def kueue(cluster):
    apply(cluster, pool(gpus=8) + "---\n" + SETUP)
    return cluster


def kueue_config(**wait) -> str:
    text = yaml.safe_dump({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                           "waitForPodsReady": wait})
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                           "data": {"controller_manager_config.yaml": text}})


NAMESPACE = manifests(namespace("kueue-system"))


def test_ready_job_gets_pods_ready_started(kueue) -> None:
    apply(kueue, job("small", 4))
    assert condition(workload(kueue, "small"), "PodsReady") == (
        "True", "Started", "All pods reached readiness and the workload is running")


def test_not_ready_job_is_evicted_at_the_default_timeout_and_requeued_after_the_backoff(kueue) -> None:
    """Default 30m timeout; the conditions test/integration's podsready test expects; requeue
    after backoffBaseSeconds 60 (count 1); then admitted again."""
    apply(kueue, pod("hog", gpus=8))              # outside Kueue: the Job's pod cannot run
    apply(kueue, job("train", 4))
    wl = workload(kueue, "train")
    assert condition(wl, "PodsReady") == ("False", "WaitForStart", "Not all pods are ready or succeeded")
    kueue.advance(30 * 60 - 1)
    assert condition(workload(kueue, "train"), "Admitted")[0] == "True"
    kueue.advance(1)
    wl = workload(kueue, "train")
    message = MESSAGE.format(name=wl["metadata"]["name"])
    assert condition(wl, "Evicted") == ("True", "PodsReadyTimeout", message)
    assert condition(wl, "QuotaReserved") == ("False", "Pending", message)
    assert condition(wl, "Admitted") == ("False", "NoReservation", "The workload has no reservation")
    assert condition(wl, "Requeued") == ("False", "PodsReadyTimeout", message)
    assert wl["status"]["requeueState"]["count"] == 1 and "admission" not in wl["status"]
    [stopped] = kueue.get("Job", ["train"], namespace="team-a")
    assert stopped["spec"]["suspend"] is True
    kueue.advance(60)
    wl = workload(kueue, "train")
    assert condition(wl, "Requeued") == ("True", "BackoffFinished", "The workload backoff was finished")
    assert condition(wl, "QuotaReserved")[0] == "True"
    assert wl["status"]["requeueState"] == {"count": 1}


def test_configured_timeout_and_backoff_limit_deactivate(kueue) -> None:
    """requeuingStrategy.backoffLimitCount 0: the first time-out deactivates the Workload."""
    apply(kueue, NAMESPACE + "---\n" + kueue_config(timeout="5m", requeuingStrategy={"backoffLimitCount": 0}))
    apply(kueue, pod("hog", gpus=8))
    apply(kueue, job("train", 4))
    kueue.advance(5 * 60)
    wl = workload(kueue, "train")
    assert wl["spec"]["active"] is False
    assert condition(wl, "Evicted") == (
        "True", "DeactivatedDueToRequeuingLimitExceeded",
        "The workload is deactivated due to exceeding the maximum number of re-queuing retries")


def test_waitforpodsready_null_turns_it_off(kueue) -> None:
    config = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                             "data": {"controller_manager_config.yaml": "waitForPodsReady: null\n"}})
    apply(kueue, NAMESPACE + "---\n" + config)
    apply(kueue, pod("hog", gpus=8))
    apply(kueue, job("train", 4))
    kueue.advance(2 * 3600)
    assert condition(workload(kueue, "train"), "Admitted")[0] == "True"
