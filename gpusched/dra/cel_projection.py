"""Which parts of a device a selector reads, so its result can be shared by devices that agree
on them.

Most selectors read a few fixed places: ``device.driver``,
``device.attributes["gpu.nvidia.com"].type``, ``device.capacity["d"]["memory"]``. Their result is
a function of those values alone, so devices with equal values there (every MIG placement of one
profile on a thousand nodes) need one evaluation, by the CEL runtime, not one each. ``reads``
finds those places in the expression tree; when the expression uses ``device`` any other way (a
whole map, a computed key, a comprehension or ``cel.bind`` over part of it, a variable named
``device``) it returns ``None`` and every device is evaluated on its own.

Neighbours: ``dra.cel_cost`` (the decoded expression tree), ``dra.cel``.
"""

from __future__ import annotations

from typing import Any

from gpusched.dra import cel_cost
from gpusched.dra.model import Device

Path = tuple[str, ...]
MISSING = ("missing",)
_SCALARS = {("device", "driver"), ("device", "allowMultipleAllocations")}


class _NotProjectable(Exception):
    pass


def _path(expr: Any) -> Path | None:
    kind = cel_cost.kind(expr)
    if kind == "ident_expr":
        return ("device",) if expr.ident_expr.name == "device" else None
    if kind == "select_expr":
        inner = _path(expr.select_expr.operand)
        return None if inner is None else (*inner, str(expr.select_expr.field))
    if kind == "call_expr" and expr.call_expr.function == "_[_]" and len(expr.call_expr.args) == 2:
        key = expr.call_expr.args[1]
        inner = _path(expr.call_expr.args[0])
        if inner is not None and cel_cost.kind(key) == "const_expr" and key.const_expr.HasField("string_value"):
            return (*inner, str(key.const_expr.string_value))
    return None


def _allowed(path: Path) -> bool:
    return path in _SCALARS or (len(path) == 4 and path[1] in ("attributes", "capacity"))


def _children(expr: Any) -> list[Any]:
    kind = cel_cost.kind(expr)
    if kind == "select_expr":
        return [expr.select_expr.operand]
    if kind == "call_expr":
        call = expr.call_expr
        return ([call.target] if call.HasField("target") else []) + list(call.args)
    if kind == "list_expr":
        return list(expr.list_expr.elements)
    if kind == "struct_expr":
        return [part for entry in expr.struct_expr.entries for part in (entry.map_key, entry.value)]
    if kind == "comprehension_expr":
        loop = expr.comprehension_expr
        if "device" in (loop.iter_var, loop.accu_var):
            raise _NotProjectable()
        return [loop.iter_range, loop.accu_init, loop.loop_condition, loop.loop_step, loop.result]
    return []


def _collect(expr: Any, found: set[Path]) -> None:
    path = _path(expr)
    if path is not None:
        if not _allowed(path):
            raise _NotProjectable()
        found.add(path)
        return
    for child in _children(expr):
        _collect(child, found)


def reads(tree: Any) -> tuple[Path, ...] | None:
    """The device places the expression reads, or ``None`` when it reads ``device`` otherwise."""
    found: set[Path] = set()
    try:
        _collect(tree, found)
    except _NotProjectable:
        return None
    return tuple(sorted(found))


Plan = tuple[tuple[str, str, str, str], ...]


def plan(paths: tuple[Path, ...]) -> Plan:
    """How to read each place: (what, qualified name, unqualified name, domain)."""
    out = []
    for path in paths:
        if len(path) == 2:
            out.append((path[1], "", "", ""))
        else:
            _, where, domain, name = path
            out.append((where, f"{domain}/{name}", name, domain))
    return tuple(out)


def _unreadable(device: Device) -> bool:
    found: bool | None = device.cel.get("unreadable")
    if found is None:
        found = any(a.kind == "unsupported" for a in device.attributes.values())
        device.cel["unreadable"] = found
    return found


def key(device: Device, reads: Plan) -> tuple[Any, ...] | None:
    """The values a selector sees of this device (``None``: the device has an attribute CEL
    cannot read, which fails any evaluation, so it is evaluated on its own)."""
    if _unreadable(device):
        return None
    values: list[Any] = []
    for where, qualified, name, domain in reads:
        if where == "driver":
            values.append(device.driver)
        elif where == "allowMultipleAllocations":
            values.append(device.allow_multiple_allocations)
        else:
            table: Any = device.attributes if where == "attributes" else device.capacity
            found = table.get(qualified)
            if found is None and domain == device.driver:
                found = table.get(name)
            values.append(MISSING if found is None else
                          (found.kind, found.value) if where == "attributes" else found.text)
    return tuple(values)
