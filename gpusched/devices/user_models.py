"""GPU models users define without code, and the stand-in model for a product gpusched does not know.

Two ways to add a model to the catalog (``devices.catalog``) for one cluster:

- a ConfigMap named ``gpusched-gpu-models`` (namespace ``kube-system``, ``gpu-operator`` or
  ``default``; the first found wins) whose key ``models.yaml`` holds a list under ``models:``;
- a NodePool's ``spec.gpu.define`` (one model, used by that pool's nodes; the pool writes it to
  each node as the annotation ``gpusched.io/gpu-model-spec``).

One definition::

    name: RTX-PRO-6000            # catalog name (what NodePools and annotations use)
    product: NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition   # nvidia.com/gpu.product
    memory: 96Gi                  # framebuffer (a quantity, or memoryMiB: 97887)
    architecture: Blackwell       # Volta | Turing | Ampere | Ada Lovelace | Hopper | Blackwell
    computeCapability: "12.0"     # optional; default from the architecture
    migProfiles: [1g.24gb, 2g.48gb, 4g.96gb]   # optional: nvidia-smi profile names
    nvmlName: NVIDIA RTX PRO 6000 Blackwell Server Edition   # optional: what nvidia-smi prints

MIG profiles are placed on the 8-memory / 7-compute geometry of A100/H100/B200
(``mig_profiles.geometry_from_names``).

A node whose ``nvidia.com/gpu.product`` (or ``gpusched.io/gpu-model``) names no known model gets
:func:`generic_model`: the product as its name, memory and compute capability from the node's
own GFD labels when present, no MIG. The node keeps advertising its GPUs; the device-plugin
controller records a Warning event ``UnknownGPUModel`` saying how to describe the model.

Neighbours: ``devices.catalog`` (``GpuModel``, ``lookup_model``), ``devices.mig_profiles``;
used by ``devices.advertise`` and ``devices.nodepool``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

import yaml

from gpusched.devices.catalog import CATALOG, GpuModel, family_of, lookup_model
from gpusched.devices.mig_profiles import geometry_from_names
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects import limits
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.digits import is_digits

MODELS_CONFIGMAP = "gpusched-gpu-models"
MODELS_KEY = "models.yaml"
MODELS_NAMESPACES = ("kube-system", "gpu-operator", "default")
ANN_MODEL_SPEC = "gpusched.io/gpu-model-spec"
MAX_MODELS = 256
ARCHITECTURE_CC = {"volta": (7, 0), "turing": (7, 5), "ampere": (8, 0), "ada lovelace": (8, 9),
                   "ada-lovelace": (8, 9), "hopper": (9, 0), "blackwell": (10, 0)}
SPEC_FIELDS = ("name", "product", "memory", "memoryMiB", "architecture", "computeCapability",
               "migProfiles", "nvmlName")
_PRODUCT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
MIB = 1 << 20


def model_from_spec(spec: Any, where: str) -> GpuModel:
    """A ``GpuModel`` from one user definition; ``UsageError`` names ``where`` and the field."""
    if not isinstance(spec, Mapping):
        raise UsageError(f"{where}: expected a mapping with name, product, memory, architecture")
    unknown = sorted(set(map(str, spec)) - set(SPEC_FIELDS))
    if unknown:
        raise UsageError(f'{where}: unknown field "{unknown[0]}" (fields: {", ".join(SPEC_FIELDS)})')
    name = str(spec.get("name") or "")
    product = str(spec.get("product") or "")
    if not _PRODUCT.match(name):
        raise UsageError(f'{where}.name: Required value: a name of letters, digits, "-", "_", "."')
    if not _PRODUCT.match(product):
        raise UsageError(f"{where}.product: Required value: the nvidia.com/gpu.product value, "
                         f'e.g. "NVIDIA-A100-SXM4-80GB"')
    memory = _memory_mib(spec, where)
    major, minor, architecture = _compute(spec, where)
    mig = None
    if spec.get("migProfiles"):
        profiles = spec["migProfiles"]
        if not isinstance(profiles, list) or len(profiles) > 16:
            raise UsageError(f"{where}.migProfiles: expected a list of up to 16 profile names")
        try:
            mig = geometry_from_names([str(p) for p in profiles])
        except ValueError as err:
            raise UsageError(f"{where}.migProfiles: {err}") from None
    nvml = str(spec.get("nvmlName") or product.replace("-", " "))
    return GpuModel(name, product, memory, family_of(major, minor), major, minor, mig,
                    architecture, (), False, nvml)


def _memory_mib(spec: Mapping[str, Any], where: str) -> int:
    if spec.get("memoryMiB") is not None:
        value = spec["memoryMiB"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 22:
            raise UsageError(f'{where}.memoryMiB: Invalid value: "{value}": a positive integer')
        return value
    raw = spec.get("memory")
    if raw is None:
        raise UsageError(f'{where}.memory: Required value: e.g. "80Gi" (or memoryMiB: 81920)')
    try:
        value = canonical("memory", raw) // MIB
    except (QuantityError, ValueError):
        raise UsageError(f'{where}.memory: Invalid value: "{raw}": a quantity such as 80Gi') from None
    if not 0 < value <= 1 << 22:
        raise UsageError(f'{where}.memory: Invalid value: "{raw}": between 1Mi and 4Ti')
    return value


def _compute(spec: Mapping[str, Any], where: str) -> tuple[int, int, str]:
    architecture = str(spec.get("architecture") or "")
    raw = spec.get("computeCapability")
    if raw is not None:
        match = re.fullmatch(r"(\d{1,2})\.(\d)", str(raw))
        if not match:
            raise UsageError(f'{where}.computeCapability: Invalid value: "{raw}": e.g. "9.0"')
        return int(match.group(1)), int(match.group(2)), architecture
    cc = ARCHITECTURE_CC.get(architecture.lower())
    if cc is None:
        known = ", ".join(a.title() for a in ARCHITECTURE_CC if "-" not in a)
        raise UsageError(f'{where}.architecture: Unsupported value: "{architecture}": supported '
                         f"values: {known} (or give computeCapability)")
    return cc[0], cc[1], architecture


def parse_models(text: str, where: str) -> dict[str, GpuModel]:
    """The models of a ``models.yaml`` document, by catalog name."""
    try:
        data = limits.safe_load(text) if text.strip() else {}
    except limits.LimitError as err:
        raise limits.LimitError(f"{where}: {err}") from None
    except yaml.YAMLError:
        raise UsageError(f"{where}: invalid YAML") from None
    items = (data or {}).get("models") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        raise UsageError(f"{where}: expected a list under models:")
    if len(items) > MAX_MODELS:
        raise limits.LimitError(f"{where}: at most {MAX_MODELS} models")
    models: dict[str, GpuModel] = {}
    for index, item in enumerate(items):
        model = model_from_spec(item, f"{where}: models[{index}]")
        if model.name in CATALOG or model.name in models:
            raise UsageError(f'{where}: models[{index}].name: Duplicate value: "{model.name}"')
        models[model.name] = model
    return models


def user_models(configmaps: list[dict[str, Any]]) -> dict[str, GpuModel]:
    """The models of the cluster's ``gpusched-gpu-models`` ConfigMap ({} when there is none)."""
    by_place = {((cm.get("metadata") or {}).get("namespace", "default"),
                 (cm.get("metadata") or {}).get("name")): cm for cm in configmaps}
    for namespace in MODELS_NAMESPACES:
        cm = by_place.get((namespace, MODELS_CONFIGMAP))
        if cm is not None:
            text = str((cm.get("data") or {}).get(MODELS_KEY, ""))
            return parse_models(text, f"ConfigMap {namespace}/{MODELS_CONFIGMAP} key {MODELS_KEY}")
    return {}


def usable_user_models(configmaps: list[dict[str, Any]]) -> dict[str, GpuModel]:
    """:func:`user_models` for a controller that expands nodes: none when the ConfigMap does not
    parse (the device-plugin controller reports a broken models ConfigMap, once)."""
    try:
        return user_models(configmaps)
    except GpuschedError:
        return {}


def resolve(name: str, extra: Mapping[str, GpuModel]) -> GpuModel:
    """A model by catalog name/product/alias, user models included (``UsageError`` if none)."""
    wanted = str(name).strip().lower()
    for model in extra.values():
        if wanted in (model.name.lower(), model.product.lower()):
            return model
    try:
        return lookup_model(name)
    except GpuschedError:
        known = ", ".join([*CATALOG, *extra])
        raise UsageError(f'unknown GPU model "{name}"; known models: {known}') from None


def spec_annotation(spec: Mapping[str, Any]) -> str:
    """The node annotation value a NodePool writes for its inline model (compact JSON)."""
    return json.dumps(dict(spec), sort_keys=True, separators=(",", ":"))


def model_of_annotation(value: str, node_name: str) -> GpuModel:
    try:
        spec = limits.json_loads(value)
    except ValueError:
        raise UsageError(f"node {node_name}: annotation {ANN_MODEL_SPEC}: invalid JSON") from None
    return model_from_spec(spec, f"node {node_name}: annotation {ANN_MODEL_SPEC}")


def generic_model(product: str, labels: Mapping[str, str]) -> GpuModel:
    """The stand-in for an unknown product: memory and compute from the node's GFD labels."""
    def number(key: str, default: int) -> int:
        raw = str(labels.get(key, ""))
        return int(raw) if is_digits(raw) else default

    major = number("nvidia.com/gpu.compute.major", 0)
    minor = number("nvidia.com/gpu.compute.minor", 0)
    family = family_of(major, minor) if major else "undefined"
    return GpuModel(product, product, number("nvidia.com/gpu.memory", 0), family, major, minor,
                    None, "", (), False, product.replace("-", " "))
