"""``node_info``: the typed view of a Node dict; taint parsing for ``gpusched taint``.

- ``node_info(node, model_lookup=None)``: allocatable (falls back to capacity when the node has no
  ``status.allocatable``), capacity, labels, taints, ``spec.unschedulable``, the GPU model and the
  number of physical GPUs.
  GPU model: the annotation (or label) ``gpusched.io/gpu-model`` (a catalog key, taken as is, as
  ``devices.advertise.node_gpus`` reads it), else the GFD
  label ``nvidia.com/gpu.product`` passed through ``model_lookup`` (the devices layer's catalog
  sits above this layer, so the caller hands it in, e.g. ``lambda p: lookup_model(p).name``). When
  the hook is missing or cannot resolve the product (returns a false value or raises a
  ``GpuschedError``/``KeyError``/``ValueError``), the product string itself is used.
  GPU count: the annotation ``gpusched.io/gpu-count`` (NodePool nodes), the GFD label
  ``nvidia.com/gpu.count``, else capacity ``nvidia.com/gpu`` (which with
  time-slicing counts replicas, hence the label first).
- ``parse_taint("key=value:Effect")``, ``parse_taint_removal("key:Effect-" | "key-")``: kubectl's
  ``taint`` argument syntax and messages; ``taint_to_dict``, ``taints_of``.

Neighbours: types (NodeInfo, Taint), quantity, names; used by the scheduler snapshot, cluster
controllers and admission, the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, cast

from gpusched.errors import FieldError, GpuschedError, InvalidError, UsageError
from gpusched.objects.names import label_value_errors, qualified_name_errors
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.types import ANN_GPU_COUNT, ANN_GPU_MODEL, NodeInfo, Taint

if TYPE_CHECKING:     # TypedDicts for the type checker alone (casts name them as strings)
    from gpusched.objects import typed_views as k8s

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_GPU_COUNT = "nvidia.com/gpu.count"
# Read-only stand-ins for an absent part of a body (never written to).
_NO_META: k8s.ObjectMeta = {}
_NO_SPEC: k8s.NodeSpec = {}
_NO_STATUS: k8s.NodeStatus = {}
_NO_STRINGS: Mapping[str, str] = {}

ModelLookup = Callable[[str], Any]


def _resources(name: str, raw: Mapping[str, k8s.Quantity] | None, path: str) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    out = {}
    for resource, value in raw.items():
        try:
            out[str(resource)] = canonical(str(resource), value)
        except (QuantityError, TypeError) as exc:
            raise InvalidError("Node", name, [FieldError(f"{path}[{resource}]", "Invalid value", str(value),
                                                         str(exc))]) from None
    return out


def taints_of(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    spec = cast("k8s.Node", node).get("spec") or _NO_SPEC
    return tuple(Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
                 for t in spec.get("taints") or () if isinstance(t, dict))


def _resolve_model(product: str, model_lookup: ModelLookup | None) -> str:
    if model_lookup is None:
        return product
    try:
        found = model_lookup(product)
    except (GpuschedError, KeyError, ValueError):
        return product
    if not found:
        return product
    return found if isinstance(found, str) else str(getattr(found, "name", found))


def node_info(node: Mapping[str, Any], model_lookup: ModelLookup | None = None) -> NodeInfo:
    """Build the scheduler's view of a Node dict (see the module doc for the GPU fields)."""
    body = cast("k8s.Node", node)
    meta = body.get("metadata") or _NO_META
    spec = body.get("spec") or _NO_SPEC
    status = body.get("status") or _NO_STATUS
    name = str(meta.get("name") or "")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or _NO_STRINGS).items()}
    annotations = meta.get("annotations") or _NO_STRINGS
    capacity = _resources(name, status.get("capacity"), "status.capacity")
    allocatable = _resources(name, status.get("allocatable"), "status.allocatable") or dict(capacity)
    gpu_model = str(annotations.get(ANN_GPU_MODEL) or labels.get(ANN_GPU_MODEL) or "").split("|")[0]
    if not gpu_model and labels.get(LABEL_GPU_PRODUCT):
        gpu_model = _resolve_model(labels[LABEL_GPU_PRODUCT], model_lookup)
    try:
        gpu_count = int(str(annotations.get(ANN_GPU_COUNT) or labels.get(LABEL_GPU_COUNT, "")))
    except ValueError:
        gpu_count = capacity.get("nvidia.com/gpu", 0)
    return NodeInfo(
        name=name,
        allocatable=allocatable,
        capacity=capacity,
        labels=labels,
        taints=taints_of(node),
        unschedulable=bool(spec.get("unschedulable")),
        gpu_model=gpu_model,
        gpu_count=gpu_count,
    )


# ----------------------------------------------------------------------------------------------
# kubectl taint argument syntax (k8s.io/kubectl/pkg/cmd/taint/utils.go)


def _check_effect(effect: str) -> None:
    if effect not in TAINT_EFFECTS:
        raise UsageError(f"invalid taint effect: {effect}, unsupported taint effect")


def parse_taint(spec: str) -> Taint:
    """``key=value:Effect`` or ``key:Effect`` -> Taint; kubectl's messages on bad input.

    >>> parse_taint("dedicated=gpu:NoSchedule")
    Taint(key='dedicated', value='gpu', effect='NoSchedule')
    """
    parts = spec.split(":")
    if len(parts) != 2:
        # kubectl accepts a bare key in parseTaint, then refuses a taint without an effect to add
        raise UsageError(f"unknown taint spec: {spec}" if len(parts) == 1 else f"invalid taint spec: {spec}")
    effect = parts[1]
    _check_effect(effect)
    key_value = parts[0].split("=")
    if len(key_value) > 2:
        raise UsageError(f"invalid taint spec: {spec}")
    key = key_value[0]
    value = key_value[1] if len(key_value) == 2 else ""
    errors = label_value_errors(value) if value else []
    errors = qualified_name_errors(key) + errors
    if errors:
        raise UsageError(f"invalid taint spec: {spec}, {'; '.join(errors)}")
    return Taint(key, value, effect)


def parse_taint_removal(spec: str) -> tuple[str, str]:
    """``key:Effect-`` or ``key-`` -> (key, effect or ``""`` for every effect).

    >>> parse_taint_removal("dedicated:NoSchedule-"), parse_taint_removal("dedicated-")
    (('dedicated', 'NoSchedule'), ('dedicated', ''))
    """
    if not spec.endswith("-"):
        raise UsageError(f"invalid taint spec: {spec}")
    body = spec[:-1]
    key, _, effect = body.partition(":")
    if effect:
        _check_effect(effect)
    key = key.split("=")[0]   # kubectl ignores a value in a removal spec
    if not key or qualified_name_errors(key):
        raise UsageError(f"invalid taint spec: {spec}, {'; '.join(qualified_name_errors(key))}")
    return key, effect


def is_taint_removal(spec: str) -> bool:
    return spec.endswith("-")


def taint_to_dict(taint: Taint) -> dict[str, str]:
    """The ``spec.taints[]`` entry for a taint (``value`` omitted when empty, as kubectl writes it)."""
    out = {"key": taint.key}
    if taint.value:
        out["value"] = taint.value
    out["effect"] = taint.effect
    return out
