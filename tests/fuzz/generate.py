"""Hypothesis strategies for generated manifests: the documents of ``examples/`` kept valid,
mutated with a value kube-apiserver refuses (issue 25 finding 6: ``expect_refused``), given a
random value at a random schema field, pinned to a node with device requests (findings 3-4),
and device-plugin ConfigMaps with large counts or deep nesting (findings 1-2).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, Callable

import yaml
from hypothesis import strategies as st

from tests.conftest import REPO_ROOT
from tests.fuzz import cases
from tests.fuzz_strict import BASES, base_slots

NODES = ("gpu-node-1", "gpu-node-2", "gpu-node-3", "cpu-node-1", "mig-node-1", "no-such-node")
DEVICE_RESOURCES = ("nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb",
                    "nvidia.com/gpu.shared", cases.MILLI)
PLUGIN_NAMES = ("time-slicing-config-all", "time-slicing-config", "device-plugin-config",
                "nvidia-device-plugin-config")
PLUGIN_NAMESPACES = ("default", "kube-system", "gpu-operator")


@dataclass(frozen=True)
class GeneratedCase:
    """One generated manifest file: what was done to which base, its documents, and whether
    kube-apiserver refuses it."""

    what: str
    docs: tuple[dict[str, Any], ...]
    expect_refused: bool = False

    @property
    def text(self) -> str:
        return cases.dump(*self.docs)


@functools.cache
def example_documents() -> tuple[dict[str, Any], ...]:
    """Every document of the YAML files under ``examples/`` and the strict-decoding bases."""
    docs: list[dict[str, Any]] = []
    for path in sorted(REPO_ROOT.joinpath("examples").rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind")]
    return tuple(docs + list(BASES))


def pod_spec_of(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec a document holds (a Pod's, a template's), or None."""
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    if doc.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
    found = spec if doc.get("kind") == "Pod" else (spec.get("template") or {}).get("spec")
    return found if isinstance(found, dict) and isinstance(found.get("containers"), list) else None


def _container(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["containers"][0]


def _set_limit(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def plant(spec: dict[str, Any]) -> None:
        _container(spec).setdefault("resources", {}).setdefault("limits", {})[name] = value
    return plant


# Values kube-apiserver refuses in any pod spec, a template's included (core/validation
# ValidatePodSpec / validateContainers; quantity.go's regular expression). See cases.REFUSED.
POD_SPEC_PLANTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "containerPort 0": lambda s: _container(s).update(ports=[{"containerPort": 0}]),
    "containerPort 70000": lambda s: _container(s).update(ports=[{"containerPort": 70000}]),
    "protocol ICMP": lambda s: _container(s).update(ports=[{"containerPort": 80, "protocol": "ICMP"}]),
    "env name ''": lambda s: _container(s).update(env=[{"name": "", "value": "x"}]),
    "dnsPolicy Bogus": lambda s: s.update(dnsPolicy="Bogus"),
    "nodeName UPPER_CASE": lambda s: s.update(nodeName="UPPER_CASE"),
    "cpu '１６'": _set_limit("cpu", "\uff11\uff16"),
    "cpu '٣'": _set_limit("cpu", "\u0663"),
}
META_PLANTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "finalizer 'bad finalizer!'": lambda m: m.update(finalizers=["bad finalizer!"]),
    "ownerReference without name and uid": lambda m: m.update(ownerReferences=[{"apiVersion": "v1",
                                                                                "kind": "ConfigMap"}]),
}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 64, 2 ** 64), st.text(max_size=8),
                    st.floats(allow_nan=False), st.sampled_from(["1Gi", "500m", "-1", "1e3", "0x10", "\uff11", ""]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=8)


def _named(doc: dict[str, Any], suffix: int) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out.setdefault("metadata", {})["name"] = f"{out['metadata'].get('name', 'x')}-{suffix}"[:60]
    return out


@st.composite
def valid_cases(draw: st.DrawFn) -> GeneratedCase:
    doc = _named(draw(st.sampled_from(example_documents())), draw(st.integers(0, 3)))
    return GeneratedCase(f"example {doc['kind']} {doc['metadata']['name']}", (doc,))


@st.composite
def invalid_cases(draw: st.DrawFn) -> GeneratedCase:
    docs = example_documents()
    doc = _named(draw(st.sampled_from(docs)), draw(st.integers(0, 3)))
    spec = pod_spec_of(doc)
    if spec is not None and draw(st.booleans()):
        name = draw(st.sampled_from(sorted(POD_SPEC_PLANTS)))
        POD_SPEC_PLANTS[name](spec)
    else:
        name = draw(st.sampled_from(sorted(META_PLANTS)))
        META_PLANTS[name](doc["metadata"])
    return GeneratedCase(f"{doc['kind']} {doc['metadata']['name']} with {name}", (doc,), expect_refused=True)


@st.composite
def random_value_cases(draw: st.DrawFn) -> GeneratedCase:
    base = draw(st.sampled_from(BASES))
    places = [s for s in base_slots(base) if s.keys]
    slot = draw(st.sampled_from(places))
    obj = _named(base, draw(st.integers(0, 3)))
    parent: Any = obj
    for key in slot.keys[:-1]:
        parent = parent[key]
    parent[slot.keys[-1]] = draw(json_values)
    return GeneratedCase(f"{base['kind']} with a random value at {slot.path}", (obj,))


@st.composite
def pinned_cases(draw: st.DrawFn) -> GeneratedCase:
    docs = []
    for i in range(draw(st.integers(1, 4))):
        resource = draw(st.sampled_from(DEVICE_RESOURCES))
        amount = draw(st.integers(1, 999)) if resource == cases.MILLI else draw(st.integers(0, 9))
        node = draw(st.sampled_from(NODES)) if draw(st.integers(0, 3)) else ""
        docs.append(cases.pod(f"pin-{draw(st.integers(0, 20))}-{i}", {resource: amount, "cpu": "100m"}, node))
    return GeneratedCase("pods " + ", ".join(
        f"{d['metadata']['name']} {d['spec']['containers'][0]['resources']['limits']} on "
        f"{d['spec'].get('nodeName', '(scheduler)')}" for d in docs), tuple(docs))


@st.composite
def configmap_cases(draw: st.DrawFn) -> GeneratedCase:
    name, namespace = draw(st.sampled_from(PLUGIN_NAMES)), draw(st.sampled_from(PLUGIN_NAMESPACES))
    if draw(st.booleans()):
        replicas = draw(st.one_of(st.integers(-1, 16), st.sampled_from(
            [10 ** 4, 10 ** 6, 10 ** 9, 2 ** 31, 2 ** 63, 2 ** 64])))
        sharing = draw(st.sampled_from(["timeSlicing", "mps"]))
        data, what = cases.time_slicing(replicas, sharing), f"{sharing} replicas {replicas}"
    else:
        levels = draw(st.sampled_from([50, 99, 100, 101, 1000, cases.NESTED_LEVELS]))
        data, what = cases.nested(levels), f"{levels} nested levels"
    return GeneratedCase(f"ConfigMap {namespace}/{name} with {what}",
                         (cases.configmap(name, {"any": data}, namespace),))


def manifest_cases() -> st.SearchStrategy[GeneratedCase]:
    return st.one_of(valid_cases(), invalid_cases(), random_value_cases(), pinned_cases(), configmap_cases())
