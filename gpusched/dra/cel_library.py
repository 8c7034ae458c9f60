"""Kubernetes' CEL libraries for DRA selectors (quantity, semver, regex) on cel-expr-python, and a
device's CEL input.

Upstream: ``k8s.io/apiserver/pkg/cel/library/{quantity.go,semverlib.go,regex.go}`` (function
names, overload ids and error texts); ``dynamic-resource-allocation/cel/compile.go``
(``DeviceMatches``: how attributes and capacities become ``device.attributes[domain][id]``).

A quantity or version is a ``kubernetes.Quantity`` / ``kubernetes.Semver`` protobuf message
holding its canonical text (a message type is what cel-expr-python passes to Python functions).

Neighbours: ``dra.cel`` builds the environment from ``functions()`` and ``extensions()``.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any, Callable

import re2
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from gpusched.dra import semver
from gpusched.dra.model import Device
from gpusched.objects.quantity import QuantityError, parse_quantity, quantity_string


class UnsupportedAttribute(ValueError):
    """A device attribute of a type CEL cannot read (upstream ``getAttributeValue``)."""


def _pool() -> descriptor_pool.DescriptorPool:
    proto = descriptor_pb2.FileDescriptorProto(name="gpusched_dra_cel.proto", package="kubernetes",
                                               syntax="proto3")
    for name in ("Quantity", "Semver"):
        message = proto.message_type.add(name=name)
        message.field.add(name="text", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


POOL = _pool()
QuantityMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName("kubernetes.Quantity"))
SemverMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName("kubernetes.Semver"))
QUANTITY = cel.Type("kubernetes.Quantity")
SEMVER = cel.Type("kubernetes.Semver")
INT, BOOL, STRING, DOUBLE = cel.Type.INT, cel.Type.BOOL, cel.Type.STRING, cel.Type.DOUBLE


def _q(message: Any) -> Fraction:
    return parse_quantity(message.text)


def _quantity(amount: Fraction) -> Any:
    text = str(amount) if amount.denominator == 1 else f"{amount.numerator * 10**9 // amount.denominator}n"
    return QuantityMessage(text=quantity_string(text))


def _string_to_quantity(text: str) -> Any:
    try:
        parse_quantity(text)
    except (QuantityError, ValueError) as error:
        raise ValueError(str(error)) from None
    return QuantityMessage(text=text)


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except (QuantityError, ValueError):
        return False
    return True


def _as_integer(message: Any) -> int:
    amount = _q(message)
    if amount.denominator != 1 or not -2**63 <= amount < 2**63:
        raise ValueError("cannot convert value to integer")
    return int(amount)


def _is_integer(message: Any) -> bool:
    amount = _q(message)
    return amount.denominator == 1 and -2**63 <= amount < 2**63


def _compare(a: Fraction, b: Fraction) -> int:
    return (a > b) - (a < b)


def _v(message: Any) -> semver.Version:
    return semver.parse(message.text)


def _compare_any(a: Any, b: Any) -> int:
    """``compareTo`` of two quantities or two versions (the checker saw to the types)."""
    if a.DESCRIPTOR.name == "Semver":
        return _v(a).compare(_v(b))
    return _compare(_q(a), _q(b))


def _to_semver(text: str, normalize: bool = False) -> Any:
    try:
        version = semver.normalize(text) if normalize else semver.parse(text)
    except semver.SemverError as error:
        raise ValueError(str(error)) from None
    return SemverMessage(text=str(version))


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        semver.normalize(text) if normalize else semver.parse(text)
    except semver.SemverError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error as error:
        raise ValueError(f"error parsing regexp: {error}") from None


def _find(text: str, pattern: str) -> str:
    found = _regex(pattern).search(text)
    return found.group(0) if found else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    matches = [m.group(0) for m in _regex(pattern).finditer(text)]
    return matches if limit < 0 else matches[:limit]


def _overload(name: str, result: Any, params: list[Any], impl: Callable[..., Any],
              member: bool = True) -> Any:
    return cel.Overload(name, result, params, is_member=member, impl=impl)


def _quantity_functions() -> dict[str, list[Any]]:
    Q = QUANTITY
    return {
        "quantity": [_overload("string_to_quantity", Q, [STRING], _string_to_quantity, member=False)],
        "isQuantity": [_overload("is_quantity_string", BOOL, [STRING], _is_quantity, member=False)],
        "sign": [_overload("quantity_sign", INT, [Q], lambda a: _compare(_q(a), Fraction(0)), member=False),
                 _overload("quantity_sign_member", INT, [Q], lambda a: _compare(_q(a), Fraction(0)))],
        "isGreaterThan": [_overload("quantity_is_greater_than", BOOL, [Q, Q], lambda a, b: _compare_any(a, b) == 1)],
        "isLessThan": [_overload("quantity_is_less_than", BOOL, [Q, Q], lambda a, b: _compare_any(a, b) == -1)],
        "compareTo": [_overload("quantity_compare_to", INT, [Q, Q], _compare_any)],
        "asApproximateFloat": [_overload("quantity_get_float", DOUBLE, [Q], lambda a: float(_q(a)))],
        "asInteger": [_overload("quantity_get_int", INT, [Q], _as_integer)],
        "isInteger": [_overload("quantity_is_integer", BOOL, [Q], _is_integer)],
        "add": [_overload("quantity_add", Q, [Q, Q], lambda a, b: _quantity(_q(a) + _q(b))),
                _overload("quantity_add_int", Q, [Q, INT], lambda a, b: _quantity(_q(a) + b))],
        "sub": [_overload("quantity_sub", Q, [Q, Q], lambda a, b: _quantity(_q(a) - _q(b))),
                _overload("quantity_sub_int", Q, [Q, INT], lambda a, b: _quantity(_q(a) - b))],
    }


def _semver_functions() -> dict[str, list[Any]]:
    S = SEMVER
    return {
        "semver": [_overload("string_to_semver", S, [STRING], _to_semver, member=False),
                   _overload("string_bool_to_semver", S, [STRING, BOOL], _to_semver, member=False)],
        "isSemver": [_overload("is_semver_string", BOOL, [STRING], _is_semver, member=False),
                     _overload("is_semver_string_bool", BOOL, [STRING, BOOL], _is_semver, member=False)],
        # The runtime dispatches on the argument kinds (message, message) alone, so these share
        # the quantity overloads' implementation (``_compare_any``) and declare none of their own.
        "isGreaterThan": [cel.Overload("semver_is_greater_than", BOOL, [S, S], is_member=True)],
        "isLessThan": [cel.Overload("semver_is_less_than", BOOL, [S, S], is_member=True)],
        "compareTo": [cel.Overload("semver_compare_to", INT, [S, S], is_member=True)],
        "major": [_overload("semver_major", INT, [S], lambda a: _v(a).major)],
        "minor": [_overload("semver_minor", INT, [S], lambda a: _v(a).minor)],
        "patch": [_overload("semver_patch", INT, [S], lambda a: _v(a).patch)],
    }


def _regex_functions() -> dict[str, list[Any]]:
    return {
        "find": [_overload("string_find_string", STRING, [STRING, STRING], _find)],
        "findAll": [_overload("string_find_all_string", cel.Type.List(STRING), [STRING, STRING], _find_all),
                    _overload("string_find_all_string_int", cel.Type.List(STRING), [STRING, STRING, INT], _find_all)],
    }


def _sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in zip(items, items[1:]))


def _least(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    return min(items)


def _greatest(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    return max(items)


def _list_functions() -> dict[str, list[Any]]:
    """The apiserver's ``lists`` library and cel-go's ``sets`` extension (``sets.contains``,
    ``sets.equivalent``, ``sets.intersects``), over lists of any element type. The lists
    library's ``indexOf``/``lastIndexOf`` are left out: the runtime's strings extension owns
    those names (for strings)."""
    L, D = cel.Type.List(cel.Type.DYN), cel.Type.DYN
    return {
        "isSorted": [_overload("list_is_sorted", BOOL, [L], _sorted)],
        "sum": [_overload("list_sum", D, [L], lambda items: sum(items))],
        "min": [_overload("list_min", D, [L], _least)],
        "max": [_overload("list_max", D, [L], _greatest)],
        "sets.contains": [_overload("list_sets_contains_list", BOOL, [L, L],
                                    lambda a, b: all(x in a for x in b), member=False)],
        "sets.equivalent": [_overload("list_sets_equivalent_list", BOOL, [L, L],
                                      lambda a, b: all(x in a for x in b) and all(x in b for x in a), member=False)],
        "sets.intersects": [_overload("list_sets_intersects_list", BOOL, [L, L],
                                      lambda a, b: any(x in a for x in b), member=False)],
    }


def functions() -> list[Any]:
    merged: dict[str, list[Any]] = {}
    for group in (_quantity_functions(), _semver_functions(), _regex_functions(), _list_functions()):
        for name, overloads in group.items():
            merged.setdefault(name, []).extend(overloads)
    return [cel.FunctionDecl(name, overloads) for name, overloads in merged.items()]


def extensions() -> list[Any]:
    """cel-go's strings and bindings extensions and optional types, as the apiserver's base
    environment has them."""
    return [ext_strings.ExtStrings(), ext_bindings.ExtBindings(), ext_optional.ExtOptional()]


def _attribute_value(kind: str, value: int | bool | str) -> Any:
    if kind == "version":
        try:
            return SemverMessage(text=str(semver.parse(str(value))))
        except semver.SemverError:
            return SemverMessage(text=str(value))
    return value


def _qualified(name: str, driver: str) -> tuple[str, str]:
    """upstream ``parseQualifiedName``: ``domain/id``, or the driver's domain."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_input(device: Device) -> dict[str, Any]:
    """The ``device`` variable of a device (built once, kept in the device's cache)."""
    found = device.cel.get("input")
    if found is not None:
        return found  # type: ignore[no-any-return]
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        if attribute.kind == "unsupported":
            raise UnsupportedAttribute(f"attribute {name}: unsupported attribute value")
        domain, ident = _qualified(name, device.driver)
        attributes.setdefault(domain, {})[ident] = _attribute_value(attribute.kind, attribute.value)
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _qualified(name, device.driver)
        capacity.setdefault(domain, {})[ident] = QuantityMessage(text=cap.text or str(cap.value))
    data = {"driver": device.driver, "allowMultipleAllocations": device.allow_multiple_allocations,
            "attributes": attributes, "capacity": capacity}
    device.cel["input"] = data
    return data


