"""A PodSet's topology request, as Kueue's Topology-Aware Scheduling reads it: the pod-template
annotations a user writes (``kueue.x-k8s.io/podset-required-topology: <level label>``,
``-preferred-topology``, ``-unconstrained-topology: "true"``, the slice pair
``-slice-required-topology`` + ``-slice-size``) become the Workload PodSet's ``topologyRequest``
(``pkg/controller/jobframework/tas.go`` ``podSetTopologyRequestBuilder.Build``; a batch/v1 Job's
also names ``podIndexLabel: batch.kubernetes.io/job-completion-index``), and ``TopologyRequest``
is that field parsed once.

Neighbours: ``jobs`` (writes the field into the Workload), ``inputs`` (parses it into
``PodSetRequest.topology``), ``tas`` and ``tas_cycle`` (read it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"       # kueue.TopologySchedulingGate
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"  # kueue.WorkloadAnnotation
PODSET_LABEL = "kueue.x-k8s.io/podset"           # constants.PodSetLabel
HOSTNAME = "kubernetes.io/hostname"
_TRUE = {"1", "t", "T", "true", "TRUE", "True"}   # Go's strconv.ParseBool
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


def _slice_fields(annotations: Mapping[str, str]) -> dict[str, Any]:
    level, size = annotations.get(SLICE_REQUIRED), annotations.get(SLICE_SIZE)
    if level is None or size is None or not str(size).lstrip("-").isdigit():
        return {}
    return {"podSetSliceRequiredTopology": level, "podSetSliceSize": int(size)}


def topology_request_field(annotations: Mapping[str, str], pod_index_label: str | None,
                           sub_group: tuple[str, int] | None = None) -> dict[str, Any] | None:
    """The Workload PodSet's ``topologyRequest`` for a pod template's annotations (None when
    there is nothing to say). Required wins over preferred over unconstrained, as ``Build``
    checks them; an unconstrained value Go cannot parse as a bool is left out. ``sub_group`` is
    ``SubGroup``'s (index label, count): a JobSet's ``jobset.sigs.k8s.io/job-index`` and its
    replicatedJob's replicas."""
    request: dict[str, Any] = {}
    if REQUIRED in annotations:
        request["required"] = annotations[REQUIRED]
    elif PREFERRED in annotations:
        request["preferred"] = annotations[PREFERRED]
    elif UNCONSTRAINED in annotations and str(annotations[UNCONSTRAINED]) in _TRUE | _FALSE:
        request["unconstrained"] = str(annotations[UNCONSTRAINED]) in _TRUE
    request.update(_slice_fields(annotations))
    if not request and pod_index_label is None and sub_group is None:
        return None
    if pod_index_label is not None:
        request["podIndexLabel"] = pod_index_label
    if sub_group is not None:
        request["subGroupIndexLabel"], request["subGroupCount"] = sub_group
    return request


@dataclass(frozen=True)
class TopologyRequest:
    """``spec.podSets[].topologyRequest`` of a Workload, parsed."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int = 1
    pod_index_label: str | None = None

    @property
    def explicit(self) -> bool:
        """``IsExplicitlyRequestingTAS``: a level, unconstrained true, or a slice layer."""
        return bool(self.required or self.preferred or self.unconstrained or self.slice_level)

    def level_keys(self) -> tuple[str, ...]:
        """The level labels the request names (``HasLevel`` checks each against a Topology)."""
        return tuple(k for k in (self.required or self.preferred, self.slice_level) if k)


def parse_topology_request(value: Any) -> TopologyRequest | None:
    """A ``topologyRequest`` dict as ``TopologyRequest`` (None when absent)."""
    if not isinstance(value, Mapping):
        return None
    size = value.get("podSetSliceSize")
    return TopologyRequest(value.get("required"), value.get("preferred"), value.get("unconstrained") is True,
                           value.get("podSetSliceRequiredTopology"), int(size) if isinstance(size, int) else 1,
                           value.get("podIndexLabel"))


def conflicting_annotations(annotations: Mapping[str, str]) -> str:
    """Kueue's Job webhook refusal when a template names more than one topology annotation
    (``jobframework/tas_validation.go`` ``ValidateTASPodSetRequest``), "" when it does not."""
    if sum(key in annotations for key in (REQUIRED, PREFERRED, UNCONSTRAINED)) <= 1:
        return ""
    return (f'must not contain more than one topology annotation: ["{REQUIRED}", "{PREFERRED}", '
            f'"{UNCONSTRAINED}"]')
