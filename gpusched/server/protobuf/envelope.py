"""Kubernetes' protobuf envelope: the ``k8s\\x00`` magic, ``runtime.Unknown``, watch frames.

apimachinery ``pkg/runtime/serializer/protobuf/protobuf.go``: an object is the four bytes
``6b 38 73 00`` then a ``runtime.Unknown`` {typeMeta {apiVersion, kind}, raw: the object's own
message, contentEncoding, contentType}. A watch stream (``;stream=watch``) is the raw
serializer's ``metav1.WatchEvent`` messages, each preceded by its length as four big-endian
bytes (``pkg/util/framer``: ``LengthDelimitedFramer``); the event's ``object`` RawExtension
holds the object in the full envelope, magic included (apiserver handlers/watch.go: the
embedded encoder is the negotiated serializer).

Decoding refuses what the serializer refuses, worded as apiserver handlers/rest.go
``transformDecodeError`` words it: no magic, an unreadable envelope, a kind with no message
(``no kind "X" is registered for version "v"``), an object that does not parse. Unknown field
numbers are skipped (gogo's ``skipGenerated``), and the parser's depth limit (upb: 100 levels)
and :data:`MAX_NESTED_OBJECTS` bound nesting.

Neighbours: ``server.protobuf.convert``, ``server.protobuf.negotiate``, ``server.watch``.
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from google.protobuf.message import DecodeError

from gpusched.server.protobuf.convert import read_message, write_message
from gpusched.server.protobuf.descriptors import schema
from gpusched.server.protobuf.special import ConversionError, text, use_object_decoder

MAGIC = b"k8s\x00"
UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
WATCH_EVENT = "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent"
MAX_NESTED_OBJECTS = 8           # objects inside RawExtensions inside objects ...
_depth = threading.local()


class ProtobufDecodeError(ValueError):
    """A body the protobuf serializer cannot decode; ``str()`` is kube-apiserver's wording."""


def _summary(data: bytes, limit: int = 30) -> str:
    """apiserver handlers/rest.go ``summarizeData``."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        text = data[:limit].decode("utf-8", "replace")
        return text + " ..." if len(data) > limit else text
    return data[:limit].hex() + (" ..." if len(data) > limit else "")


def has_message(api_version: str, kind: str) -> bool:
    return schema().message_for(api_version, kind) is not None


def decode_object(data: bytes, api_version: str = "", kind: str = "") -> dict[str, Any]:
    """An enveloped object -> its JSON dict (with apiVersion and kind); ``api_version`` and
    ``kind`` default what the envelope leaves empty (the URL's kind, as upstream)."""
    expected = kind or "object"
    if not data:
        raise ProtobufDecodeError(f"the object provided is unrecognized (must be of type {expected}): "
                                  "empty data (<empty>)")
    if len(data) < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise ProtobufDecodeError(
            f"the object provided is unrecognized (must be of type {expected}): provided data does "
            f"not appear to be a protobuf message, expected prefix [107 56 115 0] ({_summary(data)})")
    if len(data) == len(MAGIC):
        raise ProtobufDecodeError(f"the object provided is unrecognized (must be of type {expected}): "
                                  f"empty body ({_summary(data)})")
    unknown = schema().classes[UNKNOWN]()
    try:
        unknown.ParseFromString(data[len(MAGIC):])
    except DecodeError as err:
        raise ProtobufDecodeError(f"the object provided is unrecognized (must be of type {expected}): "
                                  f"{err} ({_summary(data)})") from None
    actual_version = text(unknown.typeMeta.apiVersion) or api_version
    actual_kind = text(unknown.typeMeta.kind) or kind
    return _decode_raw(unknown.raw, actual_version, actual_kind, kind or actual_kind)


def _decode_raw(raw: bytes, api_version: str, kind: str, expected: str) -> dict[str, Any]:
    known = schema()
    name = known.message_for(api_version, kind)
    if name is None:
        version = api_version.rpartition("/")[2]
        raise ProtobufDecodeError(f'no kind "{kind}" is registered for version "{api_version}"'
                                  if kind else f"Object 'Kind' is missing in '{version}'")
    depth = getattr(_depth, "value", 0)
    if depth >= MAX_NESTED_OBJECTS:
        raise ProtobufDecodeError(f"{kind} in version {api_version!r} cannot be handled as a "
                                  f"{expected}: objects nested more than {MAX_NESTED_OBJECTS} deep")
    _depth.value = depth + 1
    try:
        message = known.classes[name]()
        message.ParseFromString(raw)
        body = read_message(message, name)
    except (DecodeError, ConversionError, RecursionError, UnicodeDecodeError) as err:
        # UnicodeDecodeError: a map key that is not UTF-8 (the library will not hand it out)
        raise ProtobufDecodeError(f'{kind} in version "{api_version.rpartition("/")[2]}" cannot be '
                                  f"handled as a {expected}: {err}") from None
    finally:
        _depth.value = depth
    return {"apiVersion": api_version, "kind": kind, **body}


def encode_object(obj: dict[str, Any]) -> bytes | None:
    """An object dict -> the enveloped protobuf; None when its kind has no message."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    known = schema()
    name = known.message_for(api_version, kind)
    if name is None:
        return None
    message = known.classes[name]()
    write_message(message, obj, name)
    unknown = known.classes[UNKNOWN]()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    unknown.raw = message.SerializeToString()
    return MAGIC + bytes(unknown.SerializeToString())


def encode_event(event_type: str, obj: dict[str, Any]) -> bytes:
    """One watch event, framed; ConversionError when ``obj``'s kind has no message."""
    known = schema()
    event = known.classes[WATCH_EVENT]()
    event.type = event_type
    embedded = encode_object(obj)
    if embedded is None:
        raise ConversionError(f"no protobuf message for {obj.get('apiVersion')}/{obj.get('kind')}")
    event.object.raw = embedded
    data = event.SerializeToString()
    return struct.pack(">I", len(data)) + bytes(data)


def read_frames(stream: bytes) -> list[bytes]:
    """The frames of a length-delimited stream (tests and tools; a cut last frame is dropped)."""
    frames, offset = [], 0
    while offset + 4 <= len(stream):
        (size,) = struct.unpack(">I", stream[offset:offset + 4])
        if offset + 4 + size > len(stream):
            break
        frames.append(stream[offset + 4:offset + 4 + size])
        offset += 4 + size
    return frames


def decode_event(frame: bytes) -> tuple[str, dict[str, Any]]:
    """A watch frame -> (type, object)."""
    event = schema().classes[WATCH_EVENT]()
    try:
        event.ParseFromString(frame)
    except DecodeError as err:
        raise ProtobufDecodeError(str(err)) from None
    return text(event.type), decode_object(event.object.raw)


use_object_decoder(decode_object)     # a RawExtension holding an enveloped object (special.py)
