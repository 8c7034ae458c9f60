"""JobSet on the embedded cluster: JobSet's webhook defaults and controller (kubernetes-sigs/jobset
``pkg/controllers/jobset_controller.go``, ``jobset_controller_test.go`` ``TestConstructJobsFromTemplate``:
names, labels, subdomain, suspend) with Indexed Jobs (``pkg/controller/job``: completion index,
hostname), and Kueue's JobSet integration (``pkg/controller/jobs/jobset/jobset_controller_test.go``:
one PodSet per replicatedJob; admitted whole or not at all)."""

from __future__ import annotations

import hashlib

from gpusched.kueue.jobsets import jobset_workload_name

from tests.kueue.builders import condition, manifests, namespace

from .builders import apply, pool
from .controllers.kueue.test_kueue_jobs import SETUP

LEADER_WORKERS = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: train
  namespace: team-a
  {labels}
spec:
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            containers:
            - name: leader
              image: busybox
              resources: {{limits: {{nvidia.com/gpu: 4}}}}
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            containers:
            - name: worker
              image: busybox
              resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def jobset(queued: bool = False) -> str:
    return LEADER_WORKERS.format(labels="labels: {kueue.x-k8s.io/queue-name: team-a-queue}" if queued else "")


NAMESPACE = manifests(namespace("team-a"))


def test_jobset_creates_indexed_jobs_with_jobset_labels_and_hostnames(cluster):
    apply(cluster, pool(gpus=8, count=2) + "---\n" + NAMESPACE + "---\n" + jobset())
    jobs = {j["metadata"]["name"]: j for j in cluster.get("Job", namespace="team-a")}
    assert sorted(jobs) == ["train-leader-0", "train-workers-0", "train-workers-1"]
    worker = jobs["train-workers-1"]
    labels = worker["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "train"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert labels["jobset.sigs.k8s.io/replicatedjob-replicas"] == "2"
    assert labels["jobset.sigs.k8s.io/global-replicas"] == "3"
    assert labels["jobset.sigs.k8s.io/job-index"] == "1"
    assert labels["jobset.sigs.k8s.io/job-global-index"] == "2"
    assert labels["jobset.sigs.k8s.io/job-key"] == hashlib.sha1(b"team-a/train-workers-1").hexdigest()
    assert worker["spec"]["completionMode"] == "Indexed"      # the JobSet webhook's default
    pods = {p["metadata"]["name"].rsplit("-", 1)[0]: p for p in cluster.get("pods", namespace="team-a")}
    pod = pods["train-workers-1-0"]
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("train-workers-1-0", "train")
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "0"
    [service] = cluster.get("Service", ["train"], namespace="team-a")
    assert service["spec"]["clusterIP"] == "None"
    status = cluster.get("JobSet", ["train"], namespace="team-a")[0]["status"]
    assert [(s["name"], s["ready"]) for s in status["replicatedJobsStatus"]] == [("leader", 1), ("workers", 2)]


def kueue_cluster(cluster, gpus_per_node: int = 8, nodes: int = 1):
    apply(cluster, pool(gpus=gpus_per_node, count=nodes) + "---\n" + SETUP)
    return cluster


def test_queued_jobset_is_one_workload_with_a_podset_per_replicated_job(cluster):
    """One PodSet per replicatedJob (leader 1 x 1 pod, workers 2 x 2 pods): 8 GPUs, the
    ClusterQueue's whole quota; admitted, the Jobs get the flavor's nodeSelector."""
    kueue_cluster(cluster)
    apply(cluster, jobset(queued=True))
    [js] = cluster.get("JobSet", ["train"], namespace="team-a")
    [wl] = cluster.get("Workload", [jobset_workload_name("train", js["metadata"]["uid"])], namespace="team-a")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("leader", 1), ("workers", 4)]
    assert condition(wl, "Admitted")[0] == "True"
    assert js["spec"]["suspend"] is False
    [job] = cluster.get("Job", ["train-workers-0"], namespace="team-a")
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
    assert len([p for p in cluster.get("pods", namespace="team-a") if p["spec"].get("nodeName")]) == 5


def test_jobset_over_quota_waits_whole_with_no_job_running(cluster):
    """A second JobSet while the first holds the quota: its Workload waits with Kueue's
    message and none of its Jobs run (they exist, suspended)."""
    kueue_cluster(cluster, nodes=2)
    apply(cluster, jobset(queued=True))
    apply(cluster, jobset(queued=True).replace("name: train\n", "name: second\n"))
    [js] = cluster.get("JobSet", ["second"], namespace="team-a")
    [wl] = cluster.get("Workload", [jobset_workload_name("second", js["metadata"]["uid"])], namespace="team-a")
    assert condition(wl, "QuotaReserved")[:2] == ("False", "WaitingForQuota")
    jobs = [j for j in cluster.get("Job", namespace="team-a") if j["metadata"]["name"].startswith("second-")]
    assert len(jobs) == 3 and all(j["spec"]["suspend"] for j in jobs)
    assert not [p for p in cluster.get("pods", namespace="team-a") if p["metadata"]["name"].startswith("second-")]


def test_jobset_completes_when_every_job_completes(cluster):
    """executeSuccessPolicy (operator All): Completed AllJobsCompleted, terminalState; Kueue's
    Workload finishes with the JobSet's message."""
    kueue_cluster(cluster)
    timed = jobset(queued=True).replace("        template:\n          spec:\n",
                                        "        template:\n          metadata:\n            annotations: "
                                        "{gpusched.io/duration: 60s}\n          spec:\n")
    apply(cluster, timed)
    cluster.advance(120)
    [js] = cluster.get("JobSet", ["train"], namespace="team-a")
    assert js["status"]["terminalState"] == "Completed"
    assert condition(js, "Completed") == ("True", "AllJobsCompleted", "jobset completed successfully")
    [wl] = cluster.get("Workload", [jobset_workload_name("train", js["metadata"]["uid"])], namespace="team-a")
    assert condition(wl, "Finished") == ("True", "Succeeded", "jobset completed successfully")


def test_jobset_not_ready_in_time_is_evicted_and_suspended_whole(cluster):
    """waitForPodsReady for a JobSet (PodsReady: every replicatedJob's Jobs ready): a worker
    that cannot run keeps the Workload not ready; at the 30m time-out it is evicted and the
    JobSet and all its Jobs are suspended, the others' pods removed."""
    kueue_cluster(cluster)
    apply(cluster, "apiVersion: v1\nkind: Pod\nmetadata: {name: hog, namespace: default}\nspec:\n"
                   "  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 2}}}]\n")
    apply(cluster, jobset(queued=True))
    [js] = cluster.get("JobSet", ["train"], namespace="team-a")
    name = jobset_workload_name("train", js["metadata"]["uid"])
    assert condition(cluster.get("Workload", [name], namespace="team-a")[0], "PodsReady")[1] == "WaitForStart"
    cluster.advance(30 * 60)
    [wl] = cluster.get("Workload", [name], namespace="team-a")
    assert condition(wl, "Evicted")[1] == "PodsReadyTimeout"
    [js] = cluster.get("JobSet", ["train"], namespace="team-a")
    assert js["spec"]["suspend"] is True
    assert all(j["spec"]["suspend"] for j in cluster.get("Job", namespace="team-a"))
    cluster.advance(31)                          # the pods' termination grace period
    assert not [p for p in cluster.get("pods", namespace="team-a") if p["status"].get("phase") == "Running"]
