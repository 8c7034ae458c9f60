"""A normal cluster's furniture, present from the start and put back when missing.

What the API server and kube-controller-manager keep in place on every cluster:

- Namespaces ``default``, ``kube-system``, ``kube-public``, ``kube-node-lease`` (the API
  server's system-namespaces controller), each labelled ``kubernetes.io/metadata.name``;
- the system PriorityClasses of ``pkg/apis/scheduling/types.go`` (``SystemPriorityClasses``):
  ``system-cluster-critical`` = 2000000000 and ``system-node-critical`` = 2000001000, with
  upstream's descriptions;
- the ``kubernetes`` Service in ``default`` (ClusterIP ``10.96.0.1``, port ``https`` 443 -> 6443,
  labels ``component=apiserver``, ``provider=kubernetes``; the API server's bootstrap
  controller);
- a ``default`` ServiceAccount in every namespace (the serviceaccounts controller).

Once, when the cluster is first set up (the pass that creates ``kube-system``), a default
StorageClass ``standard`` as kind installs it: provisioner ``rancher.io/local-path``,
``reclaimPolicy: Delete``, ``volumeBindingMode: WaitForFirstConsumer``. It is not put back
after a user deletes it (no add-on manager), so "no default class" can be tried.

Neighbours: first in ``controllers.registry.CONTROLLERS``; the NamespaceLifecycle and Priority
admission plugins (``cluster.admission``) refuse to delete the immortal namespaces and the system
PriorityClasses; ``Cluster`` settles a fresh state file before its first read so ``get ns``
lists them.
"""

from __future__ import annotations

from typing import Any

import logging

from gpusched.cluster.apiserver import write
from gpusched.cluster.admission.default_storage_class import DEFAULT_CLASS_ANNOTATION
from gpusched.cluster.apiserver.strategy import KUBERNETES_SERVICE_IP, NAMESPACE_NAME_LABEL
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
SYSTEM_PRIORITY_CLASSES = (
    ("system-node-critical", 2000001000,
     "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", 2000000000,
     "Used for system critical pods that must run in the cluster, but can be moved to another "
     "node if necessary."),
)
DEFAULT_STORAGE_CLASS = "standard"
DEFAULT_PROVISIONER = "rancher.io/local-path"

def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {NAMESPACE_NAME_LABEL: name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def _create(view: View, body: dict[str, Any]) -> None:
    """Create through the write path; a refusal (a quota on ``count/serviceaccounts`` ...) is
    logged and retried at the next pass, as upstream's controllers requeue the key."""
    try:
        write.create(view, body)
    except GpuschedError as err:
        log.info("bootstrap: %s %s not created: %s", body["kind"], body["metadata"]["name"], err)


def reconcile(view: View) -> None:
    first_setup = view.get("Namespace", "kube-system") is None
    for name in SYSTEM_NAMESPACES:
        if view.get("Namespace", name) is None:
            _create(view, namespace(name))
    for name, value, description in SYSTEM_PRIORITY_CLASSES:
        if view.get("PriorityClass", name) is None:
            _create(view, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value, "globalDefault": False,
                           "description": description, "preemptionPolicy": "PreemptLowerPriority"})
    if view.get("Service", "kubernetes", "default") is None:
        _create(view, _kubernetes_service())
    for ns in view.list("Namespace"):
        name = ns["metadata"]["name"]
        if view.get("ServiceAccount", "default", name) is None and \
                not ns["metadata"].get("deletionTimestamp"):
            _create(view, {"apiVersion": "v1", "kind": "ServiceAccount",
                           "metadata": {"name": "default", "namespace": name}})
    if first_setup and not view.list("StorageClass"):
        _create(view, _default_storage_class())


def _kubernetes_service() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP,
                     "clusterIPs": [KUBERNETES_SERVICE_IP], "ipFamilies": ["IPv4"],
                     "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
                     "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                "targetPort": 6443}]},
            "status": {"loadBalancer": {}}}


def _default_storage_class() -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": DEFAULT_STORAGE_CLASS,
                         "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": DEFAULT_PROVISIONER, "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer"}
