"""Server-side apply and managed fields, as apimachinery's fieldmanager and structured-merge-diff
keep them (``k8s.io/apimachinery/pkg/util/managedfields/internal``, ``sigs.k8s.io/structured-merge-diff``).

Every API write records who set which fields in ``metadata.managedFields``: one entry per
(manager, operation, apiVersion, subresource) with ``fieldsType: FieldsV1`` and the owned fields
as a ``fieldsV1`` tree (``f:<field>``, ``k:<key fields as JSON>`` for an item of a list keyed
by ``x-kubernetes-list-map-keys`` / patch merge key, ``v:<value>`` for an item of a set,
``.`` for an item that also has owned children). The manager is the ``fieldManager`` parameter,
else the User-Agent up to its first "/" (``managerOrUserAgent``).

- **Update** (create, PUT, JSON/merge/strategic PATCH): the writer gets every field it added or
  changed; fields that disappeared leave every entry (SMD ``Updater.update``).
- **Apply** (``application/apply-patch+yaml``): the applied configuration is merged into the
  live object with each list's type (:func:`merge`: ``map`` merged by its keys, ``set``
  unioned, ``atomic`` replaced); fields this manager applied before and no longer sends are removed unless another
  manager owns them; a field the configuration changes that another manager owns is a conflict
  (409, ``NewConflictError``'s message, one ``FieldManagerConflict`` cause each) unless
  ``force=true``, which moves the field to the applier. The applier's entry is exactly the
  applied field set.
- Not tracked, as ``stripmeta.go`` says: ``apiVersion``, ``kind`` and ``metadata``'s
  name/namespace/uid/resourceVersion/generation/creationTimestamp/selfLink/managedFields;
  ``status`` for writes of the main resource and everything but ``status`` for the status
  subresource (the registry's ResetFields).
- Entries are ordered as ``sortEncodedManagedFields``: operation, time, manager, apiVersion.

Pure functions over plain dicts; ``server.resources`` calls :func:`record_update` and
:func:`apply` inside the write. Neighbours: ``server.fields_v1`` (the FieldsV1 encoding),
``server.strategic`` (merge), ``objects.schema``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Iterable

from gpusched.errors import FieldError, GpuschedError, InvalidError
from gpusched.objects import schema
from gpusched.server.fields_v1 import Path, compact, from_fields_v1, path_string, to_fields_v1

APPLY, UPDATE = "Apply", "Update"
STRIPPED_META = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                 "selfLink", "managedFields", "clusterName")
MAX_MANAGER_CHARS = 128          # apimachinery ValidateFieldManager
# Key fields with a schema default: SMD keys an item with the defaulted value when it is absent
# (ports applied without protocol are the live TCP ports, not new ones).
KEY_DEFAULTS = {"protocol": "TCP"}


class ApplyConflictError(GpuschedError):
    """409 Conflict with one ``FieldManagerConflict`` cause per field (``NewApplyConflict``)."""

    code = 409
    reason = "Conflict"

    def __init__(self, conflicts: list[tuple[str, Path]]) -> None:
        super().__init__(conflict_message(conflicts))
        self.causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {manager}",
                        "field": path_string(path)} for manager, path in conflicts]


# ---- schema ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Shape:
    """How SMD treats a value: ``kind`` is "map" (granular object), "atomic", "map-list",
    "set-list" or "atomic-list"; ``keys`` are a map list's key fields; ``node`` its schema."""

    kind: str
    node: dict[str, Any] | None = None
    keys: tuple[str, ...] = ()


def root_shape(api_version: str, kind: str) -> Shape:
    info = schema.schema_for(api_version, kind)
    node = schema.load().definitions.get(info.name) if info is not None else None
    return Shape("map", node)


_CHILDREN: dict[tuple[int, str, str], tuple[dict[str, Any] | None, Shape]] = {}


def _value_kind(value: Any) -> str:
    return "list" if isinstance(value, list) else "dict" if isinstance(value, dict) else "scalar"


def _child(shape: Shape, key: str, value: Any) -> Shape:
    """The shape of ``shape``'s member ``key`` holding ``value`` (cached per schema node: the
    schemas are loaded once and never change)."""
    cache_key = (id(shape.node), key, _value_kind(value))
    found = _CHILDREN.get(cache_key)
    if found is not None and found[0] is shape.node:
        return found[1]
    child = _child_shape(shape, key, value)
    if len(_CHILDREN) < 100_000:
        _CHILDREN[cache_key] = (shape.node, child)
    return child


def _child_shape(shape: Shape, key: str, value: Any) -> Shape:
    node = shape.node or {}
    field = (node.get("properties") or {}).get(key)
    if field is None and isinstance(node.get("additionalProperties"), dict):
        field = node["additionalProperties"]
    if field is None:
        field = {}
    resolved = schema.resolve(field) if field else {}
    if isinstance(value, list):
        return _list_shape(field, resolved)
    if isinstance(value, dict):
        atomic = "atomic" in (field.get("x-kubernetes-map-type"), resolved.get("x-kubernetes-map-type"))
        return Shape("atomic" if atomic else "map", resolved or None)
    return Shape("atomic", resolved or None)


def _list_shape(field: dict[str, Any], resolved: dict[str, Any]) -> Shape:
    """A list field's shape: ``x-kubernetes-list-type`` map/set/atomic, or for the built-in
    kinds without it the patch strategy (``merge`` with a merge key: a map keyed by it)."""
    items = resolved.get("items")
    items_node = schema.resolve(items) if isinstance(items, dict) else None
    list_type = field.get("x-kubernetes-list-type") or resolved.get("x-kubernetes-list-type")
    strategy = str(field.get("x-kubernetes-patch-strategy", ""))
    merge_key = field.get("x-kubernetes-patch-merge-key")
    keys = tuple(field.get("x-kubernetes-list-map-keys") or ([merge_key] if merge_key else []))
    if list_type == "map" or (list_type is None and "merge" in strategy and keys):
        return Shape("map-list", items_node, keys)
    if list_type == "set" or (list_type is None and "merge" in strategy):
        return Shape("set-list", items_node)
    return Shape("atomic-list", items_node)


# ---- field sets ------------------------------------------------------------------------------

def item_element(item: Any, shape: Shape) -> str:
    """``k:{"name":"a"}`` for a map-list item, ``v:"x"`` for a set item."""
    if shape.kind == "map-list" and isinstance(item, dict):
        fields = {k: item[k] if k in item else KEY_DEFAULTS[k] for k in shape.keys
                  if k in item or k in KEY_DEFAULTS}
        return "k:" + compact(fields)
    return "v:" + compact(item)


def leaves(value: Any, shape: Shape, prefix: Path = ()) -> dict[Path, Any]:
    """Every owned path of ``value`` with the value there: scalars, atomic values, empty maps,
    and list items (their path maps to the item itself)."""
    out: dict[Path, Any] = {}
    _add_leaves(out, value, shape, prefix)
    return out


def _add_leaves(out: dict[Path, Any], value: Any, shape: Shape, path: Path) -> None:
    if shape.kind == "map" and isinstance(value, dict) and value:
        for key, member in value.items():
            _add_leaves(out, member, _child(shape, key, member), path + ("f:" + key,))
        return
    if shape.kind in ("map-list", "set-list") and isinstance(value, list) and value:
        item_shape = Shape("map", shape.node)
        for item in value:
            item_path = path + (item_element(item, shape),)
            if shape.kind == "map-list" and isinstance(item, dict) and item:
                _add_leaves(out, item, item_shape, item_path)
            out[item_path] = item
        return
    out[path] = value


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values (a boolean is never a number)."""
    if type(a) is type(b) and isinstance(a, (str, int, float, bool)) or a is None or b is None:
        return a == b and type(a) is type(b)
    return compact(a) == compact(b)


def tracked(body: dict[str, Any], shape: Shape, subresource: str = "") -> dict[Path, Any]:
    """The owned paths of an object (``stripmeta.go`` and ResetFields leave some out)."""
    body = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
    meta = body.get("metadata")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in STRIPPED_META}
        body["metadata"] = meta
        if not meta:
            del body["metadata"]
    if subresource == "status":
        body = {"status": body["status"]} if "status" in body else {}
    else:
        body.pop("status", None)
    return leaves(body, shape) if body else {}


# ---- managers --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    manager: str
    operation: str
    api_version: str
    time: str
    paths: frozenset[Path]
    subresource: str = ""

    def identity(self) -> tuple[str, str, str, str]:
        """BuildManagerIdentifier: appliers are one manager whatever apiVersion they used."""
        return (self.manager, self.operation, "" if self.operation == APPLY else self.api_version,
                self.subresource)

    def printed(self) -> str:
        """conflict.go printManager (the identifier has no time)."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        return f"{text} using {self.api_version}" if self.operation == UPDATE else text


def read_entries(body: dict[str, Any] | None) -> list[Entry]:
    entries = []
    for raw in ((body or {}).get("metadata") or {}).get("managedFields") or []:
        if not isinstance(raw, dict) or raw.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        entries.append(Entry(str(raw.get("manager", "")), str(raw.get("operation", UPDATE)),
                             str(raw.get("apiVersion", "")), str(raw.get("time", "")),
                             frozenset(from_fields_v1(raw.get("fieldsV1") or {})),
                             str(raw.get("subresource", ""))))
    return entries


def write_entries(entries: list[Entry]) -> list[dict[str, Any]]:
    """Encoded and sorted as ``sortEncodedManagedFields``; empty entries are dropped."""
    kept = sorted((e for e in entries if e.paths),
                  key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource))
    out = []
    for entry in kept:
        raw = {"manager": entry.manager, "operation": entry.operation, "apiVersion": entry.api_version,
               "time": entry.time, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(entry.paths)}
        if entry.subresource:
            raw["subresource"] = entry.subresource
        out.append(raw)
    return out


def manager_name(query: dict[str, str], user_agent: str, apply_patch: bool) -> str:
    """``fieldManager``, else the User-Agent's first segment; validated as ValidatePatchOptions."""
    manager = query.get("fieldManager", "")
    errors = []
    if apply_patch and not manager:
        errors.append(FieldError("fieldManager", "Required value", None, "is required for apply patch"))
    if not apply_patch and query.get("force") is not None:
        errors.append(FieldError("force", "Forbidden", None, "may not be specified for non-apply patch"))
    if len(manager) > MAX_MANAGER_CHARS:
        errors.append(FieldError("fieldManager", "Too long", None,
                                 f"may not be more than {MAX_MANAGER_CHARS} bytes"))
    if errors:
        raise InvalidError("PatchOptions.meta.k8s.io", "", errors)
    return manager or user_agent.split("/")[0]


# ---- operations ------------------------------------------------------------------------------

def record_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, api_version: str, now: str,
                  shape: Shape, subresource: str = "") -> list[dict[str, Any]]:
    """The managedFields after a non-apply write of ``new`` over ``old`` (None: created)."""
    entries = read_entries(old)
    before = tracked(old, shape, subresource) if old is not None else {}
    after = tracked(new, shape, subresource)
    gone = set(before) - set(after)
    changed = {p for p, v in after.items() if p not in before
               or (not _is_item(p) and not _same(before[p], v))}
    entries = [_with_paths(e, e.paths - gone) for e in entries]
    mine = Entry(manager, UPDATE, api_version, now, frozenset(changed), subresource)
    return write_entries(_merge_into(entries, mine, add=True))


def _is_item(path: Path) -> bool:
    """A list item's own path (its changes are its children's): never "modified" itself."""
    return bool(path) and path[-1][:2] in ("k:", "v:")


def _with_paths(entry: Entry, paths: Iterable[Path]) -> Entry:
    return Entry(entry.manager, entry.operation, entry.api_version, entry.time, frozenset(paths),
                 entry.subresource)


def _merge_into(entries: list[Entry], mine: Entry, add: bool) -> list[Entry]:
    """``mine`` replaces (or, with ``add``, joins) the entry with the same identity."""
    out, found = [], False
    for entry in entries:
        if entry.identity() == mine.identity():
            found = True
            paths = entry.paths | mine.paths if add else mine.paths
            if add and not mine.paths:
                out.append(entry)        # nothing new: the entry and its time stay
                continue
            out.append(Entry(mine.manager, mine.operation, mine.api_version, mine.time,
                             frozenset(paths), mine.subresource))
        else:
            out.append(entry)
    if not found:
        out.append(mine)
    return out


def apply(live: dict[str, Any], config: dict[str, Any], merged: dict[str, Any], manager: str, force: bool, api_version: str,
          now: str, shape: Shape, subresource: str = "") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Server-side apply of ``config`` by ``manager`` to ``live``; ``merged`` is ``config``
    merged into ``live`` by list type. Returns the new object and its managedFields, or raises
    :class:`ApplyConflictError`. ``subresource`` "status": only status fields count."""
    entries = read_entries(live)
    applied = tracked(config, shape, subresource)
    me = next((e for e in entries if e.identity() == (manager, APPLY, "", subresource)), None)
    others = [e for e in entries if e is not me]
    owned_by_others = frozenset().union(*(e.paths for e in others)) if others else frozenset()
    result = copy.deepcopy(merged)
    if me is not None:
        for path in sorted(me.paths - set(applied) - owned_by_others, key=len, reverse=True):
            _remove_path(result, path, shape)
    changed = _changed_paths(live, applied, shape, subresource)
    conflicts = sorted(((e.printed(), p) for e in others for p in e.paths & changed))
    if conflicts and not force:
        raise ApplyConflictError(conflicts)
    mine = Entry(manager, APPLY, api_version, now, frozenset(applied), subresource)
    kept = [_with_paths(e, e.paths - changed) if force else e for e in others]
    return result, write_entries(kept + [mine])


def _changed_paths(live: dict[str, Any], applied: dict[Path, Any], shape: Shape,
                   subresource: str) -> set[Path]:
    """The applied fields (not list items) the live object has with another value."""
    live_leaves = tracked(live, shape, subresource)
    return {p for p, v in applied.items() if not _is_item(p) and p in live_leaves
            and not _same(live_leaves[p], v)}


def merge(live: Any, config: Any, shape: Shape) -> Any:
    """The applied configuration merged into the live object as SMD's ``typed.Merge`` does:
    granular maps member by member, ``map``/``set`` lists item by item (:func:`_merge_items`),
    everything else (scalars, atomic maps and lists) replaced by the configuration."""
    if shape.kind == "map" and isinstance(live, dict) and isinstance(config, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live[key], value, _child(shape, key, value)) if key in live \
                else copy.deepcopy(value)
        return out
    if shape.kind in ("map-list", "set-list") and isinstance(live, list) and isinstance(config, list):
        return _merge_items(live, config, shape)
    return copy.deepcopy(config)


def _merge_items(live: list[Any], config: list[Any], shape: Shape) -> list[Any]:
    """SMD ``visitListItems``: walk both lists at once; an item in both is merged where the
    two meet, taking the shared items in the configuration's order; a live-only item keeps its
    place; a configuration-only item comes where the configuration has it.

    Worked example: live [a, b, c], config [c, a, d] -> shared order [c, a]: a is passed over
    (c comes first), b kept, c merged, then a merged, then d: [b, c, a, d].
    """
    walk = _ItemWalk(live, config, shape)
    while walk.li < len(live) or walk.ri < len(config):
        walk.step()
    return walk.out


class _ItemWalk:
    """:func:`_merge_items`' two cursors (``li`` over the live items, ``ri`` over the
    configuration's) and what they produced."""

    def __init__(self, live: list[Any], config: list[Any], shape: Shape) -> None:
        self.live, self.config, self.shape = live, config, shape
        self.live_keys = [item_element(i, shape) for i in live]
        self.config_keys = [item_element(i, shape) for i in config]
        self.live_by_key = dict(zip(reversed(self.live_keys), reversed(live)))  # first occurrence wins
        self.config_by_key = dict(zip(self.config_keys, config))
        self.shared = [k for k in self.config_keys if k in self.live_by_key]
        self.item_shape = Shape("map", shape.node)
        self.out: list[Any] = []
        self.done: set[str] = set()
        self.li = self.ri = 0

    def step(self) -> None:
        """One move of either cursor (or both)."""
        next_shared = self.shared[0] if self.shared else None
        if self._step_both(next_shared) or self._step_live():
            return
        if self.ri < len(self.config):
            self._take(self.config_keys[self.ri], next_shared)
            self.ri += 1
        else:
            self.li += 1

    def _step_both(self, next_shared: str | None) -> bool:
        """Both cursors on the same item: merge it; on a shared item whose turn has not come:
        pass it over."""
        if not (self.li < len(self.live) and self.ri < len(self.config)):
            return False
        live_key, config_key = self.live_keys[self.li], self.config_keys[self.ri]
        if live_key == config_key:
            self._take(config_key, next_shared)
            self.li, self.ri = self.li + 1, self.ri + 1
            return True
        if live_key in self.config_by_key and next_shared is not None and next_shared != live_key:
            self.li += 1                 # shared, but another shared item comes first
            return True
        return False

    def _step_live(self) -> bool:
        """A live-only item keeps its place; a shared one already merged is passed over."""
        if self.li >= len(self.live):
            return False
        key = self.live_keys[self.li]
        if key in self.config_by_key and key not in self.done:
            return False
        if key not in self.config_by_key:
            self.out.append(copy.deepcopy(self.live[self.li]))
        self.li += 1
        return True

    def _take(self, key: str, next_shared: str | None) -> None:
        """The configuration's item ``key`` (merged with the live one for a map list)."""
        if self.shape.kind == "map-list" and key in self.live_by_key:
            self.out.append(merge(self.live_by_key[key], self.config_by_key[key], self.item_shape))
        else:
            self.out.append(copy.deepcopy(self.config_by_key[key]))
        self.done.add(key)
        if next_shared == key:
            self.shared.pop(0)


def _remove_path(body: Any, path: Path, shape: Shape) -> None:
    """Remove the value at ``path`` (a field, or a list item by key/value) if it is there."""
    node, current = body, shape
    for index, element in enumerate(path):
        last = index == len(path) - 1
        kind, _, rest = element.partition(":")
        if kind == "f" and isinstance(node, dict) and rest in node:
            if last:
                del node[rest]
                return
            current = _child(current, rest, node[rest])
            node = node[rest]
        elif kind in ("k", "v") and isinstance(node, list):
            match = next((i for i, item in enumerate(node) if item_element(item, current) == element), None)
            if match is None:
                return
            if last:
                del node[match]
                return
            node, current = node[match], Shape("map", current.node)
        else:
            return


def conflict_message(conflicts: list[tuple[str, Path]]) -> str:
    """conflict.go ``getConflictMessage``."""
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        return f"Apply failed with 1 conflict: conflict with {manager}: {path_string(path)}"
    by_manager: dict[str, list[Path]] = {}
    for manager, path in conflicts:
        by_manager.setdefault(manager, []).append(path)
    lines = []
    for manager in sorted(by_manager):
        lines.append(f"conflicts with {manager}:")
        lines.extend(f"- {path_string(path)}" for path in by_manager[manager])
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
