"""Shared pieces of the strict-decoding fuzz tests: valid base objects, schema-guided mutations.

A mutation takes one valid base object and either plants an unknown field in a random object of
it that the schema closes (a struct, not a map or a preserve-unknown-fields object), repeats a key
of such an object (sent as JSON text with the key twice), or gives a random scalar field a value
of another JSON type. ``Mutation.expected`` is the one-line message kube-apiserver answers with
under ``fieldValidation=Strict`` (apimachinery runtime.NewStrictDecodingError wrapped by apiserver
handlers/rest.go transformDecodeError), or for a type error its stable prefix
(sigs.k8s.io/json UnmarshalTypeError / apiextensions' ``must be of type``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from hypothesis import strategies as st

from gpusched.objects.kinds import KINDS
from gpusched.objects.schema import ref_name, resolve, schema_for

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# Fields the manifest loader checks before decoding (objects.manifest: a document needs string
# apiVersion, kind and metadata.name), with gpusched's own one-line messages.
FRONT_DOOR = ("apiVersion", "kind", "metadata.name", "metadata.generateName", "metadata.namespace")
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

_POD_SPEC = {
    "priorityClassName": "high",
    "nodeSelector": {"gpu-type": "a100"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["a100"]}]}]}}},
    "containers": [{"name": "train", "image": "pytorch:2", "command": ["python", "train.py"],
                    "env": [{"name": "EPOCHS", "value": "3"}],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "2", "memory": "4Gi"}}}],
    "restartPolicy": "Never",
}
BASES = [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fuzz-pod", "labels": {"app": "fuzz"},
                                                     "annotations": {"gpusched.io/duration": "1h"}},
     "spec": _POD_SPEC},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "fuzz-deploy"},
     "spec": {"replicas": 2, "revisionHistoryLimit": 3, "paused": False,
              "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
              "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {**_POD_SPEC, "restartPolicy": "Always"}}}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "fuzz-job"},
     "spec": {"completions": 2, "parallelism": 1, "backoffLimit": 2, "template": {"spec": _POD_SPEC}}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fuzz-cm"}, "data": {"a": "1"}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "fuzz-pc"},
     "value": 1000, "globalDefault": False, "description": "fuzz"},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "fuzz-quota"},
     "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "fuzz-pdb"},
     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
    {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "fuzz-pool"},
     "spec": {"count": 1, "gpu": {"model": "A100-40GB", "count": 2}, "cpu": "16", "memory": "64Gi",
              "labels": {"pool": "fuzz"}, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}},
]
BASES = [b for b in BASES if b["kind"] in KINDS]


@dataclass(frozen=True)
class Slot:
    """A place in a base object: a closed object (``props``) or a scalar field (``scalar``)."""

    keys: tuple              # path of keys/indices from the root
    path: str                # the path as the decoder prints it
    props: frozenset = frozenset()
    scalar: str = ""         # "string" | "integer" | "boolean" | "number"


def slots(node: dict, value: object, keys: tuple = (), path: str = "") -> list[Slot]:
    """Every closed object and typed scalar of ``value`` along the schema ``node``."""
    if value is None or ref_name(node) in (QUANTITY, INT_OR_STRING):
        return []
    resolved = resolve(node)
    if resolved.get("x-kubernetes-int-or-string"):
        return []
    kind = resolved.get("type")
    out: list[Slot] = []
    if isinstance(value, dict) and (kind == "object" or "properties" in resolved):
        props = resolved.get("properties")
        if props is None:
            return []
        if not resolved.get("x-kubernetes-preserve-unknown-fields"):
            out.append(Slot(keys, path, frozenset(props)))
        for key, item in value.items():
            if key in props:
                out += slots(props[key], item, (*keys, key), f"{path}.{key}" if path else key)
        return out
    if isinstance(value, list) and kind == "array":
        for i, item in enumerate(value):
            out += slots(resolved.get("items") or {}, item, (*keys, i), f"{path}[{i}]")
        return out
    if kind in ("string", "integer", "boolean", "number") and path not in FRONT_DOOR:
        return [Slot(keys, path, scalar=kind)]
    return out


def base_slots(base: dict) -> list[Slot]:
    info = schema_for(base["apiVersion"], base["kind"])
    return slots({"$ref": f"#/definitions/{info.name}"}, base)


def _at(obj: object, keys: tuple) -> object:
    for key in keys:
        obj = obj[key]  # type: ignore[index]
    return obj


@dataclass(frozen=True)
class Mutation:
    kind: str
    obj: dict
    text: str                # the body as sent (JSON; duplicates only exist in text)
    expected: str            # exact message (strict findings) or prefix (type errors)
    exact: bool


def _strict(base: dict, finding: str) -> str:
    version = base["apiVersion"].rpartition("/")[2]
    return f'{base["kind"]} in version "{version}" cannot be handled as a {base["kind"]}: strict decoding error: {finding}'


def _dumps_with_duplicate(obj: object, keys: tuple, key: str) -> str:
    """JSON text of ``obj`` where the object at ``keys`` gives ``key`` twice."""
    def emit(value: object, here: tuple) -> str:
        if isinstance(value, dict):
            parts = [f"{json.dumps(k)}: {emit(v, (*here, k))}" for k, v in value.items()]
            if here == keys:
                parts.append(f"{json.dumps(key)}: {emit(value[key], (*here, key))}")
            return "{" + ", ".join(parts) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(emit(v, (*here, i)) for i, v in enumerate(value)) + "]"
        return json.dumps(value)
    return emit(obj, ())


WRONG = {"string": st.one_of(st.integers(-5, 5), st.booleans(), st.just([]), st.just({})),
         "integer": st.one_of(st.text(max_size=4), st.booleans(), st.just([1]), st.just({"a": 1})),
         "number": st.one_of(st.text(max_size=4), st.booleans(), st.just({})),
         "boolean": st.one_of(st.text(max_size=4), st.integers(0, 3), st.just([]))}
field_names = st.from_regex(r"\A[a-zA-Z][a-zA-Z0-9_-]{0,14}\Z")


@st.composite
def mutations(draw) -> Mutation:
    base = draw(st.sampled_from(BASES))
    obj = copy.deepcopy(base)
    places = base_slots(base)
    closed = [s for s in places if s.props]
    custom = schema_for(base["apiVersion"], base["kind"]).custom
    scalars = [s for s in places if s.scalar]
    choice = draw(st.sampled_from(["unknown", "duplicate", "type"] if scalars else ["unknown", "duplicate"]))
    if choice == "unknown":
        slot = draw(st.sampled_from(closed))
        key = draw(field_names.filter(lambda k: k not in slot.props))
        _at(obj, slot.keys)[key] = draw(st.one_of(st.integers(), st.text(max_size=5), st.just({"x": 1})))
        path = f"{slot.path}.{key}" if slot.path else key
        return Mutation(base["kind"], obj, json.dumps(obj), _strict(base, f'unknown field "{path}"'), True)
    if choice == "duplicate":
        slot = draw(st.sampled_from([s for s in closed if _at(obj, s.keys)]))
        key = draw(st.sampled_from(sorted(_at(obj, slot.keys))))
        path = f"{slot.path}.{key}" if slot.path else key
        return Mutation(base["kind"], obj, _dumps_with_duplicate(obj, slot.keys, key),
                        _strict(base, f'duplicate field "{path}"'), True)
    slot = draw(st.sampled_from(scalars))
    parent = _at(obj, slot.keys[:-1])
    parent[slot.keys[-1]] = draw(WRONG[slot.scalar])
    version = base["apiVersion"].rpartition("/")[2]
    if custom:
        prefix = f'The {base["kind"]} "{base["metadata"]["name"]}" is invalid: {slot.path}: Invalid value: '
    else:
        prefix = (f'{base["kind"]} in version "{version}" cannot be handled as a {base["kind"]}: '
                  "json: cannot unmarshal ")
    return Mutation(base["kind"], obj, json.dumps(obj), prefix, False)
