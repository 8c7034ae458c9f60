"""Frozen domain values parsed once from manifests: what the scheduler and controllers read.

The raw dict stays the source of truth in the store (unknown fields survive); these are typed,
canonical-unit *views* built from it by ``objects.pod.pod_info`` and ``objects.node.node_info``
(or directly, e.g. by trace loaders, without any dict).

Units: cpu millicores, memory/storage bytes, everything else whole units; GPU shares in milli-GPU.

Neighbours: built by objects.pod / objects.node; read by devices, scheduler, cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


# Annotations and labels gpusched defines (documented in docs/annotations.md).
ANN_GPU_MILLI = "gpusched.io/gpu-milli"          # per-GPU share in milli-GPU, e.g. "470"
ANN_GPU_MODEL = "gpusched.io/gpu-model"          # allowed GPU models, "|"-separated, e.g. "V100M16|V100M32"
ANN_DURATION = "gpusched.io/duration"            # run time on the virtual clock, e.g. "30m"
ANN_ASSIGNED_GPUS = "gpusched.io/assigned-gpus"  # GPU indices held, e.g. "0,1"
ANN_ASSIGNED_DEVICES = "gpusched.io/assigned-devices"  # device IDs held, e.g. "GPU-..::0" or "MIG-..."
RESOURCE_GPU_MILLI = "gpusched.io/gpu-milli"     # extended-resource form of a GPU share
ANN_START_TIME = "gpusched.io/start-time"        # virtual seconds a pod started running, e.g. "120.0"
ANN_GPU_COUNT = "gpusched.io/gpu-count"          # physical GPUs of a node (NodePool nodes), e.g. "8"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # "NoSchedule" | "PreferNoSchedule" | "NoExecute"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""          # "" with operator Exists tolerates everything
    operator: str = "Equal"  # "Equal" | "Exists"
    value: str = ""
    effect: str = ""       # "" matches every effect
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Upstream ``Toleration.ToleratesTaint`` semantics."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("Equal", "") and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    """A NodeSelectorRequirement / LabelSelectorRequirement: key, operator, values."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions are ANDed; terms of a NodeSelector are ORed. An empty term matches nothing."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()   # only metadata.name is supported upstream


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector: matchLabels ANDed with matchExpressions. Empty selects everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # "DoNotSchedule" | "ScheduleAnyway"
    label_selector: LabelSelector | None
    min_domains: int | None = None


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()   # empty = the pod's own namespace


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims`` and the ResourceClaim it names (upstream
    ``resourceclaim.Name``): ``claim`` is ``resourceClaimName``, or for a template the name
    ``status.resourceClaimStatuses`` records ("" while that entry is missing: not created yet;
    None when the entry says no claim was generated, which the scheduler skips). A claim from a
    template must be owned by the pod (``template``: upstream's ``mustCheckOwner``)."""

    name: str
    claim: str | None
    template: bool = False


@dataclass(frozen=True, slots=True)
class PodInfo:
    """Everything the scheduler needs to know about a pod, in canonical units."""

    namespace: str
    name: str
    uid: str
    requests: Mapping[str, int]                 # effective pod requests (containers/init/overhead rule)
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"   # or "Never"
    priority_class: str = ""
    scheduler_name: str = "default-scheduler"
    node_name: str = ""                         # spec.nodeName, set when bound or requested
    nominated_node: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[NodeSelectorTerm, ...] | None = None   # None = no required affinity
    preferred_terms: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()              # required
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()         # required
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    pvc_names: tuple[str, ...] = ()
    gpu_milli: int = 0                          # per-GPU share (1..999) for fractional pods, else 0
    gpu_models: tuple[str, ...] = ()            # allowed catalog model names; empty = any
    creation_seq: int = 0                       # order of creation (tie-break in the queue)
    start_time: float | None = None             # virtual seconds when it started running
    owner_kind: str = ""
    owner_name: str = ""
    terminating: bool = False                   # metadata.deletionTimestamp set (graceful deletion)
    disruption_reason: str = ""                 # reason of a DisruptionTarget=True condition, e.g. "PreemptionByScheduler"
    host_ports: tuple[tuple[str, str, int], ...] = ()   # (hostIP or "0.0.0.0", protocol, hostPort) of containers[].ports
    resource_claims: tuple[PodClaim, ...] = ()   # spec.resourceClaims with their claim names

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def gpu_count(self) -> int:
        """Physical GPUs a whole-GPU or fractional pod asks for (nvidia.com/gpu or 1 share)."""
        return self.requests.get("nvidia.com/gpu", 0) or (1 if self.gpu_milli else 0)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node as the scheduler sees it (devices are tracked separately, see devices.node)."""

    name: str
    allocatable: Mapping[str, int]
    capacity: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    gpu_model: str = ""          # catalog key, "" for CPU-only nodes
    gpu_count: int = 0           # physical GPUs


@dataclass(frozen=True, slots=True)
class DeviceAssignment:
    """Which physical devices a pod holds on its node.

    ``device_ids`` are the device plugin's IDs: ``GPU-<uuid>`` for a whole GPU,
    ``GPU-<uuid>::<k>`` for time-slice/MPS replica k, ``MIG-<uuid>`` for a MIG instance.
    ``gpu_indices`` are the physical GPU indices behind them (what CUDA_VISIBLE_DEVICES shows);
    ``milli`` the share taken on each GPU for fractional pods (1000 for whole GPUs).
    """

    resource: str = ""
    device_ids: tuple[str, ...] = ()
    gpu_indices: tuple[int, ...] = ()
    milli: int = 0

    @property
    def empty(self) -> bool:
        return not self.device_ids and not self.gpu_indices


NO_DEVICES = DeviceAssignment()


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""

