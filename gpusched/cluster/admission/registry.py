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

Adding a plugin: a module with ``PLUGIN = Plugin(...)``, one line here naming the module and
the kinds it handles (``tests/cluster/admission/test_registry.py`` holds them equal to the
plugin's own). A plugin's module is imported at the first request for one of its kinds: a
one-pod ``apply`` loads none of Kueue's or JobSet's webhooks, nor the Deployment load curve's
parser or the device-plugin ConfigMap checks.

Neighbours: every plugin module; ``apiserver.write`` runs :func:`mutating` and :func:`validating`.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class Entry:
    """One plugin of the chain: its ``module`` in this package (which defines ``PLUGIN``) and the
    kinds it handles (None: every kind), known without importing it."""

    module: str
    kinds: frozenset[str] | None

    def plugin(self) -> Plugin:
        plugin: Plugin = importlib.import_module(f"gpusched.cluster.admission.{self.module}").PLUGIN
        return plugin


def _entry(module: str, *kinds: str) -> Entry:
    return Entry(module, frozenset(kinds) if kinds else None)


ORDERED: tuple[Entry, ...] = (
    _entry("namespace_lifecycle"),                                # NamespaceLifecycle
    _entry("limit_ranger", "Pod", "LimitRange"),                  # LimitRanger
    _entry("priority", "Pod", "PriorityClass"),                   # Priority
    _entry("default_toleration_seconds", "Pod"),                  # DefaultTolerationSeconds
    _entry("default_storage_class", "PersistentVolumeClaim"),     # DefaultStorageClass
    _entry("runtime_class", "Pod"),                               # RuntimeClass
    _entry("device_holdings", "Pod"),        # gpusched: device holdings are the cluster's
    _entry("config_bounds", "ConfigMap"),    # gpusched: bounds of the ConfigMaps it reads
    _entry("load_curve", "Deployment"),      # gpusched: a Deployment's load curve parses
    # MutatingAdmissionWebhook: JobSet's defaults; Kueue's Job and JobSet webhooks (suspend)
    _entry("jobset_defaults", "JobSet"),                          # mjobset.kb.io (JobSet's)
    _entry("kueue_job", "Job"),                                   # mjob.kb.io
    _entry("kueue_jobset", "JobSet"),                             # mjobset.kb.io (Kueue's)
    # ValidatingAdmissionWebhook: Kueue's webhooks (config/components/webhook/manifests.yaml)
    _entry("kueue_clusterqueue", "ClusterQueue"),                 # vclusterqueue.kb.io
    _entry("kueue_cohort", "Cohort"),                             # vcohort.kb.io
    _entry("kueue_resourceflavor", "ResourceFlavor"),             # vresourceflavor.kb.io
    _entry("kueue_vjob", "Job"),                                  # vjob.kb.io
    _entry("kueue_workload", "Workload"),                         # vworkload.kb.io
    _entry("resource_quota"),                                     # ResourceQuota: last
)


def plugins() -> tuple[Plugin, ...]:
    """Every plugin of the chain, in order (imports them all)."""
    return tuple(entry.plugin() for entry in ORDERED)


def _for_kind(kind: str) -> list[Plugin]:
    """The plugins that may handle ``kind``, in order: only theirs are imported."""
    return [entry.plugin() for entry in ORDERED if entry.kinds is None or kind in entry.kinds]


@functools.lru_cache(maxsize=1024)
def mutating(kind: str, operation: str, subresource: str = "") -> tuple[Hook, ...]:
    """The mutating hooks for this kind, operation and subresource, in order (computed once)."""
    return tuple(p.mutate for p in _for_kind(kind)
                 if p.mutate is not None and p.handles(kind, operation, subresource))


@functools.lru_cache(maxsize=1024)
def validating(kind: str, operation: str, subresource: str = "") -> tuple[Hook, ...]:
    """The validating hooks for this kind, operation and subresource, in order (computed once)."""
    return tuple(p.validate for p in _for_kind(kind)
                 if p.validate is not None and p.handles(kind, operation, subresource))
