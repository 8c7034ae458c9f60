"""The field-error collector and typed getters that ``objects.validation`` is written with.

``Errors`` gathers ``FieldError``s the way apimachinery's ``field.ErrorList`` does, with the same
constructors (``invalid``, ``required``, ``forbidden``, ``unsupported``, ``duplicate``) and Go's
rendering of values: strings quoted, numbers and booleans bare, maps and lists as compact JSON.

The getters (``mapping``, ``items``, ``string``, ``integer``, ``quantity``) read one field of a raw
dict, record a type error at its path when it has the wrong JSON type, and return ``None`` then,
so validation goes on and reports every problem of a document at once, never raising on odd input.

Neighbours: errors (FieldError), quantity; used by objects.validation and objects.podspec.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator

from gpusched.errors import FieldError
from gpusched.objects.quantity import QuantityError, parse_quantity


def render(value: Any) -> tuple[str, bool]:
    """(text, quoted) for a value in an error message, as Go's ``field.Error`` prints it."""
    if isinstance(value, str):
        return value, True
    if isinstance(value, bool):
        return ("true" if value else "false"), False
    if value is None:
        return "null", False
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value), False
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str), False
    except (TypeError, ValueError):  # pragma: no cover - manifests hold JSON types only
        return str(value), False


def quoted_list(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


class Errors:
    """An ordered list of FieldErrors with apimachinery's constructors."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def invalid(self, path: str, value: Any, detail: str) -> None:
        text, quoted = render(value)
        self.items.append(FieldError(path, "Invalid value", text, detail, quoted))

    def required(self, path: str, detail: str = "") -> None:
        self.items.append(FieldError(path, "Required value", None, detail))

    def forbidden(self, path: str, detail: str) -> None:
        self.items.append(FieldError(path, "Forbidden", None, detail))

    def unsupported(self, path: str, value: Any, supported: Iterable[str]) -> None:
        text, quoted = render(value)
        self.items.append(FieldError(path, "Unsupported value", text, f"supported values: {quoted_list(supported)}",
                                     quoted))

    def too_long(self, path: str, most: int) -> None:
        """apimachinery ``field.TooLong``: ``Too long: must have at most 262144 bytes`` (no value)."""
        self.items.append(FieldError(path, "Too long", None, f"must have at most {most} bytes"))

    def too_many(self, path: str, count: int, most: int) -> None:
        """apimachinery ``field.TooMany``: ``Too many: 6000: must have at most 5000 items``."""
        self.items.append(FieldError(path, "Too many", str(count), f"must have at most {most} items", False))

    def duplicate(self, path: str, value: Any) -> None:
        text, quoted = render(value)
        self.items.append(FieldError(path, "Duplicate value", text, "", quoted))

    def distinct_name(self, path: str, name: str, seen: set[str], rules: Callable[[str], list[str]]) -> None:
        """A name that must pass ``rules`` (e.g. ``names.dns1123_label_errors``) and not repeat one
        in ``seen`` (which it joins): each rule's message, then ``Duplicate value``."""
        for msg in rules(name):
            self.invalid(path, name, msg)
        if name in seen:
            self.duplicate(path, name)
        seen.add(name)

    def objects(self, items: Iterable[Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each object of a list with its path (``path[i]``); an item that is not an object is
        ``must be an object`` (at its path) and skipped."""
        for i, item in enumerate(items):
            if isinstance(item, dict):
                yield f"{path}[{i}]", item
            else:
                self.invalid(f"{path}[{i}]", item, "must be an object")

    # -- typed getters: record a type error and return None when the JSON type is wrong ---------

    def mapping(self, obj: dict[str, Any], key: str, path: str) -> dict[str, Any] | None:
        value = obj.get(key)
        if value is None or isinstance(value, dict):
            return value
        self.invalid(path, value, "must be an object")
        return None

    def items_of(self, obj: dict[str, Any], key: str, path: str) -> list[Any] | None:
        value = obj.get(key)
        if value is None or isinstance(value, list):
            return value
        self.invalid(path, value, "must be a list")
        return None

    def string(self, obj: dict[str, Any], key: str, path: str) -> str | None:
        value = obj.get(key)
        if value is None or isinstance(value, str):
            return value
        self.invalid(path, value, "must be a string")
        return None

    def integer(self, obj: dict[str, Any], key: str, path: str, minimum: int | None = None,
                maximum: int | None = None) -> int | None:
        """An optional integer field; ``maximum`` is one of gpusched's documented limits
        (``objects.limits``), reported as apimachinery words a bound."""
        value = obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.invalid(path, value, "must be an integer")
            return None
        if minimum is not None and value < minimum:
            self.invalid(path, value, f"must be greater than or equal to {minimum}")
        if maximum is not None and value > maximum:
            self.invalid(path, value, f"must be less than or equal to {maximum} (gpusched's limit)")
        return value

    def boolean(self, obj: dict[str, Any], key: str, path: str) -> bool | None:
        value = obj.get(key)
        if value is None or isinstance(value, bool):
            return value
        self.invalid(path, value, "must be a boolean")
        return None

    def string_map(self, obj: dict[str, Any], key: str, path: str) -> dict[str, str]:
        """A map of strings (labels, annotations, nodeSelector, data); bad values reported per key."""
        value = self.mapping(obj, key, path)
        if not value:
            return {}
        out = {}
        for k, v in value.items():
            if isinstance(v, str):
                out[k] = v
            else:
                self.invalid(f"{path}[{k}]", v, "must be a string")
        return out

    def quantity(self, value: Any, path: str, *, integer: bool = False) -> Fraction | None:
        """Parse a quantity; non-negative; ``integer`` for extended resources."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.invalid(path, value, "must be a quantity (a string or a number)")
            return None
        try:
            amount = parse_quantity(value)
        except QuantityError as exc:
            self.invalid(path, value, str(exc))
            return None
        if amount < 0:
            self.invalid(path, value, "must be greater than or equal to 0")
            return None
        if integer and amount.denominator != 1:
            self.invalid(path, value, "must be an integer")
            return None
        return amount


def quantity_text(value: Any) -> str:
    """How a quantity reads in a message (the text as written)."""
    return render(value)[0]


def _spec(obj: dict[str, Any], e: Errors, path: str = "spec") -> dict[str, Any]:
    spec = obj.get(path)
    if spec is None:
        spec = obj[path] = {}
    if not isinstance(spec, dict):
        e.invalid(path, spec, "must be an object")
        return {}
    return spec
