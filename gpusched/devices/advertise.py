"""What the NVIDIA device plugin, GFD and mig-manager would publish for one Node.

``node_device_state(node, configmaps)`` is the one path from a Node dict (a real manifest or a
``NodePool`` expansion) to its ``NodeDevices``, GFD labels and GPU extended resources:

1. GPU model and physical count: annotations ``gpusched.io/gpu-model`` / ``gpusched.io/gpu-count``,
   else the labels of the same names (written back by this function, so a re-advertised node
   keeps its physical count), else the label ``nvidia.com/gpu.product`` (``-MIG-...`` and
   ``-SHARED`` suffixes ignored) and capacity ``nvidia.com/gpu``.
2. MIG layout: what mig-manager (``devices.mig_manager.reconfigure``) leaves on the GPUs for the
   label ``nvidia.com/mig.config``, starting from the GPUs' current state (annotation
   ``gpusched.io/mig-layout``; absent: MIG disabled), with ``nvidia.com/mig.config.state``
   ``success`` or ``failed`` - an unknown or unparsable config leaves the GPUs as they were, a
   layout the GPU cannot create clears that GPU; a change that would touch GPUs in use
   (``busy``) is held, state ``pending``. Readers (``recorded=True``: the kubelet, the
   scheduler's snapshot, metrics, explain) take the layout mig-manager recorded as it is; only
   the device-plugin controller runs mig-manager on a node that has a record. Custom layouts come from a mig-parted ConfigMap
   (``MIG_PARTED_CONFIGMAP_NAMES``, key ``config.yaml`` or its only key), which replaces the
   built-in file. Without the label, or on a GPU without MIG, mig-manager does not run.
3. Device-plugin config: ``plugin_config.config_source`` (the ClusterPolicy's ConfigMap, else
   gpusched's stand-in discovery) and ``select_config`` (node label
   ``nvidia.com/device-plugin.config``, the default key, then config-manager's fallbacks).
4. Node-wide GFD labels: driver/CUDA versions from the annotation ``gpusched.io/driver-version``
   (else the ClusterPolicy's ``driver.version``, else ``gfd.DEFAULT_DRIVER_VERSION``; a malformed one is GFD's error and leaves only the
   base labels), ``gpu.machine`` from ``gpusched.io/machine-type`` or the label
   ``node.kubernetes.io/instance-type`` (else ``unknown``), ``gpu.mode`` from the model.
5. MIG strategy: the ClusterPolicy's ``mig.strategy``, else the config's ``flags.migStrategy``,
   else the node annotation ``gpusched.io/mig-strategy`` (set by NodePools), else
   ``mig_strategy_default``.

A device-plugin config error does not raise: the plugin would crash-loop, so the state carries
``error`` and advertises no GPU resources (labels keep only ``gpu.present``, the gpusched model/
count labels and the MIG state label). GFD runs beside the plugin: under the single MIG strategy a
layout the plugin refuses (MIG devices of more than one profile, an empty MIG-enabled GPU, MIG
enabled and disabled GPUs together) still gets GFD's labels, the ``-MIG-INVALID`` set. A failed MIG reconfiguration is not a plugin error: the
plugin advertises whatever layout the GPUs have; ``mig_log`` carries mig-manager's lines.

Neighbours: ``devices.catalog``, ``devices.mig``, ``devices.plugin_config``, ``devices.gfd``,
``devices.node``; called by the cluster's device-plugin controller and by experiment loaders.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping, cast

from gpusched.devices.catalog import GpuModel
from gpusched.devices.dra_classes import dra_managed
from gpusched.devices.gfd import (DEFAULT_DRIVER_VERSION, clique_label, driver_version_problem, gfd_labels,
                                  machine_label, mode_label, single_strategy_gfd_reason,
                                  version_labels)
from gpusched.devices.mig import (MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, MigConfigEntry,
                                  parse_mig_parted_config)
from gpusched.devices.mig_manager import (MIG_LAYOUT_ANNOTATION, STATE_PENDING, MigOutcome,
                                          current_layout, layout_annotation, reconfigure)
from gpusched.devices.node import NodeDevices
from gpusched.devices.user_models import (ANN_MODEL_SPEC, MODELS_CONFIGMAP, MODELS_KEY,
                                          generic_model, model_of_annotation, resolve,
                                          user_models)
from gpusched.devices.operator import PolicyConfig
from gpusched.devices.plugin_config import (DevicePluginConfig, DevicePluginConfigError,
                                            config_source, select_config)
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects import limits
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.types import ANN_GPU_COUNT, ANN_GPU_MODEL

if TYPE_CHECKING:     # TypedDicts for the type checker alone (casts name them as strings)
    from gpusched.objects import typed_views as k8s

# Read-only stand-ins for an absent part of a Node (never written to).
_NO_META: k8s.ObjectMeta = {}
_NO_STATUS: k8s.NodeStatus = {}
_NO_STRINGS: Mapping[str, str] = {}

log = logging.getLogger(__name__)

ANN_MIG_STRATEGY = "gpusched.io/mig-strategy"
ANN_DRIVER_VERSION = "gpusched.io/driver-version"    # default gfd.DEFAULT_DRIVER_VERSION
ANN_MACHINE_TYPE = "gpusched.io/machine-type"        # what /sys/class/dmi/id/product_name would hold
ANN_GPU_CLIQUE = "gpusched.io/gpu-clique"            # what NVML's GPU fabric info would report
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
LABEL_GPU_MODEL = ANN_GPU_MODEL            # same key, written as a label
LABEL_GPU_COUNT = ANN_GPU_COUNT
MIG_PARTED_CONFIGMAP_NAMES = ("custom-mig-parted-config", "mig-parted-config",
                              "default-mig-parted-config")
MIG_PARTED_NAMESPACES = ("gpu-operator", "kube-system", "default")
MIG_PARTED_KEY = "config.yaml"


@dataclass(frozen=True)
class NodeDeviceState:
    """What the device plugin + GFD publish for one node."""

    devices: NodeDevices
    labels: dict[str, str] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)   # GPU extended resources only
    error: str | None = None
    config_key: str = ""                                      # the device-plugin config key used
    model: GpuModel | None = None
    warning: str | None = None                                # e.g. an unknown GPU product
    annotations: dict[str, str] = field(default_factory=dict)  # the GPUs' MIG state (mig_manager)
    mig_log: tuple[str, ...] = ()                             # mig-manager's error lines when failed


def node_device_state(node: Mapping[str, Any], configmaps: list[dict[str, Any]],
                      default_config_key: str | None = None,
                      mig_strategy_default: str = "none",
                      policy: PolicyConfig | None = None,
                      busy: Mapping[int, str] | None = None,
                      recorded: bool = False) -> NodeDeviceState:
    """The devices, labels and GPU capacity of ``node`` (see the module docstring).

    ``policy``: the GPU Operator's ClusterPolicy (``devices.operator.policy_config``): its
    device-plugin ConfigMap, default key and ``empty`` fallback, its ``mig.strategy`` (which wins
    over the config file's, as an environment variable does), its mig-parted ConfigMap; with
    ``devicePlugin.enabled: false``, or on a DRA-managed node (``devices.dra_classes``), nothing
    is advertised (GFD's labels stay). ``busy``: GPU index -> the pods holding devices on it
    (mig-manager holds a change touching them); ``recorded``: read the GPUs' recorded MIG
    layout without running mig-manager."""
    meta = cast("k8s.Node", node).get("metadata") or _NO_META
    name = str(meta.get("name", ""))
    place = _Place(name, dict(meta.get("labels") or {}), dict(meta.get("annotations") or {}),
                   configmaps, policy, busy, recorded)
    try:
        model, count, warning = node_gpus(node, user_models(configmaps))
    except GpuschedError as err:
        return NodeDeviceState(NodeDevices.build(name, None, 0), error=str(err))
    if model is None or count == 0:
        return NodeDeviceState(NodeDevices.build(name, None, 0), warning=warning)
    mig = _mig_state(model, count, place)
    base = {"nvidia.com/gpu.present": "true", LABEL_GPU_MODEL: model.name,
            LABEL_GPU_COUNT: str(count), **mig.labels}
    chosen = _plugin_devices(model, count, mig, place, default_config_key, mig_strategy_default)
    driver = (place.annotations.get(ANN_DRIVER_VERSION) or (policy.driver_version if policy else "")
              or DEFAULT_DRIVER_VERSION)
    problem = driver_version_problem(driver)
    if isinstance(chosen, _Refused):
        return _refused_state(place, model, mig, base, chosen, driver if not problem else "")
    key, config, devices = chosen
    if problem:        # GFD exits; the device plugin still advertises
        return NodeDeviceState(devices, base, devices.advertised, f"node {name}: {problem}", key,
                               model, warning, mig.annotations, mig.log)
    out = {**base, **gfd_labels(model, count, config, mig.layout, devices.mig_strategy),
           **_node_wide_labels(model, driver, place)}
    return NodeDeviceState(devices, dict(sorted(out.items())), _capacity(devices, place), None,
                           key, model, warning, mig.annotations, mig.log)


def _capacity(devices: NodeDevices, place: _Place) -> dict[str, int]:
    """The GPU resources the plugin registers: none when the ClusterPolicy disables the device
    plugin or NVIDIA's DRA driver publishes the node's GPUs."""
    if place.policy is not None and not place.policy.is_enabled("devicePlugin"):
        return {}
    return {} if dra_managed(place.labels) else devices.advertised


def _refused_state(place: _Place, model: GpuModel, mig: _MigState, base: dict[str, str],
                   refused: _Refused, driver: str) -> NodeDeviceState:
    """A node whose device plugin crash-loops: no GPU resources; GFD's labels when it still
    writes them (``driver`` "": GFD exits on the driver version)."""
    labels = {**base, **_node_wide_labels(model, driver, place), **refused.gfd} \
        if refused.gfd and driver else base
    return NodeDeviceState(NodeDevices.build(place.name, None, 0), dict(sorted(labels.items())),
                           {}, f"node {place.name}: {refused.error}", "", model, None,
                           mig.annotations, mig.log)


@dataclass(frozen=True)
class _Place:
    """What ``node_device_state`` reads besides the GPUs: the node's name, labels and annotations,
    the cluster's ConfigMaps and the ClusterPolicy."""

    name: str
    labels: dict[str, Any]
    annotations: dict[str, Any]
    configmaps: list[dict[str, Any]]
    policy: PolicyConfig | None
    busy: Mapping[int, str] | None = None
    recorded: bool = False


@dataclass(frozen=True)
class _MigState:
    """Step 2's result: the layout, the ``mig.config.state`` label and layout annotation (each
    empty when not published) and mig-manager's log."""

    layout: list[Any]
    labels: dict[str, str]
    annotations: dict[str, str]
    log: tuple[str, ...]
    pending: bool = False        # a change waits for GPUs in use: the device plugin is paused


def _mig_state(model: GpuModel, count: int, place: _Place) -> _MigState:
    """Step 2 of the module docstring, with what the node publishes about it."""
    layout, mig = _mig_manager(model, count, place)
    published = model.mig_capable and (mig is not None or MIG_LAYOUT_ANNOTATION in place.annotations)
    state = mig.state if mig is not None else place.labels.get(MIG_CONFIG_STATE_LABEL)
    return _MigState(layout,
                     {MIG_CONFIG_STATE_LABEL: mig.state} if mig is not None else {},
                     {MIG_LAYOUT_ANNOTATION: layout_annotation(layout)} if published else {},
                     tuple(mig.log) if mig is not None else (),
                     model.mig_capable and state == STATE_PENDING)


@dataclass(frozen=True)
class _Refused:
    """The error the device plugin would crash-loop on, and the labels GFD (its own DaemonSet,
    reading the same config) still writes beside it: a MIG layout the plugin refuses under the
    single strategy is GFD's ``-MIG-INVALID`` set (``internal/lm/mig-strategy.go``
    ``newInvalidMigStrategyLabeler``); a config neither can read leaves none."""

    error: str
    gfd: dict[str, str] = field(default_factory=dict)


def _plugin_devices(model: GpuModel, count: int, mig: _MigState, place: _Place,
                    default_config_key: str | None, mig_strategy_default: str
                    ) -> tuple[str, DevicePluginConfig, NodeDevices] | _Refused:
    """Steps 3 and 5: the config key, config and devices the plugin advertises, or why not."""
    source = config_source(place.configmaps, place.policy, default_config_key)
    if source.error:
        return _Refused(source.error)
    try:
        key, config = select_config((source.configmap or {}).get("data") or {}, place.labels,
                                    source.default_key, source.where, source.fallbacks)
    except GpuschedError as err:
        return _Refused(str(err))
    strategy = place.annotations.get(ANN_MIG_STRATEGY) or mig_strategy_default
    if place.policy is not None and place.policy.mig_strategy:
        config = replace(config, mig_strategy=place.policy.mig_strategy)
    built = replace(config, mig_strategy="mixed") if dra_managed(place.labels) else config
    try:     # a DRA node's MIG devices are each a device of NVIDIA's DRA driver
        devices = NodeDevices.build(place.name, model, count, built, mig.layout, strategy)
    except GpuschedError as err:
        invalid = (config.mig_strategy or strategy) == "single" and \
            single_strategy_gfd_reason(mig.layout) is not None
        return _Refused(str(err), gfd_labels(model, count, config, mig.layout, strategy)
                        if invalid else {})
    return key, config, replace(devices, paused=mig.pending)


def _node_wide_labels(model: GpuModel, driver: str, place: _Place) -> dict[str, str]:
    """Step 4: GFD's driver/CUDA version, ``gpu.mode``, ``gpu.machine`` and ``gpu.clique``
    labels."""
    return {**version_labels(driver), **mode_label(model),
            **machine_label(place.annotations.get(ANN_MACHINE_TYPE)
                            or place.labels.get(INSTANCE_TYPE_LABEL, "")),
            **clique_label(model, place.annotations.get(ANN_GPU_CLIQUE, ""))}


def _mig_manager(model: GpuModel, count: int, place: _Place) -> tuple[list[Any], MigOutcome | None]:
    """The GPUs' MIG layout after mig-manager acted on ``nvidia.com/mig.config`` (``None`` outcome:
    mig-manager does not run - a node without the label, or a GPU without MIG, or a reader of a
    node whose layout is recorded)."""
    labels, annotations, policy = place.labels, place.annotations, place.policy
    current = current_layout(annotations.get(MIG_LAYOUT_ANNOTATION), count)
    if not model.mig_capable or MIG_CONFIG_LABEL not in labels:
        return current, None
    if place.recorded and MIG_LAYOUT_ANNOTATION in annotations:
        return current, None
    if policy is not None and not policy.is_enabled("migManager"):   # no mig-manager DaemonSet
        return current, None
    try:
        custom, custom_error = _custom_mig_configs(place.configmaps, policy), None
    except GpuschedError as err:
        custom, custom_error = None, str(err)
    outcome = reconfigure(model, count, str(labels[MIG_CONFIG_LABEL]), current, custom, custom_error,
                          place.busy)
    return outcome.layout, outcome


def node_gpus(node: Mapping[str, Any], extra: Mapping[str, GpuModel] | None = None
              ) -> tuple[GpuModel | None, int, str | None]:
    """The node's GPU model, physical GPU count and a warning (see step 1 of the module
    docstring). ``extra``: user-defined models (``devices.user_models``). A product no catalog
    knows gives ``user_models.generic_model`` and a warning, never a node without GPUs."""
    meta = cast("k8s.Node", node).get("metadata") or _NO_META
    labels = meta.get("labels") or _NO_STRINGS
    annotations = meta.get("annotations") or _NO_STRINGS
    name = meta.get("name", "")
    model, warning = _node_model(labels, annotations, name, extra)
    if model is None:
        return None, 0, None
    return model, _gpu_count(node, labels, annotations, name), warning


def _node_model(labels: Mapping[str, str], annotations: Mapping[str, str], name: str,
                extra: Mapping[str, GpuModel] | None) -> tuple[GpuModel | None, str | None]:
    """The model from the model-spec annotation, the model annotation/label or GFD's product label."""
    model_name = annotations.get(ANN_GPU_MODEL) or labels.get(LABEL_GPU_MODEL)
    product = str(labels.get("nvidia.com/gpu.product") or "")
    if annotations.get(ANN_MODEL_SPEC):
        return model_of_annotation(str(annotations[ANN_MODEL_SPEC]), name), None
    if not (model_name or product):
        return None, None
    wanted = str(model_name).split("|")[0] if model_name else _base_product(product)
    try:
        return resolve(wanted, extra or {}), None
    except GpuschedError:
        model = generic_model(wanted, labels)
        return model, (f'GPU product "{wanted}" is not in gpusched\'s catalog: advertising the '
                       f"node's GPUs as {wanted} with {model.memory_mib} MiB and no MIG; describe "
                       f"it in ConfigMap kube-system/{MODELS_CONFIGMAP} (key {MODELS_KEY})")


def _gpu_count(node: Mapping[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str],
               name: str) -> int:
    """The physical GPU count: annotation, label, else capacity ``nvidia.com/gpu``."""
    raw: k8s.Quantity | None = annotations.get(ANN_GPU_COUNT) or labels.get(LABEL_GPU_COUNT)
    if raw is None:
        status = cast("k8s.Node", node).get("status") or _NO_STATUS
        raw = (status.get("capacity") or {}).get("nvidia.com/gpu", 0)
    try:
        count = canonical("nvidia.com/gpu", raw)
    except QuantityError:
        raise UsageError(f'node {name}: invalid GPU count "{raw}"') from None
    if count < 0:
        raise UsageError(f'node {name}: invalid GPU count "{raw}"')
    if count > limits.MAX_GPUS_PER_NODE:     # one device (or more) is built per GPU
        raise limits.LimitError(f'node {name}: invalid GPU count "{raw}": at most '
                                f"{limits.MAX_GPUS_PER_NODE} GPUs per node")
    return count


def _base_product(product: str) -> str:
    product = product.removesuffix("-SHARED")
    return product.split("-MIG-")[0]


def _custom_mig_configs(configmaps: list[dict[str, Any]], policy: PolicyConfig | None = None
                        ) -> dict[str, list[MigConfigEntry]] | None:
    by_place = {((cm.get("metadata") or {}).get("namespace", "default"),
                 (cm.get("metadata") or {}).get("name")): cm for cm in configmaps}
    names: tuple[str, ...] = MIG_PARTED_CONFIGMAP_NAMES
    if policy is not None and policy.mig_parted_config not in names:
        names = (policy.mig_parted_config, *names)      # spec.migManager.config.name
    for namespace in MIG_PARTED_NAMESPACES:
        for cm_name in names:
            cm = by_place.get((namespace, cm_name))
            if cm is None:
                continue
            data = cm.get("data") or {}
            text = data.get(MIG_PARTED_KEY) or (next(iter(data.values())) if len(data) == 1 else None)
            if text is None:
                raise DevicePluginConfigError(f"ConfigMap {namespace}/{cm_name}: no {MIG_PARTED_KEY} key")
            try:
                return parse_mig_parted_config(text)
            except GpuschedError as err:
                raise UsageError(f"ConfigMap {namespace}/{cm_name}: {err}") from None
    return None
