"""The Job integration's pure half (``gpusched.kueue.jobs``): the Workload's name and PodSet
(``jobframework/workload_names.go``, ``jobs/job/job_controller.go`` ``PodSets``/``podsCount``),
``status.admission``, and the admitted template (``podset.Merge``; ``podset_test.go``'s conflict).
"""

from __future__ import annotations

import hashlib

import pytest

from gpusched.kueue.flavors import FIT, Assignment, FlavorChoice, PodSetAssignment
from gpusched.kueue.jobframework import workload_name
from gpusched.kueue.jobs import admission_of, admitted_template, pods_count, workload_for_job


def job(parallelism=None, completions=None, **annotations) -> dict:
    spec = {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "team-a", "uid": "u-1",
                         "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue"}, "annotations": annotations},
            "spec": spec}


def test_workload_name_hashes_kind_group_name_uid() -> None:
    digest = hashlib.sha1(b"Job\nbatch\ntrain\nu-1").hexdigest()[:5]
    assert workload_name("train", "u-1") == f"job-train-{digest}"


@pytest.mark.parametrize("parallelism,completions,want", [(None, None, 1), (4, None, 4), (4, 2, 2), (2, 8, 2)],
                         ids=["defaults to 1", "parallelism", "completions below parallelism", "parallelism below completions"])
def test_pods_count(parallelism, completions, want) -> None:
    assert pods_count(job(parallelism, completions)) == want


def test_workload_for_job() -> None:
    wl = workload_for_job(job(4, **{"kueue.x-k8s.io/job-min-parallelism": "2"}), priority=100, priority_class="high")
    assert wl["spec"]["queueName"] == "team-a-queue"
    assert (wl["spec"]["podSets"][0]["name"], wl["spec"]["podSets"][0]["count"], wl["spec"]["podSets"][0]["minCount"]) == (
        "main", 4, 2)
    assert wl["metadata"]["ownerReferences"][0]["controller"] is True
    assert wl["spec"]["priorityClassRef"]["name"] == "high"


def test_admission_from_an_assignment() -> None:
    assignment = Assignment((PodSetAssignment("main", 4, {"nvidia.com/gpu": 8, "cpu": 4000},
                                              {"nvidia.com/gpu": FlavorChoice("a100", FIT, 0)}),))
    assert admission_of("team-a", assignment) == {"clusterQueue": "team-a", "podSetAssignments": [
        {"name": "main", "flavors": {"nvidia.com/gpu": "a100"}, "resourceUsage": {"nvidia.com/gpu": "8"}, "count": 4}]}


def test_admitted_template_merges_labels_and_tolerations() -> None:
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    template = {"spec": {"nodeSelector": {"zone": "a"}, "tolerations": [toleration]}}
    got, error = admitted_template(template, {"gpu": "a100"}, [toleration, {"key": "spot", "operator": "Exists"}])
    assert error == ""
    assert got["spec"]["nodeSelector"] == {"zone": "a", "gpu": "a100"}
    assert len(got["spec"]["tolerations"]) == 2
    assert template["spec"]["nodeSelector"] == {"zone": "a"}, "the input is not changed"


def test_conflicting_selector_is_the_permanent_error() -> None:
    got, error = admitted_template({"spec": {"nodeSelector": {"gpu": "h100"}}}, {"gpu": "a100"}, [])
    assert error == ("invalid admission check PodSetUpdate: conflict for nodeSelector: "
                     "conflict for key=gpu, value1=h100, value2=a100")
    assert got["spec"]["nodeSelector"] == {"gpu": "h100"}
