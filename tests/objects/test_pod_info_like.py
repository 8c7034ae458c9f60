"""``pod_info_like``: a pod read again after a write of its metadata or status (bound, started,
relabelled, terminating) keeps its spec's parts and equals a fresh ``pod_info``."""

from __future__ import annotations

import copy
from dataclasses import fields
from typing import Any, Callable

import pytest

from gpusched.objects.pod import SPEC_FIELDS, pod_info, pod_info_like
from gpusched.objects.types import PodInfo


def make_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team", "uid": "u1", "labels": {"app": "web"},
                     "annotations": {"gpusched.io/gpu-milli": "500"}},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {
                     "limits": {"nvidia.com/gpu": 1, "cpu": "2"}}}],
                 "tolerations": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
                 "priority": 100, "nodeName": "n1"},
    }


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(pod: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = pod
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return change


CHANGES = {
    "started": _set("metadata.annotations", {"gpusched.io/gpu-milli": "500",
                                             "gpusched.io/start-time": "12.5"}),
    "start-time-in-status": _set("status.startTime", 30),
    "relabelled": _set("metadata.labels", {"app": "db", "tier": "x"}),
    "gpu-model-annotation": _set("metadata.annotations", {"gpusched.io/gpu-milli": "500",
                                                          "gpusched.io/gpu-model": "A100-40GB|T4"}),
    "owned": _set("metadata.ownerReferences", [{"kind": "Job", "name": "j", "controller": True}]),
    "terminating": _set("metadata.deletionTimestamp", "2026-01-01T00:00:00Z"),
    "nominated": _set("status.nominatedNodeName", "n2"),
    "disrupted": _set("status.conditions", [{"type": "DisruptionTarget", "status": "True",
                                             "reason": "PreemptionByScheduler"}]),
    "renamed": _set("metadata.name", "q"),
    "new-uid": _set("metadata.uid", "u2"),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_pod_info_like_equals_a_fresh_pod_info(change):
    before = make_pod()
    after = copy.deepcopy(before)
    change(after)
    assert pod_info_like(pod_info(before, 3), after, 9) == pod_info(after, 9)


def test_every_pod_info_field_is_kept_or_read_again():
    """A new PodInfo field must be placed: kept from the spec (SPEC_FIELDS) or read again by
    pod_info_like (the metadata and status fields below)."""
    again = {"namespace", "name", "uid", "nominated_node", "labels", "gpu_models", "creation_seq",
             "start_time", "owner_kind", "owner_name", "terminating", "disruption_reason",
             "resource_claims"}
    assert SPEC_FIELDS | again == {f.name for f in fields(PodInfo)}
    assert not SPEC_FIELDS & again
