"""The job framework's pure half (``gpusched.kueue.jobframework``), the same for every
integration: ``Finished`` from the owner's terminal condition (``jobs/job/job_controller.go`` and
``jobs/jobset/jobset_controller.go`` ``Finished``: the first true Complete/Completed or Failed),
and the PodSet infos of an admitted Workload (``podset.FromAssignment``: the flavors' nodeLabels
and tolerations in flavor-name order, the PodSet label and the Workload annotation)."""

from __future__ import annotations

import pytest

from gpusched.kueue.jobframework import PodSetInfo, finished, podset_infos
from gpusched.kueue.jobs import JOB
from gpusched.kueue.jobsets import JOBSET


def owner(*conditions: tuple[str, str, str]) -> dict:
    return {"status": {"conditions": [{"type": t, "status": s, "message": m} for t, s, m in conditions]}}


@pytest.mark.parametrize("integration, body, want", [
    pytest.param(JOB, owner(), None, id="job running"),
    pytest.param(JOB, owner(("Complete", "True", "done")), ("done", True), id="job complete"),
    pytest.param(JOB, owner(("Failed", "True", "BackoffLimitExceeded")), ("BackoffLimitExceeded", False),
                 id="job failed"),
    pytest.param(JOB, owner(("Complete", "False", "")), None, id="job complete false"),
    pytest.param(JOB, owner(("Completed", "True", "x")), None, id="job ignores the JobSet's condition"),
    pytest.param(JOBSET, owner(("Completed", "True", "jobset completed successfully")),
                 ("jobset completed successfully", True), id="jobset completed"),
    pytest.param(JOBSET, owner(("Suspended", "True", ""), ("Failed", "True", "jobset failed")),
                 ("jobset failed", False), id="jobset failed after another condition"),
])
def test_finished(integration, body, want) -> None:
    assert finished(integration, body) == want


def test_podset_infos_carry_each_podsets_flavors_and_meta() -> None:
    flavors = {"a100": {"nodeLabels": {"gpu": "a100", "zone": "a"}, "tolerations": [{"key": "gpu"}]},
               "spot": {"nodeLabels": {"zone": "b"}, "tolerations": [{"key": "spot"}]}}
    workload = {"metadata": {"name": "job-train-12345"},
                "spec": {"podSets": [{"name": "main", "count": 1}]},
                "status": {"admission": {"podSetAssignments": [
                    {"name": "main", "flavors": {"nvidia.com/gpu": "spot", "cpu": "a100"}}]}}}
    [info] = podset_infos(workload, lambda name: flavors[name])
    assert info.name == "main"
    assert info.node_selector == {"gpu": "a100", "zone": "b"}          # a100 first, then spot
    assert info.tolerations == [{"key": "gpu"}, {"key": "spot"}]
    assert info.meta == ({"kueue.x-k8s.io/podset": "main"}, {"kueue.x-k8s.io/workload": "job-train-12345"}, [])


@pytest.mark.parametrize("integration, body", [
    pytest.param(JOB, {"spec": {"template": {"spec": {}}}}, id="job"),
    pytest.param(JOBSET, {"spec": {"replicatedJobs": [{"name": "main", "template": {"spec": {"template": {}}}}]}},
                 id="jobset"),
])
def test_run_with_podsets_info_merges_the_whole_info(integration, body) -> None:
    """``RunWithPodSetsInfo`` of either integration merges the whole PodSetInfo (``podset.Merge``;
    ``jobs/jobset/jobset_controller.go`` as ``jobs/job/job_controller.go``): flavors, PodSet
    label, Workload annotation and the topology gate."""
    meta = ({"kueue.x-k8s.io/podset": "main"}, {"kueue.x-k8s.io/workload": "wl"}, ["kueue.x-k8s.io/topology"])
    out, error = integration.run_with_podsets_info(body, [PodSetInfo("main", {"gpu": "a100"}, [], meta)])
    spec = out["spec"]
    template = spec["template"] if integration is JOB else spec["replicatedJobs"][0]["template"]["spec"]["template"]
    assert error == "" and spec["suspend"] is False
    assert template["metadata"] == {"labels": {"kueue.x-k8s.io/podset": "main"},
                                    "annotations": {"kueue.x-k8s.io/workload": "wl"}}
    assert template["spec"]["nodeSelector"] == {"gpu": "a100"}
    assert template["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
