"""``NodePool`` (gpusched.io/v1alpha1): a compact definition of identical nodes, expanded into
plain Node dicts.

```yaml
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: a100}
spec:
  count: 2                 # nodes <namePrefix>-1 .. <namePrefix>-<count>; or `names: [...]`
  namePrefix: gpu-node     # default: the pool name
  gpu: {model: A100-40GB, count: 8}     # omit for CPU-only nodes; model may be a user model
  # gpu: {model: GB200, count: 4, clique: <clusterUUID>.<cliqueID>}  # an NVLink fabric (NVL72 rack)
  # gpu: {count: 4, define: {name: RTX-PRO-6000, product: ..., memory: 96Gi, architecture: ...}}
  cpu: "96"                # default "8"
  memory: 1Ti              # default "32Gi"
  pods: 110                # default 110
  labels: {gpu-type: a100}
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  migConfig: all-balanced  # sets the label nvidia.com/mig.config
  migStrategy: mixed       # annotation gpusched.io/mig-strategy (none|single|mixed)
  # gpu: {model: A100-40GB, count: 8, management: dra-dynamic-mig}
  #   management: device-plugin (default) | dra | dra-dynamic-mig: the node label
  #   gpusched.io/gpu-management (devices.dra_classes): NVIDIA's DRA driver publishes the GPUs
  #   consumableShares: unlimited | memory | <N>: the DRA driver's consumable memory shares
  minNodes: 1              # with maxNodes: the Cluster Autoscaler sizes the pool (docs/autoscaling.md)
  maxNodes: 6              # 0 <= minNodes <= maxNodes <= MAX_POOL_NODES; count = initial size
  provisioningDelay: 3m    # a scaled-up node registers this long after the decision
```

An autoscaled pool (``minNodes``/``maxNodes`` set) keeps its node names in ``status.nodes``
(written by ``cluster.controllers.autoscaling.autoscaler``; the first time,
``<namePrefix>-1..count``); ``status.upcoming`` holds nodes being provisioned. Default provisioning
delay: ``DEFAULT_GPU_DELAY`` (3 min) for GPU pools, ``DEFAULT_CPU_DELAY`` (1 min) for CPU pools.

Each node gets the labels ``kubernetes.io/hostname``, ``kubernetes.io/os``,
``kubernetes.io/arch``, ``gpusched.io/nodepool`` and the pool's labels; capacity = allocatable
cpu/memory/pods/ephemeral-storage (100Gi); annotations ``gpusched.io/gpu-model`` (catalog name)
and ``gpusched.io/gpu-count`` (and ``gpusched.io/gpu-clique`` from ``gpu.clique``: the NVLink
fabric NVML would report, which GFD turns into ``nvidia.com/gpu.clique``). GPU extended resources and GFD labels are *not* written here:
``devices.advertise.node_device_state`` derives them, for pool nodes and real Node manifests
alike. Without ``migStrategy`` the device plugin's default ``none`` applies, under which a
MIG-enabled GPU is still one whole ``nvidia.com/gpu``.

Neighbours: ``devices.catalog``, ``devices.mig`` (layout names); used by the cluster's NodePool
controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from gpusched.devices.advertise import ANN_GPU_CLIQUE, ANN_MIG_STRATEGY
from gpusched.devices.catalog import CATALOG, GpuModel
from gpusched.devices.dra_classes import (CONSUMABLE_SHARES_LABEL, DRA_DYNAMIC_MIG,
                                          MANAGEMENT_LABEL, MANAGEMENT_VALUES)
from gpusched.devices.dra_slices import consumable_shares_problem
from gpusched.devices.user_models import ANN_MODEL_SPEC, model_from_spec, resolve, spec_annotation
from gpusched.devices.mig import MIG_CONFIG_LABEL
from gpusched.devices.plugin_config import MIG_STRATEGIES
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.duration import parse_duration
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.types import ANN_GPU_COUNT, ANN_GPU_MODEL

POOL_LABEL = "gpusched.io/nodepool"
MAX_POOL_NODES = 1000                 # the bound of maxNodes (and count) of an autoscaled pool
DEFAULT_GPU_DELAY = 180.0             # seconds from scale-up to a registered GPU node
DEFAULT_CPU_DELAY = 60.0
DEFAULTS: dict[str, str | int] = {"cpu": "8", "memory": "32Gi", "pods": 110, "ephemeral-storage": "100Gi"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Autoscaling:
    """The Cluster Autoscaler settings of one pool (its node group's min/max size)."""

    min_nodes: int
    max_nodes: int
    provisioning_delay: float     # seconds


def autoscaling(pool: dict[str, Any]) -> Autoscaling | None:
    """The pool's autoscaling settings, or None for a fixed-size pool. Raises ``UsageError``
    (one line: pool, field, what is valid) for min > max, negative values, max above
    ``MAX_POOL_NODES``, a count outside [min, max], or ``names`` with autoscaling."""
    pool_name = str((pool.get("metadata") or {}).get("name", ""))
    spec = pool.get("spec") or {}
    if spec.get("minNodes") is None and spec.get("maxNodes") is None:
        return None
    fail = _failure(pool_name)
    low, high = _bound(spec, "minNodes", fail), _bound(spec, "maxNodes", fail)
    if low > high:
        raise fail("minNodes", f'invalid value "{low}": must be <= spec.maxNodes ({high})')
    if spec.get("names"):
        raise fail("names", "an autoscaled pool names its nodes <namePrefix>-N: give "
                            "spec.count (the initial size) instead")
    count = spec.get("count", low)
    if isinstance(count, bool) or not isinstance(count, int) or not low <= count <= high:
        raise fail("count", f'invalid value "{count}": the initial size must be between '
                            f"spec.minNodes ({low}) and spec.maxNodes ({high})")
    return Autoscaling(low, high, _provisioning_delay(spec, fail))


def _bound(spec: dict[str, Any], field: str, fail: Fail) -> int:
    """``minNodes`` / ``maxNodes``: an integer in [0, MAX_POOL_NODES]."""
    value = spec.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(field, f'invalid value "{value}": give an integer >= 0 (both minNodes '
                          'and maxNodes are required for autoscaling)')
    if value > MAX_POOL_NODES:
        raise fail(field, f'invalid value "{value}": must be <= {MAX_POOL_NODES}')
    return value


def _provisioning_delay(spec: dict[str, Any], fail: Fail) -> float:
    """``provisioningDelay`` in seconds (default by GPU or CPU pool), at most 24h."""
    default = DEFAULT_GPU_DELAY if spec.get("gpu") else DEFAULT_CPU_DELAY
    raw = spec.get("provisioningDelay", default)
    try:
        delay = parse_duration(raw)
    except GpuschedError:
        raise fail("provisioningDelay", f'invalid value "{raw}": give a duration such as '
                                        '"3m" or "90s"') from None
    if delay > 86400:
        raise fail("provisioningDelay", f'invalid value "{raw}": must be at most 24h')
    return delay


def registered_names(pool: dict[str, Any]) -> list[str] | None:
    """The node names an autoscaled pool holds now (``status.nodes``), None before the
    autoscaler first wrote them (or for a fixed pool)."""
    nodes = (pool.get("status") or {}).get("nodes")
    return [str(n) for n in nodes] if isinstance(nodes, list) else None


def template_node(pool: dict[str, Any], name: str,
                  extra: Mapping[str, GpuModel] | None = None) -> dict[str, Any]:
    """One node of ``pool`` named ``name``, built by the same code as the pool's nodes (what
    the Cluster Autoscaler simulates for a scale-up: ``template-node-for-<pool>-...``)."""
    return expand_nodepool(pool, extra, names=[name])[0]


def expand_nodepool(pool: dict[str, Any], extra: Mapping[str, GpuModel] | None = None,
                    names: list[str] | None = None) -> list[dict[str, Any]]:
    """The Node dicts of a NodePool, in name order of the spec (``names`` order or 1..count;
    an autoscaled pool: ``status.nodes``; or the ``names`` given).
    ``extra``: user-defined models (``devices.user_models``) ``gpu.model`` may name; a model
    defined inline (``gpu.define``) is written to each node as ``gpusched.io/gpu-model-spec``."""
    pool_name = str((pool.get("metadata") or {}).get("name", ""))
    spec = pool.get("spec") or {}
    fail = _failure(pool_name)
    if names is None:
        names = _pool_names(pool, pool_name, spec, fail)
    template = _template(pool_name, spec, extra, fail)
    return [_node(template, name) for name in names]


def _failure(pool_name: str) -> Fail:
    """The pool's ``fail(path, message)``: ``NodePool "<name>": spec.<path>: <message>``."""
    def fail(path: str, message: str) -> UsageError:
        return UsageError(f'NodePool "{pool_name}": spec.{path}: {message}')
    return fail


def _pool_names(pool: dict[str, Any], pool_name: str, spec: dict[str, Any], fail: Fail) -> list[str]:
    """The node names of the pool itself: ``status.nodes`` of an autoscaled pool once written,
    else the spec's names or ``<namePrefix>-1..count`` (count defaulting to ``minNodes``)."""
    scaling = autoscaling(pool)
    names = registered_names(pool) if scaling is not None else None
    if names is not None:
        return names
    if scaling is not None:
        spec = {**spec, "count": spec.get("count", scaling.min_nodes)}
    return _node_names(pool_name, spec, fail)


@dataclass(frozen=True)
class _Template:
    """What every node of a pool shares; ``_node`` adds the name."""

    pool_name: str
    labels: dict[str, str]            # the pool's own labels (and the MIG config label)
    annotations: dict[str, str]
    taints: list[dict[str, str]]
    resources: dict[str, str]


def _template(pool_name: str, spec: dict[str, Any], extra: Mapping[str, GpuModel] | None,
              fail: Fail) -> _Template:
    """The checked spec (model, gpu.count, migStrategy, quantities, labels, taints, in that order)."""
    gpu = spec.get("gpu") or {}
    model, spec_annotation_value = _pool_model(gpu, pool_name, extra, fail)
    if gpu:
        count = gpu.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise fail("gpu.count", f'invalid value "{count}": must be a positive integer')
    _check_management(gpu, spec, fail)
    strategy = spec.get("migStrategy")
    if strategy is not None and strategy not in MIG_STRATEGIES:
        raise fail("migStrategy", f'unsupported value "{strategy}": supported values: '
                                  f'{", ".join(MIG_STRATEGIES)}')
    resources = {key: _quantity(key, spec.get(key, DEFAULTS[key]), fail)
                 for key in ("cpu", "memory", "pods")}
    resources["ephemeral-storage"] = str(DEFAULTS["ephemeral-storage"])
    labels = {str(k): str(v) for k, v in (spec.get("labels") or {}).items()}
    taints = [_taint(t, i, fail) for i, t in enumerate(spec.get("taints") or [])]
    mig_label, annotations = _gpu_metadata(model, spec_annotation_value, gpu, spec)
    return _Template(pool_name, {**labels, **mig_label}, annotations, taints, resources)


def _gpu_metadata(model: GpuModel | None, spec_annotation_value: str, gpu: Any,
                  spec: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """A GPU node's MIG config label and its model/count/spec/strategy annotations (none for a
    CPU pool)."""
    if model is None:
        return {}, {}
    annotations = {ANN_GPU_MODEL: model.name, ANN_GPU_COUNT: str(gpu.get("count", 1))}
    if spec_annotation_value:
        annotations[ANN_MODEL_SPEC] = spec_annotation_value
    mig_label = {MIG_CONFIG_LABEL: str(spec["migConfig"])} if spec.get("migConfig") else {}
    if gpu.get("management"):
        mig_label[MANAGEMENT_LABEL] = str(gpu["management"])
    if gpu.get("consumableShares") is not None:
        mig_label[CONSUMABLE_SHARES_LABEL] = str(gpu["consumableShares"])
    if spec.get("migStrategy"):
        annotations[ANN_MIG_STRATEGY] = spec["migStrategy"]
    if isinstance(gpu, dict) and gpu.get("clique"):
        annotations[ANN_GPU_CLIQUE] = str(gpu["clique"])
    return mig_label, annotations


def _check_management(gpu: Any, spec: dict[str, Any], fail: Fail) -> None:
    """``gpu.management``: who publishes the GPUs (``devices.dra_classes.MANAGEMENT_VALUES``);
    ``gpu.consumableShares``: the DRA driver's consumableShares value."""
    value = (gpu or {}).get("management")
    if value is not None and value not in MANAGEMENT_VALUES:
        supported = ", ".join(f'"{v}"' for v in MANAGEMENT_VALUES)
        raise fail("gpu.management", f'Unsupported value: "{value}": supported values: {supported}')
    if value == DRA_DYNAMIC_MIG and spec.get("migConfig"):
        raise fail("migConfig", "must not be set with gpu.management dra-dynamic-mig: the DRA "
                                "driver creates and deletes the MIG devices itself")
    shares = (gpu or {}).get("consumableShares")
    problem = consumable_shares_problem(str(shares)) if shares is not None else None
    if problem:
        raise fail("gpu.consumableShares", problem)


def _pool_model(gpu: Any, pool_name: str, extra: Mapping[str, GpuModel] | None,
                fail: Fail) -> tuple[GpuModel | None, str]:
    """The pool's GPU model (``gpu.model`` or ``gpu.define``) and the model-spec annotation of an
    inline one; ``(None, "")`` for a CPU pool."""
    if gpu and gpu.get("define") is not None:
        if gpu.get("model"):
            raise fail("gpu.define", "give either gpu.model or gpu.define, not both")
        return (model_from_spec(gpu["define"], f'NodePool "{pool_name}": spec.gpu.define'),
                spec_annotation(gpu["define"]))
    if not gpu:
        return None, ""
    try:
        return resolve(str(gpu.get("model", "")), extra or {}), ""
    except GpuschedError:
        known = ", ".join([*CATALOG, *(extra or {})])
        raise fail("gpu.model", f'unknown GPU model "{gpu.get("model", "")}"; known models: '
                                f'{known} (or define one: spec.gpu.define)') from None


def _node(template: _Template, name: str) -> dict[str, Any]:
    """One Node dict of the pool."""
    node_labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
                   "kubernetes.io/os": "linux", POOL_LABEL: template.pool_name, **template.labels}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": dict(sorted(node_labels.items())),
                     "annotations": dict(template.annotations)},
        "spec": {"taints": [dict(t) for t in template.taints]} if template.taints else {},
        "status": {"capacity": dict(template.resources), "allocatable": dict(template.resources)},
    }


def name_prefix(pool: dict[str, Any]) -> str:
    """``spec.namePrefix`` or the pool's name: nodes are ``<prefix>-<n>``."""
    return str((pool.get("spec") or {}).get("namePrefix") or (pool.get("metadata") or {}).get("name", ""))


Fail = Callable[[str, str], UsageError]     # (field path, message) -> the error to raise


def _node_names(pool_name: str, spec: dict[str, Any], fail: Fail) -> list[str]:
    if spec.get("names"):
        names = [str(n) for n in spec["names"]]
        if len(set(names)) != len(names):
            raise fail("names", "duplicate node names")
        return names
    count = spec.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise fail("count", f'invalid value "{count}": give a count >= 0 or a list of names')
    prefix = str(spec.get("namePrefix") or pool_name)
    return [f"{prefix}-{i}" for i in range(1, count + 1)]


def _quantity(key: str, value: Any, fail: Fail) -> str:
    try:
        amount = canonical(key, value)
    except QuantityError as err:
        raise fail(key, f'invalid value "{value}": {err}') from None
    if amount <= 0:
        raise fail(key, f'invalid value "{value}": must be greater than zero')
    return str(value)


def _taint(raw: Any, index: int, fail: Fail) -> dict[str, str]:
    if not isinstance(raw, dict) or not raw.get("key"):
        raise fail(f"taints[{index}].key", "Required value")
    effect = raw.get("effect", "")
    if effect not in TAINT_EFFECTS:
        supported = ", ".join(f'"{e}"' for e in TAINT_EFFECTS)
        raise fail(f"taints[{index}].effect", f'Unsupported value: "{effect}": supported values: '
                                              f"{supported}")
    taint = {"key": str(raw["key"]), "effect": effect}
    if raw.get("value") not in (None, ""):
        taint["value"] = str(raw["value"])
    return taint
