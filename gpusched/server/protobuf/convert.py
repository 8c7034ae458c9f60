"""Protobuf messages <-> the JSON-shaped dicts the rest of gpusched holds, field by field.

Driven by ``descriptors.Field``, the way Go's ``encoding/json`` marshals the struct the message
was decoded into (apimachinery decodes protobuf into the Go type, then serves or stores it):

- a Go pointer field (``*int32``, ``*LabelSelector``) is set when it is on the wire, zero
  included (``replicas: 0``); gogo writes every non-pointer field, so a non-pointer scalar is
  dropped when it is zero and ``omitempty``, and kept (zero too) otherwise, as Go's JSON does;
- a non-pointer struct on the wire is kept even when empty (``resources: {}``), as Go's JSON
  never omits a struct; ``json:",inline"`` members (a Volume's VolumeSource, a Probe's
  ProbeHandler) put their fields in the parent's object;
- empty lists and maps are left out; ``bytes`` are base64 strings; a string that is not UTF-8
  (proto2 does not check) has U+FFFD for each bad byte, as Go's JSON encoder writes it;
- the Go types with a JSON of their own (Time, Quantity, IntOrString, RawExtension, ...) are
  ``special``'s.

Writing ignores keys no field has (the response side: what gpusched keeps beyond the schema has
no field on the wire). A value of the wrong type is :class:`special.ConversionError` naming its
field path.

Neighbours: ``server.protobuf.descriptors``, ``server.protobuf.special``, ``server.protobuf.envelope``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from gpusched.server.protobuf.descriptors import ZERO, Field, schema
from gpusched.server.protobuf.special import READERS, WRITERS, ConversionError, text


def read_message(msg: Any, name: str) -> Any:
    """The JSON value of message ``msg`` (full name ``name``)."""
    special = READERS.get(name)
    if special is not None:
        return special(msg, read_message)
    known = schema()
    if name in known.slices:
        return [text(item) for item in msg.items]
    out: dict[str, Any] = {}
    own = known.by_name[name]
    for descriptor, value in msg.ListFields():          # the fields on the wire, in order
        _read_field(own[descriptor.name], value, out)
    for field in known.always[name]:                    # Go writes these zero values too
        if field.json not in out:
            out[field.json] = _read_scalar(ZERO[field.type], field.type)
    return out


def _read_scalar(value: Any, ftype: str) -> Any:
    if ftype == "bytes":
        return base64.b64encode(value).decode()
    if isinstance(value, bytes):        # a proto2 string that is not UTF-8: Go's JSON writes U+FFFD
        return text(value)
    if ftype == "double" and float(value).is_integer():
        return int(value)
    return value


def _read_value(value: Any, ftype: str) -> Any:
    return _read_scalar(value, ftype) if ftype in ZERO else read_message(value, ftype)


def _read_field(field: Field, value: Any, out: dict[str, Any]) -> None:
    """One field present on the wire into ``out``."""
    if field.type == "map":
        out[field.json] = {_read_scalar(key, "string"): _read_value(item, field.value_type)
                           for key, item in value.items()}
    elif field.repeated:
        out[field.json] = [_read_value(item, field.type) for item in value]
    elif field.type in ZERO:
        if field.pointer or not field.omitempty or value != ZERO[field.type]:
            out[field.json] = _read_scalar(value, field.type)
    elif field.inline:
        out.update(read_message(value, field.type))
    else:
        out[field.json] = read_message(value, field.type)


def write_message(msg: Any, value: Any, name: str) -> None:
    """Set message ``msg`` (full name ``name``) from the JSON value ``value``."""
    special = WRITERS.get(name)
    try:
        if special is not None:
            special(msg, value, write_message)
            return
        known = schema()
        if name in known.slices:
            msg.items.extend(_scalar(item, "string") for item in _list(value))
            return
    except (TypeError, ValueError) as err:
        raise ConversionError(str(err)) from None
    if not isinstance(value, dict):
        raise ConversionError(f"expected an object, got {_shown(value)}")
    own = known.by_json[name]
    for field in known.inline[name]:
        write_message(getattr(msg, field.name), value, field.type)
    for key, item in value.items():
        entry = own.get(key)
        if entry is None or item is None:
            continue
        try:
            _write_field(msg, entry, item)
        except ConversionError as err:
            raise err.under(key) from None
        except (TypeError, ValueError) as err:     # out of range for int32, ...
            raise ConversionError(str(err), key) from None


def _write_field(msg: Any, field: Field, value: Any) -> None:
    target = getattr(msg, field.name)
    if field.type == "map":
        if not isinstance(value, dict):
            raise ConversionError(f"expected an object, got {_shown(value)}")
        for key, item in value.items():
            if field.value_type in ZERO:
                target[str(key)] = _scalar(item, field.value_type)
            elif item is not None:
                _nested(lambda: write_message(target[str(key)], item, field.value_type), str(key))
    elif field.repeated:
        items = _list(value)
        if field.type in ZERO:
            target.extend(_scalar(item, field.type) for item in items)
        else:
            for index, item in enumerate(items):
                _nested(lambda: write_message(target.add(), item, field.type), f"[{index}]")
    elif field.type in ZERO:
        setattr(msg, field.name, _scalar(value, field.type))
    else:
        target.SetInParent()
        write_message(target, value, field.type)


def _nested(write: Any, step: str) -> None:
    try:
        write()
    except ConversionError as err:
        raise err.under(step) from None


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ConversionError(f"expected a list, got {_shown(value)}")
    return value


def _integer(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bytes(value: Any) -> Any:
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else None
    except binascii.Error:
        raise ConversionError(f"illegal base64 data: {_shown(value)}") from None


SCALAR_READERS = {
    "string": lambda value: value if isinstance(value, str) else None,
    "int32": _integer,
    "int64": _integer,
    "bool": lambda value: value if isinstance(value, bool) else None,
    "double": lambda value: float(value) if isinstance(value, (int, float))
    and not isinstance(value, bool) else None,
    "bytes": _bytes,
}


def _scalar(value: Any, ftype: str) -> Any:
    """A JSON scalar as the field's type wants it."""
    converted = SCALAR_READERS[ftype](value)
    if converted is None:
        raise ConversionError(f"expected {ftype}, got {_shown(value)}")
    return converted


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
