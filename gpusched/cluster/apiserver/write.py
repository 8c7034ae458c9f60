"""The one write path: one function per verb, every writer of the cluster goes through it.

kube-apiserver's order for a write (``staging/src/k8s.io/apiserver/pkg/endpoints/handlers``
``create.go``/``update.go``/``delete.go`` and ``pkg/registry/generic/registry/store.go``):

1. decode (strict: ``apiserver.apply.validated`` for manifests, ``api_ops.check_body`` for
   request bodies; an object a controller builds is already one);
2. mutating admission: ``admission.registry.mutating`` in upstream's plugin order;
3. the kind's strategy (``apiserver.strategy``: a pod's status, a namespace's label, a service's
   IPs, the fields an update keeps) and validation of the mutated object (a Pod's, on create;
   a Pod update's immutable spec, ``apply.check_pod_update``);
4. validating admission: ``admission.registry.validating``, ResourceQuota last;
5. the store (``View.create`` / ``update`` / ``delete``), whose journal is the change feed the
   controllers and the scheduling queue read (``apiserver.changes``, ``apiserver.notes``).

Verbs: :func:`create`, :func:`update` (``subresource="status"`` for status writes, which only the
plugins that handle the subresource see, as upstream; ``"binding"`` for the scheduler's),
:func:`update_status`, :func:`delete`, :func:`apply` (``kubectl apply``: create, or the three-way
merge then update). A rejection raises a :mod:`gpusched.errors` type before the view changes,
so a refused write changes nothing, even inside a transaction shared with other writes.

Cost: each hook list is computed once per (kind, operation, subresource); a pod's quantities
are parsed once per write (``admission.attributes``); nothing here copies the object unless the
caller keeps it (``owned=False``) or lists the whole store.

Neighbours: ``apiserver.apply`` (decode, merge), ``apiserver.api_ops`` (the REST verbs),
``cluster.admission``, ``apiserver.strategy``, ``apiserver.view``.
"""

from __future__ import annotations

import json
from typing import Any

from gpusched.cluster.admission import registry
from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, DELETE, UPDATE
from gpusched.cluster.apiserver import strategy
from gpusched.cluster.apiserver.apply import LAST_APPLIED, check_pod_update, merge, validated
from gpusched.cluster.apiserver.store import Store, dumps
from gpusched.cluster.apiserver.view import View, copy_tree, object_namespace
from gpusched.errors import FieldError, InvalidError, ManifestError
from gpusched.objects.kinds import KINDS
from gpusched.objects.manifest import Manifest
from gpusched.objects.strict import STRICT
from gpusched.objects.validation import validate_object
from gpusched.objects.validation_meta import immutable_uid_error, uid_changed

DEFAULT_NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"},
                     "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def _ensure_default_namespace(view: View, kind: str, body: dict[str, Any]) -> None:
    """``default`` exists implicitly: created on first use (the system-namespaces controller)."""
    info = KINDS.get(kind)
    if info is None or not info.namespaced or object_namespace(kind, body) != "default":
        return
    if view.get("Namespace", "default") is None:
        create(view, DEFAULT_NAMESPACE)


def create(view: View, body: dict[str, Any], *, owned: bool = False) -> dict[str, Any]:
    """Admit, validate and store a new object; returns the stored body (the view's own).
    ``owned``: the caller hands ``body`` over (its own copy), changed in place, not copied."""
    if not owned:
        body = copy_tree(body)
    kind = str(body.get("kind", ""))
    strategy.before_create(body)
    _ensure_default_namespace(view, kind, body)
    attrs = Attributes(view, CREATE, body)
    for hook in registry.mutating(kind, CREATE):
        hook(attrs)
    strategy.prepare(view, body, None)
    if kind == "Pod":
        validate_object(body, owned=True)        # the mutated pod, as upstream validates it
    for hook in registry.validating(kind, CREATE):
        hook(attrs)
    if kind == "Pod":
        strategy.pod_status(view, body, attrs.pod.qos)
    return view.create(body, owned=True)


def update(view: View, body: dict[str, Any], *, subresource: str = "") -> bool:
    """Admit, validate and store a changed object (``body`` becomes the view's: pass a copy);
    returns False when it equals the stored one. A body with no stored object is created."""
    kind = str(body.get("kind", ""))
    meta = body.get("metadata") or {}
    old = view.get(kind, str(meta.get("name", "")), object_namespace(kind, body))
    if old is None:
        create(view, body, owned=True)
        return True
    attrs = Attributes(view, UPDATE, body, old, subresource)
    for hook in registry.mutating(kind, UPDATE, subresource):
        hook(attrs)
    if not subresource:
        strategy.prepare(view, body, old)
        if kind == "Pod":
            check_pod_update(old, body)
    elif subresource == "status":
        strategy.status_update(body, old)
    for hook in registry.validating(kind, UPDATE, subresource):
        hook(attrs)
    return view.update(body)


def update_status(view: View, body: dict[str, Any]) -> bool:
    """A write of the ``status`` subresource (controllers, the kubelet): see :func:`update`."""
    return update(view, body, subresource="status")


def admit_delete(view: View, body: dict[str, Any]) -> None:
    """Run the DELETE admission of ``body`` (undeletable namespaces and priority classes)."""
    kind = str(body.get("kind", ""))
    attrs = Attributes(view, DELETE, body)
    for hook in registry.mutating(kind, DELETE):
        hook(attrs)
    for hook in registry.validating(kind, DELETE):
        hook(attrs)


def delete(view: View, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
    """Admit the delete and remove the object; returns its last body, None when absent."""
    body = view.get(kind, name, namespace)
    if body is None:
        return None
    admit_delete(view, body)
    return view.delete(kind, name, namespace)


def apply(view: View, manifest: Manifest,
          field_validation: str = STRICT) -> tuple[str, str, str, str, list[str]]:
    """``kubectl apply`` of one manifest: (kind, name, namespace, action, warnings); see
    ``apiserver.apply`` for the decoding and the three-way merge."""
    body, warnings = validated(manifest, field_validation)
    kind = body.get("kind", "")
    if kind not in KINDS:
        raise ManifestError(manifest.source, manifest.index, "kind", f'unknown kind "{kind}"')
    if kind == "Event":
        raise ManifestError(manifest.source, manifest.index, "kind",
                            "Events are recorded by the cluster, not applied")
    meta = body.setdefault("metadata", {})
    ns = object_namespace(kind, body)
    if KINDS[kind].namespaced:
        meta["namespace"] = ns
    name = meta.get("name")
    if not isinstance(name, str) or not name:    # defence in depth: validation should catch it
        raise InvalidError(kind, "", [FieldError("metadata.name", "Required value", None,
                                                 "name or generateName is required")],
                           where=manifest.where)
    applied = dumps(manifest.obj)
    old = view.get(kind, name, ns)
    if old is None:
        meta.setdefault("annotations", {})[LAST_APPLIED] = applied
        try:
            create(view, body, owned=True)
        except InvalidError as err:        # the mutated pod's validation: name the document
            raise InvalidError(err.kind, err.name, err.errors, where=manifest.where) from None
        return kind, name, ns, "created", warnings
    uid = uid_changed(body, old)      # kubectl's patch carries it; the uid is immutable (422)
    if uid is not None:
        raise InvalidError(kind, name, [immutable_uid_error(uid)], where=manifest.where)
    old_annotations = (old.get("metadata") or {}).get("annotations") or {}
    if old_annotations.get(LAST_APPLIED) == applied:
        return kind, name, ns, "unchanged", warnings
    merged = merge(old, body, json.loads(old_annotations.get(LAST_APPLIED) or "{}"))
    merged["metadata"].setdefault("annotations", {})[LAST_APPLIED] = applied
    strategy.user_update(merged, old)
    changed = update(view, merged)
    return kind, name, ns, ("configured" if changed else "unchanged"), warnings


def reset(view: View, store: Store, clock: float) -> None:
    """``gpusched reset``: empty the store and the view (inside the caller's transaction); the
    clock restarts at ``clock``."""
    store.clear()
    view.clear()
    view.clock = clock


def compact(store: Store, floor: int) -> None:
    """Compact the change log up to ``floor`` in a transaction of its own (``serve``'s watch
    feed trims what no watcher can resume from, as etcd compacts)."""
    with store.immediate():
        store.compact_changes(floor)


def record_meta(store: Store, meta: dict[str, str]) -> None:
    """Store counters of the caller's own (the wall-clock following's last time) in the meta
    table, inside the caller's write transaction."""
    store.write_meta(meta)
