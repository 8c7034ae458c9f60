"""The resource endpoints: list, get, create, update, patch, delete, subresources.

Paths (``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` otherwise)::

    <plural>                                    list (all namespaces) / create (cluster-scoped)
    namespaces/<ns>/<plural>                    list / create
    [namespaces/<ns>/]<plural>/<name>           get / put / patch / delete
    [namespaces/<ns>/]<plural>/<name>/<sub>     status (get/put/patch), binding, eviction (post),
                                                scale (get/put/patch; deployments, replicasets)

Reads run on the cluster worker in a read transaction; writes go through
``apiserver.api_ops`` inside one (group-committed, settled) write transaction. Lists honour
``labelSelector`` and ``fieldSelector`` (any dotted field, ``=``, ``==``, ``!=``), ``limit`` and
``continue`` (pages of one snapshot), ``resourceVersion`` and ``resourceVersionMatch``
(``server.lists``). ``?watch=true`` is handed to
``server.watch``. Tables are built when the Accept header asks for them.

Deletion is immediate (the grace period elapses at once, as in the embedded cluster);
``propagationPolicy`` is accepted, dependents are garbage-collected in the background either
way. ``dryRun=All`` runs the write alone on the worker (validation, admission, settle) and rolls
the transaction back (``Cluster.dry_run``); the reply is the object as it would be. Writes of
``api_ops.UNSETTLED_KINDS`` (Leases) commit without running controllers and the scheduler.

Neighbours: ``server.app`` (routing), ``server.worker``, ``server.patch``, ``server.tables``,
``server.watch``, ``apiserver.api_ops``.
"""

from __future__ import annotations

import builtins
import json
from urllib.parse import parse_qs
from dataclasses import dataclass
from typing import Any

from gpusched.cluster.apiserver import write as writes
from gpusched.cluster.apiserver import api_ops, event_ops
from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.cluster.apiserver.view import copy_tree
from gpusched.errors import ConflictError, FieldError, GpuschedError, InvalidError, NotFoundError
from gpusched.objects.kinds import KindInfo
from gpusched.objects.validation import validate_object
from gpusched.objects.selectors import (field_matches, matches, parse_field_selector,
                                        parse_selector, selector_from_dict, selector_to_string)
from gpusched.server import decoding, discovery, events, lists, partial, patch, ssa, statuses
from gpusched.server.discovery import SCALE_KINDS
from gpusched.server.feed import OBJECTS
from gpusched.server.http import (Request, Response, json_response, status_object,
                                  status_response, success_status)
from gpusched.server.tables import ColumnSource, build_table, wants_table
from gpusched.server.versions import served_object, served_response

NAMESPACE_SUBRESOURCES = ("status", "finalize")
NOT_ALLOWED = "the server does not allow this method on the requested resource"


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource path names."""

    info: KindInfo
    namespace: str | None        # None: every namespace (lists) / cluster-scoped
    name: str = ""
    subresource: str = ""


def parse_target(path: str) -> Target | None:
    """``/api/v1/namespaces/a/pods/p/status`` -> Target(Pod, "a", "p", "status"); None if not one."""
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "v1"]:
        gv, rest = "v1", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    namespace = None
    if (len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    info = discovery.find_resource(gv, rest[0])
    if info is None:
        return None
    if info.namespaced and namespace is None and len(rest) > 1:
        return None
    return Target(info, namespace if info.namespaced else None, *rest[1:])


def plural_name(info: KindInfo) -> str:
    return f"{info.plural}.{info.group}" if info.group else info.plural


class ResourceApi:
    """Handlers for resource paths; see the module docstring."""

    def __init__(self, worker: Any, feed: Any, columns: ColumnSource | None) -> None:
        self.worker = worker
        self.feed = feed
        self.columns = columns

    def handle(self, req: Request, target: Target) -> Response:
        try:
            return served_response(target.info, self._dispatch(req, target))
        except GpuschedError as err:
            return statuses.error_status(err, target.info.group)

    def _dispatch(self, req: Request, t: Target) -> Response:
        check_dry_run(req)
        if not t.name:
            return self._collection(req, t)
        if t.subresource in ("binding", "eviction"):
            if req.method != "POST":
                return status_response(405, NOT_ALLOWED)
            return self.post_subresource(req, t)
        if t.subresource == "scale" and t.info.kind in SCALE_KINDS:
            return self.scale(req, t)
        if t.subresource not in ("", "status"):      # no route: go-restful's 404
            return json_response({**status_object(404, "the server could not find the requested "
                                                  "resource", "NotFound"), "details": {}}, 404)
        return self._object(req, t)

    def _collection(self, req: Request, t: Target) -> Response:
        """GET (list or watch) and POST on a resource's collection."""
        if req.method == "GET":
            if req.query.get("watch") in ("true", "1"):
                from gpusched.server.watch import watch_response
                return watch_response(self, req, t)
            return self.list(req, t)
        if req.method == "POST":
            return self.create(req, t)
        return status_response(405, NOT_ALLOWED)

    def _object(self, req: Request, t: Target) -> Response:
        """GET, PUT, PATCH and DELETE on one object (or its status)."""
        method = req.method
        if method == "GET":
            return self.get(req, t)
        if method == "PUT":
            return self._put(req, t)
        if method == "PATCH":
            return self.patch(req, t)
        if method == "DELETE" and events.is_event(t.info):
            return json_response(events.as_requested(self.worker.write(
                lambda view: event_ops.delete(view, t.info, t.namespace or "", t.name)), t.info))
        if method == "DELETE":
            return self.delete(t, api_ops.delete_grace(req.query, req.body),
                               bool(req.query.get("dryRun")) or _delete_options_dry_run(req.body))
        return status_response(405, NOT_ALLOWED)

    def _put(self, req: Request, t: Target) -> Response:
        mode = decoding.mode_of(req.query)
        body, warnings = decoding.decode_body(t.info, decoding.read_body(req.body, req.content_type), mode)
        ns = t.namespace or ""
        manager = ssa.manager_name(req.query, req.headers.get("user-agent", ""), False)

        def put(view: Any) -> dict[str, Any]:
            old = copy_tree(view.get(t.info.kind, t.name, ns))
            stored = api_ops.replace(view, t.info, ns, t.name, body, t.subresource, uid_precondition=True)
            return record_managed(view, t.info, old, stored, manager, t.subresource)

        result = self._write(req, put, api_ops.needs_settle(t.info))
        return with_warnings(json_response(result), warnings)

    # ---- reads -------------------------------------------------------------------------------

    def list(self, req: Request, t: Target) -> Response:
        """A list page (``server.lists``: limit/continue, resourceVersion/resourceVersionMatch)."""
        label_sel = parse_selector(req.query["labelSelector"]) if req.query.get("labelSelector") else None
        field_sel = events.field_selector(t.info, parse_field_selector(req.query.get("fieldSelector", "")))
        options = lists.parse_options(req.query)
        kind = t.info.kind
        all_namespaces = t.info.namespaced and t.namespace is None

        def keep(body: dict[str, Any]) -> bool:
            return (label_sel is None or matches(
                label_sel, (body.get("metadata") or {}).get("labels") or {})) \
                and field_matches(body, field_sel)

        def read(view: Any) -> tuple[int, list[dict[str, Any]], str]:
            if kind == "Event":
                return view.event_counter, events.listed(view, t.namespace), view.timestamp()
            return view.rv, view.list(kind, t.namespace if t.info.namespaced else ""), view.timestamp()

        current_rv, items, now = self.worker.read(read)
        read_plan = lists.plan(options, current_rv)
        rv = current_rv
        if read_plan.at_rv is not None and kind != "Event":
            rv = read_plan.at_rv
            items = self._items_at(t, rv, options)
        page = lists.cut_page(((lists.storage_key(b, all_namespaces), b) for b in items),
                              read_plan, options.limit, rv, keep,
                              bool(label_sel is not None or field_sel))
        items = copy_tree(page.items)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if page.continue_token:
            meta["continue"] = page.continue_token
        if page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
        if wants_table(req.accept):
            table = self.table(t.info, items, now, str(rv), req)
            table["metadata"] = {**table.get("metadata", {}), **meta}
            return json_response(table)
        metadata_only = partial.requested(req.accept)
        if metadata_only is not None:
            return json_response(partial.partial_list(t.info, items, meta, metadata_only), 200,
                                 metadata_only.content_type)
        if events.is_event(t.info):
            items = [events.as_requested(item, t.info) for item in items]
        for item in items:
            item.setdefault("apiVersion", t.info.api_version)
            item.setdefault("kind", kind)
        return json_response({"kind": f"{kind}List", "apiVersion": t.info.api_version,
                              "metadata": meta, "items": items})

    def _items_at(self, t: Target, rv: int, options: lists.ListOptions) -> builtins.list[dict[str, Any]]:
        """The kind's objects at resourceVersion ``rv`` from the change feed's history; 410
        when the history no longer reaches back that far (etcd3 ``interpretListError``)."""
        state = self.feed.state_at(OBJECTS, rv)
        if state is None:
            if options.token:
                start, _ = lists.decode_continue(options.token)
                raise lists.ExpiredError(lists.INCONSISTENT_CONTINUE, lists.encode_continue(start, -1))
            raise lists.ExpiredError(lists.LIST_EXPIRED)
        wanted_ns = t.namespace if t.info.namespaced else ""
        return [body for (kind, ns, _name), body in state.items()
                if kind == t.info.kind and (wanted_ns is None or ns == wanted_ns)]

    def table(self, info: KindInfo, items: builtins.list[dict[str, Any]], now: str, rv: str, req: Request,
              with_definitions: bool = True) -> dict[str, Any]:
        return build_table(info.kind, items, now, self.columns, rv,
                           req.query.get("includeObject", "Metadata"), with_definitions)

    def get(self, req: Request, t: Target) -> Response:
        def read(view: Any) -> tuple[dict[str, Any] | None, str]:
            if events.is_event(t.info):
                return events.fetched(view, t.namespace or "", t.name), view.timestamp()
            body = view.get(t.info.kind, t.name, t.namespace or "")
            return copy_tree(body), view.timestamp()

        body, now = self.worker.read(read)
        if body is None:
            raise NotFoundError(plural_name(t.info), t.name)
        if wants_table(req.accept) and not t.subresource:
            rv = str((body.get("metadata") or {}).get("resourceVersion", ""))
            return json_response(self.table(t.info, [body], now, rv, req))
        metadata_only = partial.requested(req.accept)
        if metadata_only is not None:
            return json_response(partial.partial_object(t.info, body, metadata_only), 200,
                                 metadata_only.content_type)
        return json_response(events.as_requested(body, t.info) if events.is_event(t.info) else body)

    # ---- writes ------------------------------------------------------------------------------

    def create(self, req: Request, t: Target) -> Response:
        mode = decoding.mode_of(req.query)
        body, warnings = decoding.decode_body(
            t.info, decoding.read_body(req.body, req.content_type), mode)
        if t.info.namespaced and t.namespace is None:
            ns = str(((body or {}).get("metadata") or {}).get("namespace") or "default") \
                if isinstance(body, dict) else "default"
        else:
            ns = t.namespace or ""
        manager = ssa.manager_name(req.query, req.headers.get("user-agent", ""), False)
        result = self._write(req, lambda view: record_managed(
            view, t.info, None, api_ops.create(view, t.info, ns, body), manager),
            api_ops.needs_settle(t.info))
        return with_warnings(json_response(result, 201), warnings)

    def patch(self, req: Request, t: Target) -> Response:
        kind = req.content_type
        if kind not in patch.PATCH_TYPES:
            return status_response(415, f'the body of the request was in an unknown format - '
                                   f'accepted media types include: {", ".join(patch.PATCH_TYPES)}')
        if kind == patch.STRATEGIC and not patch.strategic_supported(t.info.api_version, t.info.kind):
            return status_response(415, "the body of the request was in an unknown format - accepted "
                                   f"media types include: {patch.JSON_PATCH}, {patch.MERGE}, {patch.APPLY}")
        mode = decoding.mode_of(req.query)
        body = patch.parse_body(req.body, kind)
        ns = t.namespace or ""
        warnings: list[str] = []
        applying = kind == patch.APPLY
        manager = ssa.manager_name(req.query, req.headers.get("user-agent", ""), applying)
        force = req.query.get("force") in ("true", "1")

        def write(view: Any) -> tuple[int, dict[str, Any]]:
            old = current(view, t.info, ns, t.name)
            if old is None and applying and not t.subresource:
                created, found = decoding.decode_body(t.info, body, mode)
                warnings.extend(found)
                stored = api_ops.create(view, t.info, ns, created)
                return 201, record_managed(view, t.info, None, stored, manager, applied=created)
            if old is None:
                raise NotFoundError(plural_name(t.info), t.name)
            shape = ssa.root_shape(t.info.api_version, t.info.kind)
            patched = ssa.merge(old, body, shape) if applying and isinstance(body, dict) \
                else patch.apply_patch(served_object(t.info, old), body, kind)
            new, found = decoding.decode_patched(t.info, old, patched, body, mode)
            warnings.extend(found)
            entries = None
            if applying:
                new, entries = ssa.apply(old, body if isinstance(body, dict) else {}, new, manager,
                                         force, t.info.api_version, view.timestamp(), shape,
                                         t.subresource)
            stored = api_ops.replace(view, t.info, ns, t.name, new, t.subresource)
            return 200, record_managed(view, t.info, old, stored, manager, t.subresource, entries)

        code, result = self._write(req, write, api_ops.needs_settle(t.info))
        return with_warnings(json_response(result, code), warnings)

    def _write(self, req: Request, fn: Any, settle: bool) -> Any:
        """A write, or with ``dryRun=All`` the same write rolled back (alone on the worker)."""
        if not req.query.get("dryRun"):
            return self.worker.write(fn, settle)
        return self.worker.cluster_call(lambda cluster: _dry_write(cluster, fn, settle))

    def delete(self, t: Target, grace: int | None = None, dry_run: bool = False) -> Response:
        """DELETE: the deleted object, or the Terminating pod (deletionTimestamp set) when the
        deletion is graceful; kubectl then waits for it to go (its ``--wait``). ``dry_run``:
        the same, rolled back."""
        ns = t.namespace or ""
        info = t.info

        def delete(cluster: Any) -> dict[str, Any]:
            def in_view(view: Any) -> dict[str, Any]:
                body = api_ops.get_existing(view, info, ns, t.name)
                last = copy_tree(body)
                cluster.delete_in(view, info, t.name, ns or "default", grace)
                current = view.get(info.kind, t.name, ns if info.namespaced else "")
                return copy_tree(current) if current is not None else last
            result: dict[str, Any]
            if dry_run:
                result = _dry_write(cluster, in_view, api_ops.needs_settle(info))
            else:
                result = cluster.write(in_view, api_ops.needs_settle(info))
            return result

        return json_response(self.worker.cluster_call(delete))

    def scale(self, req: Request, t: Target) -> Response:
        """The ``scale`` subresource (autoscaling/v1 Scale) of ``SCALE_KINDS``:
        GET, PUT and PATCH change ``spec.replicas`` (what ``kubectl scale`` patches)."""
        ns = t.namespace or ""
        if req.method == "GET":
            body = self.worker.read(lambda view: copy_tree(view.get(t.info.kind, t.name, ns)))
            if body is None:
                raise NotFoundError(plural_name(t.info), t.name)
            return json_response(scale_of(body))
        if req.method not in ("PUT", "PATCH"):
            return status_response(405, NOT_ALLOWED)
        kind = req.content_type if req.method == "PATCH" else "application/json"
        if req.method == "PATCH" and kind not in patch.PATCH_TYPES:
            return status_response(415, f'the body of the request was in an unknown format - '
                                   f'accepted media types include: {", ".join(patch.PATCH_TYPES)}')
        sent = patch.parse_body(req.body, kind or "application/json")

        def write(view: Any) -> dict[str, Any]:
            old = view.get(t.info.kind, t.name, ns)
            if old is None:
                raise NotFoundError(plural_name(t.info), t.name)
            wanted = patch.apply_patch(scale_of(old), sent, kind) if req.method == "PATCH" else sent
            check_scale_identity(t, old, wanted)
            replicas = ((wanted or {}).get("spec") or {}).get("replicas") \
                if isinstance(wanted, dict) else None
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise BadRequestError(f'Scale.autoscaling "{t.name}" is invalid: spec.replicas: '
                                      f"Invalid value: {replicas}: must be greater than or equal to 0")
            new = copy_tree(old)
            new.setdefault("spec", {})["replicas"] = replicas
            # objects.limits' replicas bound, as a PUT
            writes.update(view, validate_object(new), subresource="scale")
            return scale_of(view.get(t.info.kind, t.name, ns))

        return json_response(self.worker.write(write))

    def post_subresource(self, req: Request, t: Target) -> Response:
        if t.info.kind != "Pod":
            raise NotFoundError(plural_name(t.info), t.name)
        body = patch.parse_body(req.body, "application/json")
        ns = t.namespace or "default"
        if t.subresource == "binding":
            self.worker.write(lambda view: api_ops.bind(view, ns, t.name, body))
        else:
            self.worker.write(lambda view: api_ops.evict(view, ns, t.name))
        return success_status(201)


OPTIONS_KINDS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions",
                 "DELETE": "DeleteOptions"}


def check_dry_run(req: Request) -> None:
    """``dryRun`` as ValidateDryRun checks it on writes (422 on ``<Verb>Options.meta.k8s.io``);
    reads have no such option and ignore the parameter, as every unknown one."""
    kind = OPTIONS_KINDS.get(req.method)
    values = [v for v in parse_qs(req.raw_query, keep_blank_values=True).get("dryRun", [])] \
        if req.raw_query else ([req.query["dryRun"]] if "dryRun" in req.query else [])
    if kind is None or all(v in ("", "All") for v in values):
        return
    shown = ", ".join(json.dumps(v) for v in values)
    raise InvalidError(f"{kind}.meta.k8s.io", "", [FieldError(
        "dryRun", "Unsupported value", f"[]string{{{shown}}}", 'supported values: "All"', quoted=False)])


def record_managed(view: Any, info: KindInfo, old: dict[str, Any] | None, stored: dict[str, Any], manager: str,
                   subresource: str = "", entries: list[dict[str, Any]] | None = None,
                   applied: dict[str, Any] | None = None) -> dict[str, Any]:
    """Put the write's managedFields (``server.ssa``: ``entries`` from an apply, else an Update
    by ``manager``; ``applied``: an apply that created the object) on the stored object, in
    place when this transaction already changed it (no second resourceVersion); returns a copy."""
    if events.is_event(info):
        return events.as_requested(stored, info)
    name, ns = stored["metadata"]["name"], stored["metadata"].get("namespace", "")
    current = view.get(info.kind, name, ns)
    if current is None:
        return stored
    shape = ssa.root_shape(info.api_version, info.kind)
    if applied is not None:
        _, entries = ssa.apply({"metadata": {}}, applied, stored, manager, True, info.api_version,
                               view.timestamp(), shape)
    elif entries is None:
        entries = ssa.record_update(old, current, manager, info.api_version, view.timestamp(),
                                    shape, subresource)
    if (current.get("metadata") or {}).get("managedFields") == entries:
        return copy_tree(current)
    unchanged = old is not None and (old.get("metadata") or {}).get("resourceVersion") == \
        current["metadata"].get("resourceVersion")
    if unchanged:
        updated = copy_tree(current)
        updated["metadata"]["managedFields"] = entries
        writes.update(view, updated)
    else:
        current["metadata"]["managedFields"] = entries
    return copy_tree(view.get(info.kind, name, ns))


def with_warnings(response: Response, warnings: list[str]) -> Response:
    """The response with fieldValidation=Warn findings as Warning headers (server.decoding)."""
    response.warnings = tuple(warnings)
    return response


def check_scale_identity(t: Target, old: dict[str, Any], wanted: Any) -> None:
    """A Scale naming another object: its name must be the URL's (``checkName``, 400), its uid,
    when given, the object's (``scaleUpdatedObjectInfo``'s precondition, 409)."""
    meta = (wanted.get("metadata") if isinstance(wanted, dict) else None) or {}
    if not isinstance(meta, dict):
        return
    api_ops.check_name(meta.get("name", t.name), t.name)
    uid, current = meta.get("uid"), old["metadata"].get("uid")
    if uid not in (None, "") and uid != current:
        raise ConflictError(f'Operation cannot be fulfilled on {t.info.plural}/scale.{t.info.group} "{t.name}": '
                            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {current}")


def scale_of(body: dict[str, Any]) -> dict[str, Any]:
    """autoscaling/v1 Scale of a Deployment/ReplicaSet/StatefulSet/ReplicationController
    (``status.selector`` as a string; a ReplicationController's selector is a plain label map)."""
    meta = body.get("metadata") or {}
    raw = (body.get("spec") or {}).get("selector")
    if body.get("kind") == "ReplicationController" and isinstance(raw, dict):
        raw = {"matchLabels": raw}
    selector = selector_to_string(selector_from_dict(raw))
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                             "creationTimestamp") if k in meta},
            "spec": {"replicas": int((body.get("spec") or {}).get("replicas", 1))},
            "status": {"replicas": int((body.get("status") or {}).get("replicas", 0)),
                       "selector": selector}}


def _delete_options_dry_run(raw: bytes) -> bool:
    """client-go sends a DELETE's options (``dryRun: [All]``) as a DeleteOptions body."""
    if not raw:
        return False
    try:
        options = patch.parse_body(raw, "application/json")
    except GpuschedError:
        return False
    return isinstance(options, dict) and "All" in (options.get("dryRun") or [])


def _dry_write(cluster: Any, fn: Any, settle: bool) -> Any:
    """``cluster.write(fn)`` with the transaction rolled back at the end (``dryRun=All``)."""
    cluster.dry_run = True
    try:
        return copy_tree(cluster.write(fn, settle))
    finally:
        cluster.dry_run = False


def current(view: Any, info: KindInfo, ns: str, name: str) -> dict[str, Any] | None:
    """A copy of the object a PATCH starts from, in the request's group version."""
    if events.is_event(info):
        event = events.fetched(view, ns, name)
        return events.as_requested(event, info) if event is not None else None
    body: dict[str, Any] | None = copy_tree(view.get(info.kind, name, ns))
    return body
