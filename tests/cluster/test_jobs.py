"""Jobs as kube-controller-manager's Job controller runs them (kubernetes
pkg/controller/job/{job_controller.go,backoff_utils.go,pod_failure_policy.go}) and how a pod's
exit code and restartPolicy end its run (kubelet; docs "Pod Lifecycle: container restarts")."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.controllers.workloads import job as jc
from gpusched.cluster.controllers.workloads import job_rules as jr
from gpusched.cluster.kubelet.containers import crash_backoff

from .builders import apply, join, pod, pool, priority_class


def job(name: str = "train", duration: str = "1m", exit_code: int | None = None,
        restart: str = "Never", gpus: int = 0, **spec) -> str:
    container = {"name": "c", "image": "x"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    annotations = {"gpusched.io/duration": duration}
    if exit_code is not None:
        annotations["gpusched.io/exit-code"] = str(exit_code)
    template = {"metadata": {"annotations": annotations},
                "spec": {"restartPolicy": restart, "containers": [container]}}
    return yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                           "spec": {"template": template, **spec}})


def status(cluster, name: str = "train") -> dict:
    return cluster.get("jobs", [name])[0]["status"]


def conditions(cluster, name: str = "train") -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", ""))
            for c in status(cluster, name).get("conditions", [])]


def job_pods(cluster, name: str = "train") -> list[dict]:
    return cluster.get("pods", selector=f"job-name={name}")


# ---- backoff_utils.go ---------------------------------------------------------------------------

@pytest.mark.parametrize("failures, delay", [
    pytest.param(0, 0, id="no-failure-no-delay"),
    pytest.param(1, 10, id="first-failure-10s"),
    pytest.param(2, 20, id="doubling"),
    pytest.param(5, 160, id="five-failures"),
    pytest.param(6, 320, id="six-failures"),
    pytest.param(7, 360, id="capped-at-MaxJobPodFailureBackOff-6m"),
    pytest.param(30, 360, id="still-capped"),
])
def test_backoff_delay(failures, delay):
    # backoff_utils.go getRemainingTime (TestGetRemainingBackoffTime)
    assert jr.backoff_delay(failures) == delay


def test_failed_pods_are_retried_after_the_backoff_delay(cluster):
    # job_controller.go manageJob waits getRemainingTime; 3 failures > backoffLimit 2 fails the Job
    apply(cluster, join(pool(gpus=0), job(exit_code=1, backoffLimit=2)))
    starts = []
    for _ in range(25):
        for p in job_pods(cluster):
            stamp = p["metadata"]["creationTimestamp"]
            if stamp not in starts:
                starts.append(stamp)
        cluster.advance(10)
    assert starts == ["2026-01-01T00:00:00Z", "2026-01-01T00:01:10Z", "2026-01-01T00:02:30Z"]
    assert conditions(cluster) == [("FailureTarget", "True", "BackoffLimitExceeded"),
                                   ("Failed", "True", "BackoffLimitExceeded")]
    assert status(cluster)["failed"] == 3


# ---- exit codes and restartPolicy ---------------------------------------------------------------

@pytest.mark.parametrize("restart, code, phase, restarts", [
    pytest.param("Never", 0, "Succeeded", 0, id="exit-0-succeeds"),
    pytest.param("Never", 3, "Failed", 0, id="Never-non-zero-fails"),
    pytest.param("OnFailure", 3, "Running", 1, id="OnFailure-restarts-in-place"),
    pytest.param("Always", 3, "Running", 1, id="Always-restarts-in-place"),
])
def test_restart_policy_decides_the_end_state(cluster, restart, code, phase, restarts):
    body = yaml.safe_load(pod("p", duration="1m", restartPolicy=restart))
    body["metadata"]["annotations"]["gpusched.io/exit-code"] = str(code)
    apply(cluster, join(pool(gpus=0), yaml.safe_dump(body)))
    cluster.advance(60)
    [p] = cluster.get("pods", ["p"])
    [cs] = p["status"]["containerStatuses"]
    assert (p["status"]["phase"], cs["restartCount"]) == (phase, restarts)
    if code and restart == "Never":
        assert cs["state"]["terminated"]["exitCode"] == code
    if restarts:
        assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert cs["lastState"]["terminated"]["exitCode"] == code
        cluster.advance(crash_backoff(0))
        cs = cluster.get("pods", ["p"])[0]["status"]["containerStatuses"][0]
        assert "running" in cs["state"] and cs["ready"] is True


@pytest.mark.parametrize("restarts_before, delay", [
    pytest.param(0, 10, id="first-restart-10s"), pytest.param(3, 80, id="doubling"),
    pytest.param(5, 300, id="capped-5m"),
])
def test_crash_loop_backoff(restarts_before, delay):
    # docs "Pod Lifecycle": 10s, 20s, 40s, ... capped at five minutes
    assert crash_backoff(restarts_before) == delay


def test_on_failure_restarts_count_toward_backoff_limit(cluster):
    # job_controller.go pastBackoffLimitOnFailure: restartCount sum >= backoffLimit
    apply(cluster, join(pool(gpus=0), job(exit_code=1, restart="OnFailure", backoffLimit=2)))
    [first] = [p["metadata"]["name"] for p in job_pods(cluster)]
    cluster.advance(60)
    p = cluster.get("pods", [first])[0]
    assert p["status"]["containerStatuses"][0]["restartCount"] == 1
    assert conditions(cluster) == []
    cluster.advance(70)      # back-off 10 s, then another minute
    assert conditions(cluster)[-1] == ("Failed", "True", "BackoffLimitExceeded")


# ---- podFailurePolicy (pod_failure_policy.go matchPodFailurePolicy) -----------------------------

def _policy(*rules: dict) -> dict:
    return {"rules": list(rules)}


EXIT_42_FAILJOB = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
EXIT_3_IGNORE = {"action": "Ignore", "onExitCodes": {"containerName": "c", "operator": "In",
                                                     "values": [3]}}
NOT_IN_COUNT = {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42]}}
DISRUPTION_IGNORE = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}


def _failed_pod(code: int = 0, disrupted: bool = False) -> dict:
    status = {"phase": "Failed", "containerStatuses": [
        {"name": "c", "state": {"terminated": {"exitCode": code}}}]}
    if disrupted:
        status["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    return {"metadata": {"name": "p", "namespace": "ns"}, "status": status}


@pytest.mark.parametrize("policy, pod_body, expected", [
    pytest.param(_policy(EXIT_42_FAILJOB), _failed_pod(42), (
        "Container c for pod ns/p failed with exit code 42 matching FailJob rule at index 0",
        True, "FailJob"), id="onExitCodes-In-FailJob"),
    pytest.param(_policy(EXIT_42_FAILJOB), _failed_pod(1), (None, True, None),
                 id="no-rule-matches-counts"),
    pytest.param(_policy(EXIT_3_IGNORE, EXIT_42_FAILJOB), _failed_pod(3), (None, False, "Ignore"),
                 id="onExitCodes-Ignore-not-counted"),
    pytest.param(_policy(NOT_IN_COUNT), _failed_pod(7), (None, True, "Count"),
                 id="onExitCodes-NotIn-Count"),
    pytest.param(_policy(NOT_IN_COUNT), _failed_pod(0), (None, True, None),
                 id="exit-0-never-matches-onExitCodes"),
    pytest.param(_policy(DISRUPTION_IGNORE), _failed_pod(137, disrupted=True),
                 (None, False, "Ignore"), id="onPodConditions-DisruptionTarget-Ignore"),
    pytest.param(_policy({"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}),
                 _failed_pod(137, disrupted=True),
                 ("Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0",
                  True, "FailJob"), id="onPodConditions-FailJob-message"),
])
def test_match_pod_failure_policy(policy, pod_body, expected):
    assert jr.match_pod_failure_policy(policy, pod_body) == expected


def test_fail_job_rule_fails_the_job_with_reason_pod_failure_policy(cluster):
    apply(cluster, join(pool(gpus=0), job(exit_code=42, backoffLimit=6,
                                          podFailurePolicy=_policy(EXIT_42_FAILJOB))))
    [name] = [p["metadata"]["name"] for p in job_pods(cluster)]
    cluster.advance(60)
    assert conditions(cluster) == [("FailureTarget", "True", "PodFailurePolicy"),
                                   ("Failed", "True", "PodFailurePolicy")]
    message = status(cluster)["conditions"][-1]["message"]
    assert message == (f"Container c for pod default/{name} failed with exit code 42 matching "
                       "FailJob rule at index 0")


def test_ignored_failure_is_replaced_without_counting(cluster):
    apply(cluster, join(pool(gpus=0), job(exit_code=3, podFailurePolicy=_policy(EXIT_3_IGNORE))))
    cluster.advance(60)
    assert "failed" not in status(cluster) and "active" not in status(cluster)
    cluster.advance(10)   # the replacement waits the back-off, ignored failures included
    assert status(cluster)["active"] == 1
    phases = sorted(p["status"]["phase"] for p in job_pods(cluster))
    assert phases == ["Failed", "Running"]


@pytest.mark.parametrize("policy, failed, replaced_after", [
    pytest.param(None, 1, 10, id="preempted-pod-counts-as-failed"),
    # a podFailurePolicy makes podReplacementPolicy Failed: no replacement while the victim is
    # terminating (job_controller.go manageJob / onlyReplaceFailedPods); it fails when its 30 s
    # grace period ends, and the 10 s back-off counts from then (getFinishedTime)
    pytest.param(_policy(DISRUPTION_IGNORE), 0, 40, id="DisruptionTarget-Ignore-does-not-count"),
])
def test_preempted_job_pod(cluster, policy, failed, replaced_after):
    # job_controller.go: a pod deleted before it finished keeps the job-tracking finalizer
    # until counted (isPodFailed / trackJobStatusAndRemoveFinalizers)
    extra = {"podFailurePolicy": policy} if policy else {}
    apply(cluster, join(pool(gpus=1), priority_class("high", 1000),
                        job(duration="1h", gpus=1, **extra)))
    apply(cluster, pod("vip", gpus=1, priority_class="high"))
    assert status(cluster).get("failed", 0) == failed
    assert all(not p["metadata"].get("finalizers") for p in job_pods(cluster)
               if p["status"]["phase"] == "Failed")
    assert "active" not in status(cluster)    # the replacement waits the 10 s back-off
    cluster.advance(replaced_after - 1)
    assert "active" not in status(cluster)
    cluster.advance(1)
    assert status(cluster)["active"] == 1


def test_evicted_job_pod_counts_as_failed(cluster):
    apply(cluster, join(pool(count=2, gpus=1), job(duration="1h", gpus=1)))
    [p] = job_pods(cluster)
    cluster.drain(p["spec"]["nodeName"])
    assert status(cluster)["failed"] == 1
    cluster.advance(10)
    assert status(cluster)["active"] == 1


DISRUPTION_FAILJOB = {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}


def _preempt(cluster) -> None:
    apply(cluster, pod("vip", gpus=1, priority_class="high"))


def _drain(cluster) -> None:
    cluster.drain(job_pods(cluster)[0]["spec"]["nodeName"])


# job_controller.go syncJob reads the FailJob message (getFailJobMessage) from the pods before
# trackJobStatusAndRemoveFinalizers lets a deleted pod go, so a victim's DisruptionTarget fails the
# Job (pod_failure_policy.go: "Pod %s/%s has condition %v matching %v rule at index %d").
@pytest.mark.parametrize("disrupt", [_preempt, _drain], ids=["preempted", "evicted"])
def test_disruption_target_fail_job_rule_fails_the_job(cluster, disrupt):
    apply(cluster, join(pool(gpus=1), priority_class("high", 1000),
                        job(duration="1h", gpus=1, podFailurePolicy=_policy(DISRUPTION_FAILJOB))))
    [name] = [p["metadata"]["name"] for p in job_pods(cluster)]
    disrupt(cluster)
    cluster.advance(60)
    assert conditions(cluster) == [("FailureTarget", "True", "PodFailurePolicy"),
                                   ("Failed", "True", "PodFailurePolicy")]
    assert status(cluster)["conditions"][-1]["message"] == (
        f"Pod default/{name} has condition DisruptionTarget matching FailJob rule at index 0")
    assert job_pods(cluster) == [] and "active" not in status(cluster)


def test_deleting_a_running_job_pod_counts_it_failed_and_removes_it(cluster):
    apply(cluster, join(pool(gpus=0), job(duration="1h")))
    [name] = [p["metadata"]["name"] for p in job_pods(cluster)]
    cluster.delete("pod", name)
    # Terminating for its 30 s grace period, already counted failed (isPodFailed: deleted
    # before it succeeded); the back-off counts from the delete (getFinishTimeFromDeletionTimestamp)
    assert [p["metadata"]["name"] for p in job_pods(cluster)
            if not p["metadata"].get("deletionTimestamp")] == []
    assert status(cluster)["failed"] == 1
    cluster.advance(10)
    assert status(cluster)["active"] == 1
    cluster.advance(20)
    assert name not in [p["metadata"]["name"] for p in job_pods(cluster)]


# ---- completions, parallelism, Indexed, suspend, TTL -------------------------------------------

def test_indexed_job_pods_carry_their_index(cluster):
    apply(cluster, join(pool(gpus=0), job(completions=3, parallelism=2, completionMode="Indexed")))
    pods = sorted(job_pods(cluster), key=lambda p: p["metadata"]["name"])
    assert [p["metadata"]["annotations"][jr.INDEX_KEY] for p in pods] == ["0", "1"]
    assert [p["metadata"]["labels"][jr.INDEX_KEY] for p in pods] == ["0", "1"]
    assert [p["spec"]["hostname"] for p in pods] == ["train-0", "train-1"]
    assert all(p["metadata"]["name"].startswith(f"train-{i}-") for i, p in enumerate(pods))
    env = pods[0]["spec"]["containers"][0]["env"][-1]
    assert env["name"] == "JOB_COMPLETION_INDEX"
    cluster.advance(60)
    assert status(cluster)["completedIndexes"] == "0,1"
    assert [p["metadata"]["annotations"][jr.INDEX_KEY] for p in job_pods(cluster)
            if p["status"]["phase"] == "Running"] == ["2"]
    cluster.advance(60)
    assert status(cluster)["completedIndexes"] == "0-2" and status(cluster)["succeeded"] == 3
    assert conditions(cluster)[-1] == ("Complete", "True", "CompletionsReached")


@pytest.mark.parametrize("indexes, text", [
    pytest.param({0, 1, 2}, "0-2", id="range"), pytest.param({1, 3, 4, 5, 9}, "1,3-5,9", id="mixed"),
    pytest.param({0, 1}, "0,1", id="run-of-two-with-comma"),
    pytest.param(set(), "", id="empty"),
])
def test_completed_indexes_text(indexes, text):
    # job_controller indexed_job_utils.go orderedIntervals.String
    assert jc._format_indexes(indexes) == text and jc._indexes(text) == indexes


def test_parallelism_without_completions_finishes_when_one_succeeds(cluster):
    apply(cluster, join(pool(gpus=0), job(parallelism=3)))
    assert status(cluster)["active"] == 3
    cluster.advance(60)
    assert status(cluster)["succeeded"] == 3
    assert conditions(cluster)[-1][0] == "Complete"


def test_suspend_and_resume(cluster):
    # job_controller.go syncJob: Suspended/JobSuspended, then JobResumed resets startTime
    apply(cluster, join(pool(gpus=0), job(suspend=True, activeDeadlineSeconds=100)))
    assert job_pods(cluster) == [] and "startTime" not in status(cluster)
    assert conditions(cluster) == [("Suspended", "True", "JobSuspended")]
    cluster.advance(500)
    apply(cluster, job(suspend=False, activeDeadlineSeconds=100))
    assert conditions(cluster) == [("Suspended", "False", "JobResumed")]
    assert status(cluster)["startTime"] == "2026-01-01T00:08:20Z" and len(job_pods(cluster)) == 1
    apply(cluster, job(suspend=True, activeDeadlineSeconds=100))
    assert "failed" not in status(cluster)                                # deleteJobPods: uncounted
    assert all(p["metadata"].get("deletionTimestamp") for p in job_pods(cluster))   # Terminating
    cluster.advance(30)
    assert job_pods(cluster) == [] and "failed" not in status(cluster)


def test_ttl_seconds_after_finished_deletes_job_and_pods(cluster):
    apply(cluster, join(pool(gpus=0), job(ttlSecondsAfterFinished=30)))
    cluster.advance(60)
    assert conditions(cluster)[-1][0] == "Complete"
    cluster.advance(29)
    assert cluster.get("jobs") != []
    cluster.advance(1)
    assert cluster.get("jobs") == [] and job_pods(cluster) == []


def test_lowering_parallelism_deletes_the_surplus_pods_uncounted(cluster):
    # job_controller.go manageJob: active > wantActive deletes the surplus (deleteJobPods), which
    # is not a failure
    apply(cluster, join(pool(gpus=0), job(duration="1h", parallelism=3)))
    assert status(cluster)["active"] == 3
    apply(cluster, job(duration="1h", parallelism=1))
    assert len([p for p in job_pods(cluster) if not p["metadata"].get("deletionTimestamp")]) == 1
    assert status(cluster)["active"] == 1 and "failed" not in status(cluster)
    cluster.advance(30)
    assert len(job_pods(cluster)) == 1


def test_deleting_a_running_job_releases_its_pods_tracking_finalizer(cluster):
    # job_controller.go syncOrphanPod: a pod whose Job is gone loses batch.kubernetes.io/job-tracking
    apply(cluster, join(pool(gpus=0), job(duration="1h")))
    assert [p["metadata"]["finalizers"] for p in job_pods(cluster)] == [[jr.FINALIZER]]
    cluster.delete("job", "train")
    assert all(jr.FINALIZER not in (p["metadata"].get("finalizers") or [])
               for p in job_pods(cluster))
    cluster.advance(30)
    assert job_pods(cluster) == []
