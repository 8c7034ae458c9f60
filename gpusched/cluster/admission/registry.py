"""The admission chain: gpusched's plugins in kube-apiserver's order.

kube-apiserver runs its enabled plugins in the order of ``AllOrderedPlugins``
(kubernetes ``pkg/kubeapiserver/options/plugins.go``, v1.35): every mutating hook in that
order, then validation of the mutated object, then every validating hook in that order. The
plugins enabled by default are those ``DefaultOffAdmissionPlugins`` leaves on.
:data:`UPSTREAM_ORDER` is that list, down to the ones gpusched has no use for (certificates,
ingress classes, webhooks); :data:`ORDERED` holds the plugins gpusched runs, each at its place,
and gpusched's own plugins where upstream says new ones go ("new admission plugins should
generally be inserted above here": before the webhooks and ResourceQuota, which must stay last
since it charges only what every other plugin let through).

Not modelled, although on by default upstream: ServiceAccount (gpusched mounts no tokens),
TaintNodesByCondition (the node lifecycle controller taints nodes, ``controllers.node_lifecycle``),
StorageObjectInUseProtection and PersistentVolumeClaimResize (no finalizers on claims), the
certificate plugins. Of the webhooks, gpusched runs Kueue's validating ones (``kueue_*``, named as
Kueue's ValidatingWebhookConfiguration names them) where ValidatingAdmissionWebhook runs.

Adding a plugin: a module with ``PLUGIN = Plugin(...)``, one line here.

Neighbours: every plugin module; ``apiserver.write`` runs :func:`mutating` and :func:`validating`.
"""

from __future__ import annotations

import functools

from gpusched.cluster.admission import (config_bounds, default_storage_class,
                                        default_toleration_seconds, device_holdings,
                                        jobset_defaults, kueue_clusterqueue, kueue_cohort,
                                        kueue_job, kueue_jobset, kueue_resourceflavor, kueue_vjob,
                                        kueue_workload, limit_ranger,
                                        load_curve, namespace_lifecycle, priority, resource_quota,
                                        runtime_class)
from gpusched.cluster.admission.plugin import Hook, Plugin

# AllOrderedPlugins (pkg/kubeapiserver/options/plugins.go), the deprecated AlwaysAdmit/AlwaysDeny
# left out; "*" marks the ones on by default (DefaultOffAdmissionPlugins leaves them on).
UPSTREAM_ORDER = (
    "NamespaceAutoProvision", "NamespaceLifecycle*", "NamespaceExists",
    "LimitPodHardAntiAffinityTopology", "LimitRanger*", "ServiceAccount*", "NodeRestriction",
    "TaintNodesByCondition*", "AlwaysPullImages", "ImagePolicyWebhook", "PodSecurity*",
    "PodNodeSelector", "Priority*", "DefaultTolerationSeconds*", "PodTolerationRestriction",
    "EventRateLimit", "ExtendedResourceToleration", "DefaultStorageClass*",
    "StorageObjectInUseProtection*", "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize*", "RuntimeClass*", "CertificateApproval*", "CertificateSigning*",
    "ClusterTrustBundleAttest*", "CertificateSubjectRestriction*", "DefaultIngressClass*",
    "DenyServiceExternalIPs", "PodTopologyLabels*",
    # new admission plugins should generally be inserted above here
    "MutatingAdmissionPolicy*", "MutatingAdmissionWebhook*", "ValidatingAdmissionPolicy*",
    "ValidatingAdmissionWebhook*", "ResourceQuota*",
)

ORDERED: tuple[Plugin, ...] = (
    namespace_lifecycle.PLUGIN,          # NamespaceLifecycle
    limit_ranger.PLUGIN,                 # LimitRanger
    priority.PLUGIN,                     # Priority
    default_toleration_seconds.PLUGIN,   # DefaultTolerationSeconds
    default_storage_class.PLUGIN,        # DefaultStorageClass
    runtime_class.PLUGIN,                # RuntimeClass
    device_holdings.PLUGIN,              # gpusched: device holdings are the cluster's
    config_bounds.PLUGIN,                # gpusched: bounds of the ConfigMaps it reads
    load_curve.PLUGIN,                   # gpusched: a Deployment's load curve parses
    # MutatingAdmissionWebhook: JobSet's defaults; Kueue's Job and JobSet webhooks (suspend)
    jobset_defaults.PLUGIN,              # mjobset.kb.io (JobSet's)
    kueue_job.PLUGIN,                    # mjob.kb.io
    kueue_jobset.PLUGIN,                 # mjobset.kb.io (Kueue's)
    # ValidatingAdmissionWebhook: Kueue's webhooks (config/components/webhook/manifests.yaml)
    kueue_clusterqueue.PLUGIN,           # vclusterqueue.kb.io
    kueue_cohort.PLUGIN,                 # vcohort.kb.io
    kueue_resourceflavor.PLUGIN,         # vresourceflavor.kb.io
    kueue_vjob.PLUGIN,                   # vjob.kb.io
    kueue_workload.PLUGIN,               # vworkload.kb.io
    resource_quota.PLUGIN,               # ResourceQuota: last
)


@functools.lru_cache(maxsize=1024)
def mutating(kind: str, operation: str, subresource: str = "") -> tuple[Hook, ...]:
    """The mutating hooks for this kind, operation and subresource, in order (computed once)."""
    return tuple(p.mutate for p in ORDERED
                 if p.mutate is not None and p.handles(kind, operation, subresource))


@functools.lru_cache(maxsize=1024)
def validating(kind: str, operation: str, subresource: str = "") -> tuple[Hook, ...]:
    """The validating hooks for this kind, operation and subresource, in order (computed once)."""
    return tuple(p.validate for p in ORDERED
                 if p.validate is not None and p.handles(kind, operation, subresource))
