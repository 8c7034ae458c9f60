"""Kubernetes' protobuf messages, built at run time from ``kubernetes.json`` beside this module.

``scripts/gen_protobuf_descriptors.py`` turns the release's ``generated.proto`` files (and the Go
struct tags beside them) into that file; here each file becomes a ``FileDescriptorProto`` in a
pool of its own, and ``message_factory`` makes a class per message: the ``protobuf`` library
reads and writes the wire format, nothing here does.

:class:`Field` keeps, for each message field, what Kubernetes' JSON needs and the wire does not
say: the JSON name, ``omitempty``, whether the Go field is a pointer, and ``inline`` members.
:func:`schema` loads everything once, on first use (serve answers protobuf only when asked).

Neighbours: ``server.protobuf.convert`` (dicts <-> messages), ``server.protobuf.envelope``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DATA_FILE = "kubernetes.json"
SCALARS = {
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
}
ZERO = {"string": "", "int32": 0, "int64": 0, "bool": False, "bytes": b"", "double": 0.0}


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message as Kubernetes' JSON sees it."""

    name: str               # the proto (and message class) attribute
    json: str               # the JSON key
    repeated: bool
    type: str               # a scalar name, a message's full name, or "map"
    value_type: str         # a map's value type (scalar or message full name); else ""
    pointer: bool           # Go *T: presence on the wire means "set", zero included
    omitempty: bool
    inline: bool            # json:",inline": the message's fields sit in the parent's JSON


@dataclass(frozen=True)
class Schema:
    """The messages of one release: classes, fields, and the kinds they encode."""

    classes: dict[str, Any]                   # full name -> message class
    fields: dict[str, tuple[Field, ...]]      # full name -> its fields, in proto order
    kinds: dict[str, str]                     # "apps/v1/Deployment" -> full name
    slices: frozenset[str]                    # messages standing for a Go slice (Verbs)
    # indexes of ``fields`` per message: by proto name, by JSON key (inline members apart),
    # the inline members, and the scalars Go's JSON writes even when zero
    by_name: dict[str, dict[str, Field]] = field(default_factory=dict)
    by_json: dict[str, dict[str, Field]] = field(default_factory=dict)
    inline: dict[str, tuple[Field, ...]] = field(default_factory=dict)
    always: dict[str, tuple[Field, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, own in self.fields.items():
            self.by_name[name] = {f.name: f for f in own}
            self.by_json[name] = {f.json: f for f in own if not f.inline}
            self.inline[name] = tuple(f for f in own if f.inline)
            self.always[name] = tuple(f for f in own if f.type in ZERO and not f.repeated
                                      and not f.pointer and not f.omitempty)

    def message_for(self, api_version: str, kind: str) -> str | None:
        return self.kinds.get(f"{api_version}/{kind}")


def _field(row: list[Any], entries: list[Any]) -> tuple[descriptor_pb2.FieldDescriptorProto, Field]:
    name, number, label, ftype, json_name, flags = row
    proto = descriptor_pb2.FieldDescriptorProto(name=name, number=number)
    proto.label = proto.LABEL_REPEATED if label == "r" else proto.LABEL_OPTIONAL
    value_type = ""
    if ftype.startswith("map<"):
        key, value_type = ftype[4:-1].split(",")
        entry = descriptor_pb2.DescriptorProto(name=name[0].upper() + name[1:] + "Entry")
        entry.options.map_entry = True
        for index, (sub, subtype) in enumerate((("key", key), ("value", value_type)), 1):
            sub_proto = entry.field.add(name=sub, number=index, label=proto.LABEL_OPTIONAL)
            _set_type(sub_proto, subtype)
        entries.append(entry)
        proto.type = proto.TYPE_MESSAGE              # type_name: the owner's nested entry
        value_type = value_type.lstrip(".")
        kind = "map"
    else:
        _set_type(proto, ftype)
        kind = ftype.lstrip(".")
    return proto, Field(name, json_name or name, label == "r", kind, value_type, "p" in flags,
                        "e" in flags, "i" in flags)


def _set_type(proto: descriptor_pb2.FieldDescriptorProto, ftype: str) -> None:
    if ftype in SCALARS:
        proto.type = SCALARS[ftype]
    else:
        proto.type = proto.TYPE_MESSAGE
        proto.type_name = ftype


def _file_proto(entry: dict[str, Any], fields: dict[str, tuple[Field, ...]]) -> descriptor_pb2.FileDescriptorProto:
    package = entry["package"]
    out = descriptor_pb2.FileDescriptorProto(name=entry["name"], package=package, syntax="proto2")
    out.dependency.extend(entry["deps"])
    for message, rows in entry["messages"].items():
        proto = out.message_type.add(name=message)
        entries: list[Any] = []
        own: list[Field] = []
        for row in rows:
            field_proto, field = _field(row, entries)
            if field.type == "map":
                field_proto.type_name = f".{package}.{message}.{entries[-1].name}"
            proto.field.append(field_proto)
            own.append(field)
        proto.nested_type.extend(entries)
        fields[f"{package}.{message}"] = tuple(own)
    return out


@functools.cache
def schema() -> Schema:
    """The release's messages (built once; about a quarter of a second)."""
    data = json.loads(resources.files(__package__).joinpath(DATA_FILE).read_text())
    pool = descriptor_pool.DescriptorPool()
    fields: dict[str, tuple[Field, ...]] = {}
    slices: set[str] = set()
    for entry in data["files"]:
        pool.Add(_file_proto(entry, fields))
        slices.update(f"{entry['package']}.{name}" for name in entry["slices"])
    classes = {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
               for name in fields}
    return Schema(classes, fields, dict(data["kinds"]), frozenset(slices))
