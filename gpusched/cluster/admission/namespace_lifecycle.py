"""NamespaceLifecycle (``k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle``).

- A namespaced object is created only in a Namespace that exists: ``namespaces "x" not found``
  (404). The ``default`` namespace is created on first use by the write path
  (``apiserver.write``), as the system-namespaces controller keeps it upstream. Upstream also
  refuses an update in a missing namespace; gpusched deletes a Namespace at once (no
  ``Terminating`` phase while the namespace controller empties it), so the graceful deletion of
  its pods goes on after it and their updates pass.
- The namespaces ``default``, ``kube-system`` and ``kube-public`` cannot be deleted:
  ``this namespace may not be deleted`` (``immortalNamespaces``, 403).

Neighbours: ``admission.registry`` (first of the chain); ``apiserver.write``.
"""

from __future__ import annotations

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, DELETE, Plugin
from gpusched.errors import ForbiddenError, NotFoundError
from gpusched.objects.kinds import KINDS

NAME = "NamespaceLifecycle"
IMMORTAL_NAMESPACES = ("default", "kube-public", "kube-system")


def _namespace_exists(attrs: Attributes) -> None:
    if attrs.operation == DELETE:
        if attrs.kind == "Namespace" and attrs.name in IMMORTAL_NAMESPACES:
            raise ForbiddenError("namespaces", attrs.name, "this namespace may not be deleted")
        return
    info = KINDS.get(attrs.kind)
    if info is None or not info.namespaced:
        return
    namespace = attrs.namespace
    if attrs.view.get("Namespace", namespace) is None:
        raise NotFoundError("namespaces", namespace)


PLUGIN = Plugin(NAME, frozenset({CREATE, DELETE}), mutate=_namespace_exists)
