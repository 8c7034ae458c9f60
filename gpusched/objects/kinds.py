"""The kinds gpusched stores, with the names kubectl knows them by.

gpusched emulates Kubernetes ``KUBERNETES_VERSION`` (v1.35): ``/version``, the nodes'
``kubeletVersion`` and the field schemas (``objects.schema``) all say so.

One table, ``KINDS``: kind -> KindInfo (apiVersion, plural, short names, namespaced).
``resolve_kind("po")``, ``resolve_kind("pods")``, ``resolve_kind("Pod")`` all give Pod's entry.

Neighbours: used by manifest loading, the store, the CLI and the API server.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusched.errors import UsageError


KUBERNETES_VERSION = "v1.35.0"
KUEUE = "kueue.x-k8s.io/v1beta2"          # Kueue's storage version; v1beta1 is converted


@dataclass(frozen=True, slots=True)
class KindInfo:
    kind: str
    api_version: str          # preferred group/version, e.g. "apps/v1"
    plural: str               # "deployments"
    short_names: tuple[str, ...]
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""

    @property
    def singular(self) -> str:
        return self.kind.lower()


KINDS: dict[str, KindInfo] = {info.kind: info for info in (
    KindInfo("Namespace", "v1", "namespaces", ("ns",), False),
    KindInfo("Node", "v1", "nodes", ("no",), False),
    KindInfo("Pod", "v1", "pods", ("po",), True),
    KindInfo("ConfigMap", "v1", "configmaps", ("cm",), True),
    KindInfo("Event", "v1", "events", ("ev",), True),
    KindInfo("ResourceQuota", "v1", "resourcequotas", ("quota",), True),
    KindInfo("LimitRange", "v1", "limitranges", ("limits",), True),
    KindInfo("PersistentVolumeClaim", "v1", "persistentvolumeclaims", ("pvc",), True),
    KindInfo("Deployment", "apps/v1", "deployments", ("deploy",), True),
    KindInfo("ReplicaSet", "apps/v1", "replicasets", ("rs",), True),
    KindInfo("DaemonSet", "apps/v1", "daemonsets", ("ds",), True),
    KindInfo("ControllerRevision", "apps/v1", "controllerrevisions", (), True),
    KindInfo("Job", "batch/v1", "jobs", (), True),
    KindInfo("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", ("pc",), False),
    KindInfo("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", ("pdb",), True),
    KindInfo("NodePool", "gpusched.io/v1alpha1", "nodepools", ("np",), False),
    KindInfo("Lease", "coordination.k8s.io/v1", "leases", (), True),
    KindInfo("Service", "v1", "services", ("svc",), True),
    KindInfo("Endpoints", "v1", "endpoints", ("ep",), True),
    KindInfo("EndpointSlice", "discovery.k8s.io/v1", "endpointslices", (), True),
    KindInfo("ServiceAccount", "v1", "serviceaccounts", ("sa",), True),
    KindInfo("Secret", "v1", "secrets", (), True),
    KindInfo("PersistentVolume", "v1", "persistentvolumes", ("pv",), False),
    KindInfo("StorageClass", "storage.k8s.io/v1", "storageclasses", ("sc",), False),
    KindInfo("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", ("netpol",), True),
    KindInfo("HorizontalPodAutoscaler", "autoscaling/v2", "horizontalpodautoscalers", ("hpa",), True),
    KindInfo("VerticalPodAutoscaler", "autoscaling.k8s.io/v1", "verticalpodautoscalers", ("vpa",),
             True),
    KindInfo("RuntimeClass", "node.k8s.io/v1", "runtimeclasses", (), False),
    KindInfo("ClusterPolicy", "nvidia.com/v1", "clusterpolicies", (), False),
    # Kueue (kubernetes-sigs/kueue config/components/crd/bases: names, shortNames, scope)
    KindInfo("ResourceFlavor", KUEUE, "resourceflavors", ("flavor", "flavors", "rf"), False),
    KindInfo("ClusterQueue", KUEUE, "clusterqueues", ("cq",), False),
    KindInfo("Cohort", KUEUE, "cohorts", ("co",), False),
    KindInfo("LocalQueue", KUEUE, "localqueues", ("queue", "queues", "lq"), True),
    KindInfo("Workload", KUEUE, "workloads", ("kwl", "kueueworkload", "kueueworkloads"), True),
    KindInfo("WorkloadPriorityClass", KUEUE, "workloadpriorityclasses", ("wpc",), False),
    KindInfo("Topology", KUEUE, "topologies", ("topo",), False),
    # scheduler-plugins' Coscheduling PodGroup; JobSet (kubernetes-sigs/jobset)
    KindInfo("PodGroup", "scheduling.x-k8s.io/v1alpha1", "podgroups", ("pg", "pgs"), True),
    KindInfo("JobSet", "jobset.x-k8s.io/v1alpha2", "jobsets", (), True),
    # Stored for the stock components (kube-scheduler's informers, controller-runtime, kubectl
    # discovery); nothing in gpusched acts on them yet.
    KindInfo("ReplicationController", "v1", "replicationcontrollers", ("rc",), True),
    KindInfo("StatefulSet", "apps/v1", "statefulsets", ("sts",), True),
    KindInfo("CSINode", "storage.k8s.io/v1", "csinodes", (), False),
    KindInfo("CSIDriver", "storage.k8s.io/v1", "csidrivers", (), False),
    KindInfo("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", (), True),
    KindInfo("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", (), False),
    KindInfo("DeviceClass", "resource.k8s.io/v1", "deviceclasses", (), False),
    KindInfo("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", (), True),
    KindInfo("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates", (), True),
    KindInfo("ResourceSlice", "resource.k8s.io/v1", "resourceslices", (), False),
    KindInfo("CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions",
             ("crd", "crds"), False),
)}
KUEUE_KINDS = frozenset(kind for kind, info in KINDS.items() if info.api_version == KUEUE)
# CRD kinds gpusched stores without a controller of its own: defaulted and validated from their
# schemas (objects.crd_validation).
CRD_KINDS = KUEUE_KINDS | {"PodGroup", "JobSet"}

# Kinds served in a second group version besides their own, one storage for both (kube-apiserver
# serves core/v1 Events as events.k8s.io/v1 too, converted: ``objects.event_versions``).
ALSO_SERVED: tuple[KindInfo, ...] = (
    KindInfo("Event", "events.k8s.io/v1", "events", ("ev",), True),
)

# apiVersions accepted on input per kind (older group versions still seen in tutorials).
ACCEPTED_API_VERSIONS: dict[str, frozenset[str]] = {
    kind: frozenset({info.api_version}) for kind, info in KINDS.items()
}
ACCEPTED_API_VERSIONS["Event"] = frozenset({"v1", "events.k8s.io/v1"})
ACCEPTED_API_VERSIONS["PodDisruptionBudget"] = frozenset({"policy/v1", "policy/v1beta1"})
ACCEPTED_API_VERSIONS["HorizontalPodAutoscaler"] = frozenset({"autoscaling/v2", "autoscaling/v1"})
ACCEPTED_API_VERSIONS["PriorityClass"] = frozenset({"scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1"})
for _kind in KUEUE_KINDS:        # converted to v1beta2 before decoding (objects.kueue_conversion)
    ACCEPTED_API_VERSIONS[_kind] = frozenset({KUEUE, "kueue.x-k8s.io/v1beta1"})

_ALIASES: dict[str, KindInfo] = {}
for _info in KINDS.values():
    for _alias in (_info.kind, _info.kind.lower(), _info.plural, *_info.short_names):
        _ALIASES[_alias.lower()] = _info
    if _info.group:
        _ALIASES[f"{_info.plural}.{_info.group}".lower()] = _info


def resolve_kind(name: str) -> KindInfo:
    """Look a kind up by kind, plural, singular or short name, case-insensitively.

    >>> resolve_kind("po").kind, resolve_kind("Deployments").kind, resolve_kind("pc").plural
    ('Pod', 'Deployment', 'priorityclasses')
    """
    info = _ALIASES.get(name.lower())
    if info is None:
        raise UsageError(f'the server doesn\'t have a resource type "{name}"')
    return info
