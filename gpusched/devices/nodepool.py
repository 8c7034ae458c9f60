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
  # gpu: {count: 4, define: {name: RTX-PRO-6000, product: ..., memory: 96Gi, architecture: ...}}
  cpu: "96"                # default "8"
  memory: 1Ti              # default "32Gi"
  pods: 110                # default 110
  labels: {gpu-type: a100}
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  migConfig: all-balanced  # sets the label nvidia.com/mig.config
  migStrategy: mixed       # annotation gpusched.io/mig-strategy (none|single|mixed)
```

Each node gets the labels ``kubernetes.io/hostname``, ``kubernetes.io/os``,
``kubernetes.io/arch``, ``gpusched.io/nodepool`` and the pool's labels; capacity = allocatable
cpu/memory/pods/ephemeral-storage (100Gi); annotations ``gpusched.io/gpu-model`` (catalog name)
and ``gpusched.io/gpu-count``. GPU extended resources and GFD labels are *not* written here:
``devices.advertise.node_device_state`` derives them, for pool nodes and real Node manifests
alike. Without ``migStrategy`` the device plugin's default ``none`` applies, under which a
MIG-enabled GPU is still one whole ``nvidia.com/gpu``.

Neighbours: ``devices.catalog``, ``devices.mig`` (layout names); used by the cluster's NodePool
controller.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpusched.devices.advertise import ANN_GPU_COUNT, ANN_MIG_STRATEGY
from gpusched.devices.catalog import CATALOG, GpuModel
from gpusched.devices.user_models import ANN_MODEL_SPEC, model_from_spec, resolve, spec_annotation
from gpusched.devices.mig import MIG_CONFIG_LABEL
from gpusched.devices.plugin_config import MIG_STRATEGIES
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.types import ANN_GPU_MODEL

POOL_LABEL = "gpusched.io/nodepool"
DEFAULTS = {"cpu": "8", "memory": "32Gi", "pods": 110, "ephemeral-storage": "100Gi"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def expand_nodepool(pool: dict[str, Any], extra: Mapping[str, GpuModel] | None = None
                    ) -> list[dict[str, Any]]:
    """The Node dicts of a NodePool, in name order of the spec (``names`` order or 1..count).
    ``extra``: user-defined models (``devices.user_models``) ``gpu.model`` may name; a model
    defined inline (``gpu.define``) is written to each node as ``gpusched.io/gpu-model-spec``."""
    pool_name = str((pool.get("metadata") or {}).get("name", ""))
    spec = pool.get("spec") or {}

    def fail(path: str, message: str) -> UsageError:
        return UsageError(f'NodePool "{pool_name}": spec.{path}: {message}')

    names = _node_names(pool_name, spec, fail)
    gpu = spec.get("gpu") or {}
    model = None
    spec_annotation_value = ""
    if gpu and gpu.get("define") is not None:
        if gpu.get("model"):
            raise fail("gpu.define", "give either gpu.model or gpu.define, not both")
        model = model_from_spec(gpu["define"], f'NodePool "{pool_name}": spec.gpu.define')
        spec_annotation_value = spec_annotation(gpu["define"])
    elif gpu:
        try:
            model = resolve(str(gpu.get("model", "")), extra or {})
        except GpuschedError:
            known = ", ".join([*CATALOG, *(extra or {})])
            raise fail("gpu.model", f'unknown GPU model "{gpu.get("model", "")}"; known models: '
                                    f'{known} (or define one: spec.gpu.define)') from None
    if gpu:
        count = gpu.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise fail("gpu.count", f'invalid value "{count}": must be a positive integer')
    strategy = spec.get("migStrategy")
    if strategy is not None and strategy not in MIG_STRATEGIES:
        raise fail("migStrategy", f'unsupported value "{strategy}": supported values: '
                                  f'{", ".join(MIG_STRATEGIES)}')
    resources = {key: _quantity(key, spec.get(key, DEFAULTS[key]), fail)
                 for key in ("cpu", "memory", "pods")}
    resources["ephemeral-storage"] = DEFAULTS["ephemeral-storage"]
    labels = {str(k): str(v) for k, v in (spec.get("labels") or {}).items()}
    taints = [_taint(t, i, fail) for i, t in enumerate(spec.get("taints") or [])]
    nodes = []
    for name in names:
        node_labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
                       "kubernetes.io/os": "linux", POOL_LABEL: pool_name, **labels}
        annotations = {}
        if model is not None:
            annotations = {ANN_GPU_MODEL: model.name, ANN_GPU_COUNT: str(gpu.get("count", 1))}
            if spec_annotation_value:
                annotations[ANN_MODEL_SPEC] = spec_annotation_value
            if spec.get("migConfig"):
                node_labels[MIG_CONFIG_LABEL] = str(spec["migConfig"])
            if strategy:
                annotations[ANN_MIG_STRATEGY] = strategy
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(sorted(node_labels.items())),
                         "annotations": annotations},
            "spec": {"taints": [dict(t) for t in taints]} if taints else {},
            "status": {"capacity": dict(resources), "allocatable": dict(resources)},
        }
        nodes.append(node)
    return nodes


def _node_names(pool_name: str, spec: dict, fail) -> list[str]:
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


def _quantity(key: str, value: Any, fail) -> str:
    try:
        amount = canonical(key, value)
    except QuantityError as err:
        raise fail(key, f'invalid value "{value}": {err}') from None
    if amount <= 0:
        raise fail(key, f'invalid value "{value}": must be greater than zero')
    return str(value)


def _taint(raw: Any, index: int, fail) -> dict[str, str]:
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
