"""The messages whose JSON is not their fields: Go types with their own JSON marshalling.

Each entry reads a message into its JSON value and writes a JSON value into a message, as the
Go type's ``MarshalJSON``/``UnmarshalJSON`` and its protobuf fields do (apimachinery
``pkg/apis/meta/v1/time.go``, ``micro_time.go``, ``duration.go``, ``pkg/api/resource/quantity.go``,
``pkg/util/intstr/intstr.go``, ``pkg/runtime/types.go`` RawExtension, ``meta/v1`` FieldsV1,
apiextensions ``JSON`` and the ``JSONSchemaPropsOr*`` unions):

- ``Time`` {seconds, nanos} <-> ``"2006-01-02T15:04:05Z"`` (whole seconds, UTC; zero: null);
  ``MicroTime`` the same with six fractional digits;
- ``Duration`` {duration: nanoseconds} <-> Go's ``time.Duration`` string (``"1h0m0s"``);
- ``Quantity`` {string} <-> its string; ``IntOrString`` {type, intVal, strVal} <-> 3 or "3";
- ``RawExtension``, ``FieldsV1``, ``JSON`` {raw bytes} <-> the JSON value the bytes hold (a
  ``RawExtension`` may hold a protobuf object instead: ``envelope`` decodes those).

Neighbours: ``server.protobuf.convert`` (calls :data:`READERS` / :data:`WRITERS`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Callable

from gpusched.objects import limits

META = "k8s.io.apimachinery.pkg.apis.meta.v1."
TIME, MICRO_TIME, DURATION, FIELDS_V1 = (META + "Time", META + "MicroTime", META + "Duration",
                                         META + "FieldsV1")
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"
EXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."
JSON_VALUE = EXT + "JSON"
PROPS_OR_ARRAY, PROPS_OR_BOOL, PROPS_OR_STRINGS = (EXT + "JSONSchemaPropsOrArray",
                                                   EXT + "JSONSchemaPropsOrBool",
                                                   EXT + "JSONSchemaPropsOrStringArray")
PROPS = EXT + "JSONSchemaProps"
UNITS = (("h", 3600 * 10**9), ("m", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("us", 10**3),
         ("µs", 10**3), ("ns", 1))
DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


class ConversionError(ValueError):
    """A value that does not fit its field: ``str()`` is ``<field path>: <reason>``."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.reason, self.path = reason, path

    def under(self, step: str) -> "ConversionError":
        """The same error one level up: ``step`` is a field name, ``[3]`` or a map key."""
        joined = step + ("" if not self.path or self.path.startswith("[") else ".") + self.path
        return ConversionError(self.reason, joined)


# Read: (message, read_nested(message, full_name)) -> JSON value
Reader = Callable[[Any, Callable[[Any, str], Any]], Any]
# Write: (message, value, write_nested(message, value, full_name)) -> None
Writer = Callable[[Any, Any, Callable[[Any, Any, str], None]], None]


def format_time(seconds: int, nanos: int, micro: bool) -> str | None:
    """RFC 3339 in UTC, as metav1.Time (seconds) or MicroTime (microseconds) marshal.

    >>> format_time(1700000000, 123456789, False), format_time(1700000000, 123456789, True)
    ('2023-11-14T22:13:20Z', '2023-11-14T22:13:20.123456Z')
    """
    if seconds == 0 and nanos == 0:
        return None
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{nanos // 1000:06d}Z" if micro else text + "Z"


def parse_time(value: Any) -> tuple[int, int]:
    """An RFC 3339 string -> (seconds, nanoseconds) since the epoch.

    >>> parse_time("2023-11-14T22:13:20.5Z"), parse_time("2023-11-14T23:13:20+01:00")
    ((1700000000, 500000000), (1700000000, 0))
    """
    if not isinstance(value, str):
        raise ConversionError(f"not a time: {value!r}")
    text = value.strip()
    fraction = 0
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text)
    if match is None:
        raise ConversionError(f'parsing time "{value}": not RFC 3339')
    base, frac, zone = match.groups()
    if frac:
        fraction = int((frac[1:] + "000000000")[:9])
    try:
        moment = datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
    except ValueError as err:
        raise ConversionError(f'parsing time "{value}": {err}') from None
    return int(moment.timestamp()), fraction


def format_duration(nanoseconds: int) -> str:
    """Go's ``time.Duration.String``.

    >>> [format_duration(n) for n in (0, 1500, 2 * 10**9, 90 * 10**9, 3600 * 10**9, -5 * 10**6)]
    ['0s', '1.5µs', '2s', '1m30s', '1h0m0s', '-5ms']
    """
    if nanoseconds == 0:
        return "0s"
    sign, n = ("-" if nanoseconds < 0 else ""), abs(nanoseconds)
    if n < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if n >= size:
                return sign + _decimal(n, size) + unit
    hours, rest = divmod(n, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _decimal(rest, 10**9) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0") if fraction else ""
    return f"{whole}.{digits}" if digits else str(whole)


def parse_duration(value: Any) -> int:
    """Go's ``time.ParseDuration`` -> nanoseconds.

    >>> parse_duration("1h30m"), parse_duration("1.5s"), parse_duration("-2ms")
    (5400000000000, 1500000000, -2000000)
    """
    text = value if isinstance(value, str) else ""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body == "0":
        return 0
    parts = DURATION_PART.findall(body)
    if not body or "".join(a + b for a, b in parts) != body:
        raise ConversionError(f'time: invalid duration "{value}"')
    total = 0.0
    for number, unit in parts:
        total += float(number) * dict(UNITS)[unit]
    return sign * int(total)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _json_value(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return limits.json_loads(raw.decode("utf-8"))
    except (ValueError, limits.LimitError) as err:
        raise ConversionError(f"embedded JSON: {err}") from None


# A RawExtension may hold a whole enveloped object; reading one is ``envelope.decode_object``,
# which reads messages through ``convert`` and so through this module: ``envelope`` hands its
# reader in when it is imported (every decode starts there), instead of a circular import.
_OBJECT_DECODER: list[Callable[[bytes], Any]] = []


def use_object_decoder(decoder: Callable[[bytes], Any]) -> None:
    """Called by ``envelope`` at import: how an enveloped object inside a RawExtension is read."""
    _OBJECT_DECODER[:] = [decoder]


def _read_raw_extension(raw: bytes) -> Any:
    """A RawExtension's JSON, or the object it holds in protobuf (a watch event's object)."""
    if raw[:4] != b"k8s\x00":
        return _json_value(raw)
    try:
        return _OBJECT_DECODER[0](raw)
    except ValueError as err:
        raise ConversionError(str(err)) from None


def text(value: Any) -> str:
    """A proto2 string field's value: not checked for UTF-8 on the wire, so bad bytes come
    back as ``bytes``; Go's JSON writes U+FFFD for each."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _read_int_or_string(msg: Any, _: Any) -> Any:
    return text(msg.strVal) if msg.type == 1 else msg.intVal


def _write_int_or_string(msg: Any, value: Any, _: Any) -> None:
    if isinstance(value, str):
        msg.type, msg.strVal = 1, value
    elif isinstance(value, int) and not isinstance(value, bool):
        msg.type, msg.intVal = 0, value
    else:
        raise ConversionError(f"not an int or a string: {value!r}")


def _write_time(msg: Any, value: Any, _: Any) -> None:
    msg.seconds, msg.nanos = parse_time(value)


def _write_quantity(msg: Any, value: Any, _: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConversionError(f"not a quantity: {value!r}")
    msg.string = value if isinstance(value, str) else json.dumps(value)


def _write_raw(msg: Any, value: Any, _: Any) -> None:
    msg.raw = _json_bytes(value)


def _write_fields(msg: Any, value: Any, _: Any) -> None:
    msg.Raw = _json_bytes(value)


def _read_props_or_array(msg: Any, nested: Any) -> Any:
    if len(msg.jSONSchemas):
        return [nested(item, PROPS) for item in msg.jSONSchemas]
    return nested(msg.schema, PROPS)


def _write_props_or_array(msg: Any, value: Any, nested: Any) -> None:
    if isinstance(value, list):
        for item in value:
            nested(msg.jSONSchemas.add(), item, PROPS)
    else:
        nested(msg.schema, value, PROPS)


def _read_props_or_bool(msg: Any, nested: Any) -> Any:
    return nested(msg.schema, PROPS) if msg.HasField("schema") else msg.allows


def _write_props_or_bool(msg: Any, value: Any, nested: Any) -> None:
    if isinstance(value, bool):
        msg.allows = value
    else:
        msg.allows = True
        nested(msg.schema, value, PROPS)


def _read_props_or_strings(msg: Any, nested: Any) -> Any:
    return [text(item) for item in msg.property] if len(msg.property) else nested(msg.schema, PROPS)


def _write_props_or_strings(msg: Any, value: Any, nested: Any) -> None:
    if isinstance(value, list):
        msg.property.extend(str(item) for item in value)
    else:
        nested(msg.schema, value, PROPS)


READERS: dict[str, Reader] = {
    TIME: lambda msg, _: format_time(msg.seconds, msg.nanos, False),
    MICRO_TIME: lambda msg, _: format_time(msg.seconds, msg.nanos, True),
    DURATION: lambda msg, _: format_duration(msg.duration),
    QUANTITY: lambda msg, _: text(msg.string),
    INT_OR_STRING: _read_int_or_string,
    RAW_EXTENSION: lambda msg, _: _read_raw_extension(msg.raw),
    FIELDS_V1: lambda msg, _: _json_value(msg.Raw),
    JSON_VALUE: lambda msg, _: _json_value(msg.raw),
    PROPS_OR_ARRAY: _read_props_or_array,
    PROPS_OR_BOOL: _read_props_or_bool,
    PROPS_OR_STRINGS: _read_props_or_strings,
}
WRITERS: dict[str, Writer] = {
    TIME: _write_time,
    MICRO_TIME: _write_time,
    DURATION: lambda msg, value, _: setattr(msg, "duration", parse_duration(value)),
    QUANTITY: _write_quantity,
    INT_OR_STRING: _write_int_or_string,
    RAW_EXTENSION: _write_raw,
    FIELDS_V1: _write_fields,
    JSON_VALUE: _write_raw,
    PROPS_OR_ARRAY: _write_props_or_array,
    PROPS_OR_BOOL: _write_props_or_bool,
    PROPS_OR_STRINGS: _write_props_or_strings,
}
