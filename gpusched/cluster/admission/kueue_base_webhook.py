"""Kueue's base webhook for its job integrations, mutating half (``pkg/controller/jobframework/
base_webhook.go`` ``Default``, ``defaults.go`` ``ApplyDefaultLocalQueue`` and
``ApplyDefaultForSuspend``; not a plugin: the shape ``kueue_job`` and ``kueue_jobset`` share):
an object created without a ``kueue.x-k8s.io/queue-name`` label in a namespace that has a
LocalQueue named ``default`` gets the label, and a queued object is created suspended, so
nothing runs before Kueue admits its Workload. An object whose controller owner is of a kind
Kueue manages is left alone (``IsOwnerManagedByKueue``: its owner is the queued object).

Neighbours: ``kueue_job``, ``kueue_jobset`` (the plugins), ``gpusched.kueue.jobframework`` (the
label).
"""

from __future__ import annotations

from collections.abc import Set

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import Hook
from gpusched.kueue.jobframework import QUEUE_LABEL


def default_for_suspend(managed_owner_kinds: Set[str] = frozenset()) -> Hook:
    """The mutating hook ``Default`` of an integration whose objects may be owned by one of
    ``managed_owner_kinds``."""
    def admit(attrs: Attributes) -> None:
        meta = attrs.obj.setdefault("metadata", {})
        if any(ref.get("kind") in managed_owner_kinds and ref.get("controller")
               for ref in meta.get("ownerReferences") or ()):
            return
        labels = meta.get("labels") or {}
        if not labels.get(QUEUE_LABEL):
            namespace = str(meta.get("namespace") or "default")
            if attrs.view.get("LocalQueue", "default", namespace) is None:
                return
            meta["labels"] = {**labels, QUEUE_LABEL: "default"}
        attrs.obj.setdefault("spec", {})["suspend"] = True
    return admit
