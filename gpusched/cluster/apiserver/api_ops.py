"""The API server's writes, as functions on a :class:`~gpusched.cluster.apiserver.view.View`.

Each function runs inside ``Cluster.write`` (one transaction, settled afterwards), decodes the
request and hands the object to the one write path (``apiserver.write``: admission, validation,
store), as ``gpusched apply`` does. Every check happens before the view is changed, so a rejected request changes
nothing even when several requests share one transaction (the server's group commit).

- :func:`create` (POST): ``generateName``, ``AlreadyExists``, validation, admission.
- :func:`replace` (PUT, and every PATCH once the patch is applied): ``resourceVersion`` ->
  409 Conflict when stale; the main resource keeps the stored ``status`` (a Node's comes from
  its manifest, as with ``apply``), the ``status`` subresource changes only ``status`` (and a
  Node's metadata, as ``nodeStatusStrategy``; a Deployment's or ReplicaSet's status counts are
  checked as ``ValidateDeploymentStatus``); a Pod's spec is immutable (``apply.check_pod_update``);
  ``metadata.uid`` cannot change (409 for a PUT's precondition, 422 for a patch).
- :func:`bind` (``pods/binding``): sets ``spec.nodeName`` and copies the Binding's annotations
  onto the pod, as kube-apiserver does (a secondary scheduler passes its device assignment so).
- :func:`delete_grace`: DeleteOptions.gracePeriodSeconds of a DELETE (graceful pod deletion,
  ``controllers.common.delete_pod``).
- :func:`evict` (``pods/eviction``): ``controllers.nodes.node_lifecycle.evict`` (429 under a PDB).
- Events (POST, PUT, PATCH of either group version): ``apiserver.event_ops``.
- :data:`UNSETTLED_KINDS` (Lease): writes of these kinds skip the settle (the caller passes
  ``settle=needs_settle(info)``).

Neighbours: called by ``server`` through ``Cluster.write``; uses ``apiserver.write``,
``cluster.controllers``.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver import event_ops, strategy, write
from gpusched.objects.podspec import admission_pending
from gpusched.cluster.controllers.common import is_terminal
from gpusched.cluster.controllers.nodes.node_lifecycle import evict as evict_pod
from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.errors import (AlreadyExistsError, ConflictError, GpuschedError, InvalidError,
                             NotFoundError)
from gpusched.objects import limits
from gpusched.objects.kinds import KindInfo
from gpusched.objects.validation import validate_object
from gpusched.objects.validation_apps import validate_workload_status
from gpusched.objects.validation_meta import immutable_uid_error, uid_changed

# Kinds that neither controllers nor the scheduler read: writing one needs no settle (leader
# election renews its Lease every few seconds; each renewal stays a plain store write).
UNSETTLED_KINDS = frozenset({"Lease"})

SERVER_METADATA = ("uid", "creationTimestamp", "generation", "resourceVersion", "managedFields",
                   "deletionTimestamp", "selfLink")


class BadRequestError(GpuschedError):
    """400 BadRequest: a body that does not fit the request (wrong kind, namespace, JSON)."""


def needs_settle(info: KindInfo) -> bool:
    """False for kinds no controller or the scheduler reads (their writes skip the settle)."""
    return info.kind not in UNSETTLED_KINDS


def _plural(info: KindInfo) -> str:
    return f"{info.plural}.{info.group}" if info.group else info.plural


def conflict(info: KindInfo, name: str) -> ConflictError:
    return ConflictError(f'Operation cannot be fulfilled on {_plural(info)} "{name}": the object '
                         "has been modified; please apply your changes to the latest version "
                         "and try again")


def check_body(info: KindInfo, namespace: str, body: object) -> dict[str, Any]:
    """Fill apiVersion/kind from the URL when absent; refuse a body for another kind/namespace."""
    if not isinstance(body, dict):
        raise BadRequestError(f"the body of the request must be a {info.kind} object")
    body = copy_tree(body)
    body.setdefault("apiVersion", info.api_version)
    body.setdefault("kind", info.kind)
    if body["kind"] != info.kind:
        raise BadRequestError(f"the kind in the data ({body['kind']}) does not match the "
                              f"expected kind ({info.kind})")
    meta = body.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise BadRequestError("metadata must be an object")
    if info.namespaced:
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise BadRequestError("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    for field in ("managedFields", "selfLink"):
        meta.pop(field, None)
    return body


def create(view: View, info: KindInfo, namespace: str, body: object) -> dict[str, Any]:
    """POST: a new object (``generateName`` honoured); returns the stored body."""
    body = check_body(info, namespace, body)
    meta = body["metadata"]
    if not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
        meta["name"] = meta["generateName"] + view.random_suffix()
    for field in SERVER_METADATA:
        meta.pop(field, None)
    if info.kind == "Event":
        return event_ops.create(view, info, namespace, body)
    # ``body`` is this call's own copy (check_body): validation, admission and the view take it
    # over instead of copying it again
    if info.kind == "Pod":           # request/limit rules after mutating admission (admit)
        with admission_pending():
            valid = validate_object(body, owned=True)
    else:
        valid = validate_object(body, owned=True)
    name = valid["metadata"]["name"]
    if view.get(info.kind, name, namespace) is not None:
        raise AlreadyExistsError(_plural(info), name)
    return copy_tree(write.create(view, valid, owned=True))


def get_existing(view: View, info: KindInfo, namespace: str, name: str) -> dict[str, Any]:
    body = view.get(info.kind, name, namespace)
    if body is None:
        raise NotFoundError(_plural(info), name)
    return body


def replace(view: View, info: KindInfo, namespace: str, name: str, body: object,
            subresource: str = "", uid_precondition: bool = False) -> dict[str, Any]:
    """PUT (and PATCH after patching): see the module docstring; returns the stored body.
    ``uid_precondition``: the body was sent whole (PUT), so its uid is a precondition (409);
    in a patched body a changed uid is an immutable field (422)."""
    if info.kind == "Event":
        body = check_body(info, namespace, body)
        check_name(body["metadata"].get("name", name), name)
        return event_ops.replace(view, info, namespace, name, body)
    old = get_existing(view, info, namespace, name)
    body = check_body(info, namespace, body)
    meta = body["metadata"]
    check_name(meta.get("name", name), name)
    meta["name"] = name
    check_uid(info, old, body, uid_precondition)
    sent_rv = meta.get("resourceVersion")
    if sent_rv not in (None, "") and str(sent_rv) != old["metadata"].get("resourceVersion"):
        raise conflict(info, name)
    if subresource == "status":
        new = _status_update(info, old, body)
    else:
        new = body
        if info.kind != "Node" or "status" not in body:
            if "status" in old:
                new["status"] = copy_tree(old["status"])
            else:
                new.pop("status", None)
    new = validate_object(new)
    if subresource != "status":
        strategy.user_update(new, old)
    write.update(view, new, subresource="status" if subresource == "status" else "")
    return copy_tree(view.get(info.kind, name, namespace) or new)


_STATUS_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def _status_update(info: KindInfo, old: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The object a ``status`` write leaves: the stored one with the body's status (and, for a
    Node, the body's labels, annotations, finalizers and owners: nodeStatusStrategy resets only
    the spec); a Deployment's or ReplicaSet's counts checked as ``ValidateDeploymentStatus``."""
    new = copy_tree(old)
    new["status"] = body.get("status") or {}
    if info.kind == "Node":
        kept = {k: v for k, v in old["metadata"].items() if k not in _STATUS_METADATA}
        new["metadata"] = {**kept, **{k: v for k, v in body["metadata"].items() if k in _STATUS_METADATA}}
    status_errors = validate_workload_status(info.kind, new["status"])
    if status_errors:
        raise InvalidError(info.kind, old["metadata"]["name"], status_errors)
    return new


def check_name(sent: object, name: str) -> None:
    """apiserver ``checkName``: the body's name is the URL's (400 BadRequest)."""
    if sent != name:
        raise BadRequestError(f"the name of the object ({sent}) does not match the name on the URL ({name})")


def check_uid(info: KindInfo, old: dict[str, Any], body: dict[str, Any], precondition: bool) -> None:
    """A uid other than the stored one: with a PUT the body's uid is a storage precondition
    (``rest.DefaultUpdatedObjectInfo.Preconditions``; etcd3 ``Preconditions.Check`` refused, 409
    through ``storeerr.InterpretUpdateError``), with a PATCH an immutable field
    (``ValidateObjectMetaAccessorUpdate``, 422)."""
    uid = uid_changed(body, old)
    if uid is None:
        return
    meta = old["metadata"]
    if not precondition:
        raise InvalidError(info.kind, meta["name"], [immutable_uid_error(uid)])
    raise ConflictError(f'Operation cannot be fulfilled on {_plural(info)} "{meta["name"]}": '
                        f"{precondition_failed(info, meta, uid)}")


def precondition_failed(info: KindInfo, meta: dict[str, Any], uid: str) -> str:
    """apiserver storage's ``NewInvalidObjError`` text for a uid precondition that failed."""
    key = "/".join(p for p in ("/registry", _STORAGE_PREFIX.get(info.plural, info.plural),
                               meta.get("namespace") if info.namespaced else "", meta["name"]) if p)
    return (f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: "
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid', '')}")


_STORAGE_PREFIX = {"services": "services/specs"}      # pkg/registry/core/service/storage


def bind(view: View, namespace: str, name: str, binding: object) -> None:
    """POST pods/<name>/binding: assign the pod to ``target.name``."""
    if not isinstance(binding, dict) or not isinstance(binding.get("target"), dict):
        raise BadRequestError("a Binding needs target.name")
    node = str(binding["target"].get("name") or "")
    pod = _bindable_pod(view, namespace, name)
    if view.get("Node", node) is None:
        raise NotFoundError("nodes", node)
    write.update(view, _assigned(view, pod, node, (binding.get("metadata") or {}).get("annotations") or {}),
                 subresource="binding")


def _bindable_pod(view: View, namespace: str, name: str) -> dict[str, Any]:
    """The pod, when it exists, is not assigned yet and has not terminated (409 otherwise)."""
    pod = view.get("Pod", name, namespace)
    if pod is None:
        raise NotFoundError("pods", name)
    current = (pod.get("spec") or {}).get("nodeName")
    if current:
        raise ConflictError(f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} '
                            f'is already assigned to node "{current}"')
    if is_terminal(pod):
        raise ConflictError(f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} '
                            "is already terminated")
    return pod


def _assigned(view: View, pod: dict[str, Any], node: str, annotations: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``pod`` on ``node`` with the Binding's annotations, Pending, no nomination and
    PodScheduled=True first among its conditions."""
    new = copy_tree(pod)
    new["spec"]["nodeName"] = node
    if annotations:
        new["metadata"].setdefault("annotations", {}).update(
            {str(k): str(v) for k, v in annotations.items()})
    status = new.setdefault("status", {})
    status["phase"] = "Pending"
    status.pop("nominatedNodeName", None)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.insert(0, {"type": "PodScheduled", "status": "True",
                          "lastTransitionTime": view.timestamp()})
    status["conditions"] = conditions
    return new


def evict(view: View, namespace: str, name: str) -> None:
    """POST pods/<name>/eviction: delete unless a PDB forbids it (429)."""
    pod = view.get("Pod", name, namespace)
    if pod is None:
        raise NotFoundError("pods", name)
    evict_pod(view, pod)


MAX_GRACE_SECONDS = 2**63 - 1     # DeleteOptions.gracePeriodSeconds is an int64


def delete_grace(query: dict[str, Any], body: bytes) -> int | None:
    """DeleteOptions.gracePeriodSeconds from the query or the JSON body (kubectl sends the
    body); None when absent. Negative values mean 1 (apimachinery ``rest.BeforeDelete``)."""
    value: Any = query.get("gracePeriodSeconds")     # a query string or a JSON value
    if body.strip():
        try:
            options = limits.json_loads(body.decode("utf-8", "replace"))
        except ValueError:
            raise BadRequestError("the body of a DELETE must be a DeleteOptions object") from None
        if not isinstance(options, dict):
            raise BadRequestError("the body of a DELETE must be a DeleteOptions object")
        value = options.get("gracePeriodSeconds", value)
    if value is None:
        return None
    try:
        seconds = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        seconds = None
    if seconds is None or seconds > MAX_GRACE_SECONDS:
        raise BadRequestError(f"gracePeriodSeconds: invalid value {value!r}: must be an integer")
    return 1 if seconds < 0 else seconds
