"""Generate gpusched's protobuf descriptors from Kubernetes' ``generated.proto`` and Go types (run once per release).

Input: checkouts (or ``git archive`` trees) of kubernetes/api, kubernetes/apimachinery and
kubernetes/apiextensions-apiserver at the release gpusched emulates, for v1.35::

    for r in api apimachinery apiextensions-apiserver; do
        mkdir -p src/$r && git -C <kubernetes/$r> archive v0.35.0 | tar -x -C src/$r; done
    python scripts/gen_protobuf_descriptors.py src --release v1.35.0

Each ``generated.proto`` of the groups below gives the messages: field names, numbers, labels
and types (proto2; maps as ``map<string, T>``). The Go ``types.go`` beside it gives what the
wire format does not say and Kubernetes' JSON needs (``k8s.io/apimachinery`` marshals a field
by its Go struct tag): the JSON name, ``omitempty``, whether the Go field is a pointer (gogo
writes a non-pointer field even when it is zero, so only a pointer's presence means "set"),
``json:",inline"`` members (a Volume's VolumeSource), which Go structs are kinds (``TypeMeta``
inline) and which messages stand for a Go slice (``Verbs``). Nothing is edited by hand.

Output: ``gpusched/server/protobuf/kubernetes.json``, compact JSON::

    {"release": ..., "files": [{"name", "package", "deps", "messages": {"Pod": [[name, number,
     label ("o"/"r"), type (scalar, ".full.Name" or "map<string,T>"), json name ("" = name),
     flags ("p" pointer, "e" omitempty, "i" inline)], ...]}, "slices": [...]}],
     "kinds": {"apps/v1/Deployment": "k8s.io.api.apps.v1.Deployment", ...}}

``server.protobuf.descriptors`` builds the message classes from it at run time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# (repository, directory, API group), each after those it imports; the version is the
# directory's last part.
PACKAGES = [
    ("apimachinery", "pkg/api/resource", None),
    ("apimachinery", "pkg/util/intstr", None),
    ("apimachinery", "pkg/runtime/schema", None),
    ("apimachinery", "pkg/runtime", None),
    ("apimachinery", "pkg/apis/meta/v1", "meta.k8s.io"),
    ("api", "core/v1", ""),
    ("api", "apps/v1", "apps"),
    ("api", "batch/v1", "batch"),
    ("api", "policy/v1", "policy"),
    ("api", "scheduling/v1", "scheduling.k8s.io"),
    ("api", "storage/v1", "storage.k8s.io"),
    ("api", "coordination/v1", "coordination.k8s.io"),
    ("api", "events/v1", "events.k8s.io"),
    ("api", "autoscaling/v1", "autoscaling"),
    ("api", "autoscaling/v2", "autoscaling"),
    ("api", "networking/v1", "networking.k8s.io"),
    ("api", "node/v1", "node.k8s.io"),
    ("api", "rbac/v1", "rbac.authorization.k8s.io"),
    ("api", "discovery/v1", "discovery.k8s.io"),
    ("api", "resource/v1", "resource.k8s.io"),
    ("apiextensions-apiserver", "pkg/apis/apiextensions/v1", "apiextensions.k8s.io"),
]
# meta/v1 kinds kube-apiserver also serves in the core group ("v1"): errors, delete options.
CORE_ALIASES = ("Status", "DeleteOptions", "WatchEvent")

FIELD = re.compile(r"^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;")
MAP_FIELD = re.compile(r"^\s*map<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;")
GO_STRUCT = re.compile(r"^type (\w+) struct \{")
GO_SLICE = re.compile(r"^type (\w+) \[\]")
GO_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\*?)([\w.\[\]*]+)\s+`([^`]*)`")
SCALARS = ("string", "int32", "int64", "bool", "bytes", "double")


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def parse_proto(text: str) -> tuple[str, list[str], dict[str, list[tuple[str, int, str, str]]]]:
    """(package, imports, {message: [(name, number, label, type)]}) of one generated.proto."""
    package, imports, messages, current = "", [], {}, None
    for line in strip_comments(text).splitlines():
        line = line.strip()
        if line.startswith("package "):
            package = line[len("package "):].rstrip(";").strip()
        elif line.startswith("import "):
            imports.append(line.split('"')[1])
        elif line.startswith("message "):
            current = line.split()[1]
            messages[current] = []
        elif line == "}":
            current = None
        elif current is not None and (m := FIELD.match(line)):
            label, ftype, name, number = m.groups()
            messages[current].append((name, int(number), "r" if label == "repeated" else "o", ftype))
        elif current is not None and (m := MAP_FIELD.match(line)):
            key, value, name, number = m.groups()
            messages[current].append((name, int(number), "r", f"map<{key},{value}>"))
        elif current is not None and line and not line.startswith(("option", "reserved")):
            raise SystemExit(f"unparsed line in message {current}: {line}")
    return package, imports, messages


def parse_go(directory: Path) -> tuple[dict[str, dict[str, tuple[str, str]]], set[str], set[str]]:
    """({struct: {proto name: (json name, flags)}}, kinds, slice types) of a Go package."""
    structs: dict[str, dict[str, tuple[str, str]]] = {}
    kinds, slices = set(), set()
    for path in sorted(directory.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        current = None
        for line in path.read_text().splitlines():
            if m := GO_STRUCT.match(line):
                current = m.group(1)
                structs[current] = {}
                continue
            if m := GO_SLICE.match(line):
                slices.add(m.group(1))
            if current is None:
                continue
            if line.startswith("}"):
                current = None
                continue
            m = GO_FIELD.match(line)
            if m is None:
                continue
            name, pointer, gotype, tags = m.groups()
            json_tag = re.search(r'json:"([^"]*)"', tags)
            proto_tag = re.search(r'protobuf:"[^"]*name=(\w+)', tags)
            json_parts = json_tag.group(1).split(",") if json_tag else [""]
            if name is None and gotype.endswith("TypeMeta") and "inline" in json_parts:
                kinds.add(current)
            if proto_tag is None:
                continue
            flags = ("p" if pointer or gotype.startswith("*") else "") + \
                    ("e" if "omitempty" in json_parts else "") + ("i" if "inline" in json_parts else "")
            structs[current][proto_tag.group(1)] = (json_parts[0], flags)
    return structs, kinds, slices


def build(root: Path, release: str) -> dict:
    files, all_kinds = [], {}
    for repo, directory, group in PACKAGES:
        source = root / repo / directory
        package, imports, messages = parse_proto((source / "generated.proto").read_text())
        structs, kinds, slices = parse_go(source)
        out_messages = {}
        for message, fields in messages.items():
            go = structs.get(message, {})
            rows = []
            for name, number, label, ftype in fields:
                if ftype not in SCALARS and not ftype.startswith((".", "map<")):
                    ftype = f".{package}.{ftype}"
                if ftype.startswith("map<"):
                    key, value = ftype[4:-1].split(",")
                    if value not in SCALARS and not value.startswith("."):
                        value = f".{package}.{value}"
                    ftype = f"map<{key},{value}>"
                json_name, flags = go.get(name, (name, "e"))
                rows.append([name, number, label, ftype, "" if json_name == name else json_name, flags])
            out_messages[message] = rows
        files.append({"name": f"k8s.io/{repo}/{directory}/generated.proto",
                      "package": package, "deps": imports, "messages": out_messages,
                      "slices": sorted(s for s in slices if s in messages)})
        if group is not None:
            version = directory.rsplit("/", 1)[1]
            api_version = f"{group}/{version}" if group else version
            for kind in sorted(kinds):
                if kind in messages:
                    all_kinds[f"{api_version}/{kind}"] = f"{package}.{kind}"
                    if group == "meta.k8s.io" and kind in CORE_ALIASES:
                        all_kinds[f"v1/{kind}"] = f"{package}.{kind}"
    # WatchEvent has no TypeMeta in Go but is a kind of its own on the wire
    all_kinds["meta.k8s.io/v1/WatchEvent"] = all_kinds["v1/WatchEvent"] = \
        "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent"
    return {"release": release, "files": files, "kinds": dict(sorted(all_kinds.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path, help="folder holding api/, apimachinery/, apiextensions-apiserver/")
    parser.add_argument("--release", required=True)
    parser.add_argument("--out", type=Path, default=Path("gpusched/server/protobuf/kubernetes.json"))
    args = parser.parse_args(argv)
    data = build(args.root, args.release)
    args.out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{args.out}: {sum(len(f['messages']) for f in data['files'])} messages, "
          f"{len(data['kinds'])} kinds", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
