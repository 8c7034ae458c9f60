"""The estimated worst-case cost of a CEL selector, checked against
``CELSelectorExpressionMaxCost`` (1,000,000).

Upstream (``dynamic-resource-allocation/cel/compile.go``) asks cel-go's ``EstimateCost`` with
DRA's size hints; validation refuses an expression whose maximum estimate exceeds the limit with
``too complex, exceeds cost limit``. The runtime used here has no estimator, so this module walks
the compiled expression (``cel.expr`` protobuf, decoded with the few message types it needs)
with cel-go's rules, simplified:

- a variable, a field selection, an index, a call: 1 each, plus their operands; a constant: 0;
- a list literal: 10 plus its elements; a map literal: 30 plus its entries;
- ``&&``, ``||`` and ``?:``: the operands', the costlier branch for ``?:``;
- a string function (``contains``, ``split``...): 1 plus a tenth of the longest string it may
  see (a DRA string attribute is at most 64 bytes), twice that for a regular expression;
- ``==`` on strings: a tenth of the shorter one (a literal bounds it), else 1;
- a comprehension (``all``, ``exists``, ``map``, ...): its range, plus (condition + step) times
  the range's size: a literal list's length; a device's attribute or capacity map: 32 entries.

So ``[1..10].all(x, [1..10].all(y, ...))`` seven levels deep costs about 10^7 and is refused,
while every selector of the NVIDIA driver and of upstream's tests costs well under 100. The
numbers are of cel-go's order, not its exact figures.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

TOO_COMPLEX = "too complex, exceeds cost limit"
MAX_ELEMENTS = 32            # ResourceSliceMaxAttributesAndCapacitiesPerDevice
STRING_SIZE = 64             # DeviceAttributeMaxValueLength
UNKNOWN_SIZE = 1_000         # a list or map of unknown size (upstream: the declared bound)
_STRING_FUNCTIONS = frozenset({"matches", "find", "findAll", "contains", "startsWith", "endsWith", "split",
                               "lowerAscii", "upperAscii", "replace", "indexOf", "lastIndexOf", "trim",
                               "substring", "join", "charAt", "size"})
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
_T = descriptor_pb2.FieldDescriptorProto


def _message(proto: descriptor_pb2.FileDescriptorProto, name: str,
             fields: list[tuple[str, int, int, str, int]]) -> None:
    message = proto.message_type.add(name=name)
    for field_name, number, kind, type_name, label in fields:
        added = message.field.add(name=field_name, number=number, type=kind, label=label)
        if type_name:
            added.type_name = f".gpusched.celcost.{type_name}"


def _classes() -> tuple[Any, Any]:
    """The subset of ``cel/expr/syntax.proto`` and ``checked.proto`` the walk reads (field
    numbers as there; the fields left out are skipped as unknown)."""
    proto = descriptor_pb2.FileDescriptorProto(name="gpusched_celcost.proto", package="gpusched.celcost",
                                               syntax="proto2")   # proto2: a constant's kind is its set field
    M, S, I64, B, D = _T.TYPE_MESSAGE, _T.TYPE_STRING, _T.TYPE_INT64, _T.TYPE_BOOL, _T.TYPE_DOUBLE
    _message(proto, "Constant", [("bool_value", 2, B, "", _OPTIONAL), ("int64_value", 3, I64, "", _OPTIONAL),
                                 ("double_value", 5, D, "", _OPTIONAL), ("string_value", 6, S, "", _OPTIONAL)])
    _message(proto, "Ident", [("name", 1, S, "", _OPTIONAL)])
    _message(proto, "Select", [("operand", 1, M, "Expr", _OPTIONAL), ("field", 2, S, "", _OPTIONAL),
                               ("test_only", 3, B, "", _OPTIONAL)])
    _message(proto, "Call", [("target", 1, M, "Expr", _OPTIONAL), ("function", 2, S, "", _OPTIONAL),
                             ("args", 3, M, "Expr", _REPEATED)])
    _message(proto, "CreateList", [("elements", 1, M, "Expr", _REPEATED)])
    _message(proto, "Entry", [("map_key", 3, M, "Expr", _OPTIONAL), ("value", 4, M, "Expr", _OPTIONAL)])
    _message(proto, "CreateStruct", [("entries", 2, M, "Entry", _REPEATED)])
    _message(proto, "Comprehension", [("iter_var", 1, S, "", _OPTIONAL), ("accu_var", 3, S, "", _OPTIONAL),
                                      ("iter_range", 2, M, "Expr", _OPTIONAL), ("accu_init", 4, M, "Expr", _OPTIONAL),
                                      ("loop_condition", 5, M, "Expr", _OPTIONAL), ("loop_step", 6, M, "Expr", _OPTIONAL),
                                      ("result", 7, M, "Expr", _OPTIONAL)])
    _message(proto, "Expr", [("const_expr", 3, M, "Constant", _OPTIONAL), ("ident_expr", 4, M, "Ident", _OPTIONAL),
                             ("select_expr", 5, M, "Select", _OPTIONAL), ("call_expr", 6, M, "Call", _OPTIONAL),
                             ("list_expr", 7, M, "CreateList", _OPTIONAL), ("struct_expr", 8, M, "CreateStruct", _OPTIONAL),
                             ("comprehension_expr", 9, M, "Comprehension", _OPTIONAL)])
    _message(proto, "Checked", [("expr", 4, M, "Expr", _OPTIONAL)])
    _message(proto, "Parsed", [("expr", 2, M, "Expr", _OPTIONAL)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("gpusched.celcost.Checked")),
            get(pool.FindMessageTypeByName("gpusched.celcost.Parsed")))


_CHECKED, _PARSED = _classes()


def _size(expr: Any) -> int:
    """How many elements a comprehension's range may have."""
    kind = _kind(expr)
    if kind == "list_expr":
        return len(expr.list_expr.elements)
    if kind == "struct_expr":
        return len(expr.struct_expr.entries)
    text = _path(expr)
    if text.startswith("device.attributes") or text.startswith("device.capacity"):
        return MAX_ELEMENTS
    return UNKNOWN_SIZE


def _kind(expr: Any) -> str:
    for name in ("const_expr", "ident_expr", "select_expr", "call_expr", "list_expr", "struct_expr",
                 "comprehension_expr"):
        if expr.HasField(name):
            return name
    return ""


def _path(expr: Any) -> str:
    kind = _kind(expr)
    if kind == "ident_expr":
        return str(expr.ident_expr.name)
    if kind == "select_expr":
        return f"{_path(expr.select_expr.operand)}.{expr.select_expr.field}"
    if kind == "call_expr" and expr.call_expr.function == "_[_]" and expr.call_expr.args:
        return _path(expr.call_expr.args[0])
    return ""


def _call(call: Any) -> int:
    operands = [call.target] if call.HasField("target") else []
    operands += list(call.args)
    cost = sum(_cost(o) for o in operands)
    if call.function == "_?_:_" and len(call.args) == 3:
        return _cost(call.args[0]) + max(_cost(call.args[1]), _cost(call.args[2]))
    if call.function in ("_&&_", "_||_"):
        return cost
    if call.function in ("_==_", "_!=_"):
        return cost + _equality(operands)
    if call.function in _REGEX_FUNCTIONS:
        return cost + 2 + 2 * (STRING_SIZE // 10)
    if call.function in _STRING_FUNCTIONS:
        return cost + 1 + STRING_SIZE // 10
    return cost + 1


def _equality(operands: list[Any]) -> int:
    """cel-go charges a string comparison a tenth of the shorter string: a literal's length
    bounds it (``device.driver == ""`` costs nothing more than reading ``device.driver``)."""
    literals = [o.const_expr.string_value for o in operands
                if _kind(o) == "const_expr" and o.const_expr.HasField("string_value")]
    if literals:
        return -(-min(len(text) for text in literals) // 10)
    return 1


def _cost(expr: Any) -> int:
    kind = _kind(expr)
    if kind in ("", "const_expr"):
        return 0
    if kind == "ident_expr":
        return 1
    if kind == "select_expr":
        return 1 + _cost(expr.select_expr.operand)
    if kind == "call_expr":
        return _call(expr.call_expr)
    if kind == "list_expr":
        return 10 + sum(_cost(e) for e in expr.list_expr.elements)
    if kind == "struct_expr":
        return 30 + sum(_cost(e.map_key) + _cost(e.value) for e in expr.struct_expr.entries)
    loop = expr.comprehension_expr
    per_element = _cost(loop.loop_condition) + _cost(loop.loop_step)
    return (_cost(loop.iter_range) + _cost(loop.accu_init) + per_element * _size(loop.iter_range)
            + _cost(loop.result))


def decode(checked: Any) -> Any:
    """The expression tree of a compiled expression (cel-expr-python's ``Expression``)."""
    wrapped = any_pb2.Any()
    wrapped.ParseFromString(checked.serialize())
    holder = (_CHECKED if wrapped.type_url.endswith("CheckedExpr") else _PARSED)()
    holder.ParseFromString(wrapped.value)
    return holder.expr


def kind(expr: Any) -> str:
    """Which kind of expression node ``expr`` is (``ident_expr``, ``call_expr``, ...)."""
    return _kind(expr)


def estimate(tree: Any) -> int:
    """The estimated maximum cost of an expression tree (``decode``)."""
    return _cost(tree)
