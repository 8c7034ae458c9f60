"""Generate gpusched's field schemas from the official Kubernetes OpenAPI spec (run once per release).

Input: the ``swagger.json`` that kubernetes/kubernetes publishes at ``api/openapi-spec/swagger.json``
on a release branch. The official Python client keeps that very file, unmodified, as
``kubernetes/swagger.json.unprocessed`` in each release tag, so for v1.35::

    git -C <kubernetes-client/python> show v35.0.0:kubernetes/swagger.json.unprocessed > swagger.json
    python scripts/gen_openapi_schemas.py swagger.json --release v1.35 \
        --source "kubernetes-client/python v35.0.0 kubernetes/swagger.json.unprocessed (release-1.35)"

Output: ``gpusched/objects/schemas/kubernetes.json``: the definitions reachable from the kinds
gpusched serves (``KINDS`` below), trimmed to the keys strict decoding, defaulting-free pruning
and ``kubectl explain`` read (type, format, description, properties, items, additionalProperties,
$ref, required, enum and every ``x-kubernetes-*`` extension: group-version-kind, patch strategy
and merge key, list type and map keys, int-or-string, preserve-unknown-fields). Nothing is
edited by hand; gpusched's own kinds are in ``gpusched/objects/schemas/own/`` instead.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

# (apiVersion, kind) of every Kubernetes kind gpusched stores or accepts in a request body.
KINDS = (
    ("v1", "Namespace"), ("v1", "Node"), ("v1", "Pod"), ("v1", "ConfigMap"), ("v1", "Event"),
    ("v1", "ResourceQuota"), ("v1", "LimitRange"), ("v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume"), ("v1", "Service"), ("v1", "Endpoints"), ("v1", "ServiceAccount"),
    ("v1", "Secret"), ("v1", "Binding"), ("v1", "ReplicationController"),
    ("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"), ("apps/v1", "DaemonSet"),
    ("apps/v1", "StatefulSet"), ("apps/v1", "ControllerRevision"),
    ("batch/v1", "Job"), ("batch/v1", "CronJob"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("policy/v1", "PodDisruptionBudget"), ("policy/v1", "Eviction"),
    ("coordination.k8s.io/v1", "Lease"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    ("storage.k8s.io/v1", "StorageClass"), ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "CSIDriver"), ("storage.k8s.io/v1", "CSIStorageCapacity"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
    ("resource.k8s.io/v1", "DeviceClass"), ("resource.k8s.io/v1", "ResourceSlice"),
    ("resource.k8s.io/v1", "ResourceClaim"), ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"), ("autoscaling/v1", "Scale"),
    ("events.k8s.io/v1", "Event"),
    ("v1", "Status"), ("v1", "DeleteOptions"),
)
KEEP = ("type", "format", "description", "properties", "items", "additionalProperties", "$ref",
        "required", "enum")


def gvk_of(definition: dict) -> list[tuple[str, str]]:
    out = []
    for gvk in definition.get("x-kubernetes-group-version-kind") or ():
        group, version = gvk.get("group", ""), gvk["version"]
        out.append((f"{group}/{version}" if group else version, gvk["kind"]))
    return out


def find_roots(definitions: dict) -> dict[str, str]:
    """``"apps/v1 Deployment"`` -> definition name, for every wanted kind."""
    wanted = set(KINDS)
    roots: dict[str, str] = {}
    for name, definition in definitions.items():
        for api_version, kind in gvk_of(definition):
            if (api_version, kind) in wanted and (kind != "DeleteOptions" or name.endswith("meta.v1.DeleteOptions")):
                roots.setdefault(f"{api_version} {kind}", name)
    missing = sorted(f"{a} {k}" for a, k in wanted if f"{a} {k}" not in roots)
    if missing:
        sys.exit(f"kinds missing from the spec: {', '.join(missing)}")
    return roots


def trim(node: object) -> object:
    """Keep the keys listed in KEEP and every x-kubernetes-* extension, recursively."""
    if isinstance(node, list):
        return [trim(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {prop: trim(schema) for prop, schema in value.items()}
        elif key.startswith("x-kubernetes-"):
            out[key] = value          # extension values are data (group-version-kind maps), kept whole
        elif key in KEEP:
            out[key] = trim(value)
    return out


def refs(node: object) -> set[str]:
    if isinstance(node, list):
        return set().union(*(refs(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {node["$ref"].rpartition("/")[2]} if isinstance(node.get("$ref"), str) else set()
    for value in node.values():
        found |= refs(value)
    return found


def reachable(definitions: dict, roots: list[str]) -> list[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(refs(definitions[name]) - seen)
    return sorted(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("swagger", help="the official swagger.json of one release")
    parser.add_argument("--release", required=True, help="e.g. v1.35")
    parser.add_argument("--source", required=True, help="where the swagger.json came from")
    parser.add_argument("-o", "--output", default="gpusched/objects/schemas/kubernetes.json")
    args = parser.parse_args()
    with open(args.swagger, "rb") as handle:
        raw = handle.read()
    spec = json.loads(raw)
    definitions = spec["definitions"]
    roots = find_roots(definitions)
    names = reachable(definitions, sorted(set(roots.values())))
    out = {"release": args.release, "source": args.source,
           "sha256": hashlib.sha256(raw).hexdigest(),
           "kinds": dict(sorted(roots.items())),
           "definitions": {name: trim(definitions[name]) for name in names}}
    with open(args.output, "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=None, separators=(",", ":"), sort_keys=True)
        handle.write("\n")
    print(f"{args.output}: {len(roots)} kinds, {len(names)} definitions")


if __name__ == "__main__":
    main()
