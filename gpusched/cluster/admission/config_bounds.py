"""GpuschedConfigBounds (gpusched's own): the ConfigMaps gpusched reads as configuration keep
their bounds, checked at the write.

A ConfigMap is plain data to kube-apiserver, but some are read by a component gpusched runs:
the device plugin (``devices.plugin_config``: replicas become devices), mig-manager
(``devices.mig``: counts become MIG devices) and the GPU-model catalogue
(``devices.user_models``). Each value such a ConfigMap holds is parsed here, as the component
would parse it, and a value that breaks a bound of ``objects.limits`` (nested deeper than
``MAX_DEPTH``, an alias bomb, more than ``MAX_SHARING_REPLICAS`` replicas of a GPU, more MIG
devices than a GPU holds) refuses the write: 422 ``The ConfigMap "x" is invalid: data[key]: ...``,
so nothing is stored and no worker builds a billion devices later.

Any other mistake in the config is left to the component, as upstream: the device plugin
crash-loops (the node advertises no GPU and carries the error), mig-manager reports ``failed``.
A component that later reads a ConfigMap admitted before a ClusterPolicy named it still parses
with the same bounds (the node carries the error instead).

Which ConfigMaps: the device plugin's candidates (``plugin_config.find_device_plugin_configmap``:
the annotation, the well-known names in their namespaces, the Helm chart's ``*-configs``, the
active ClusterPolicy's ``devicePlugin.config.name``), mig-parted's
(``advertise.MIG_PARTED_CONFIGMAP_NAMES`` and the ClusterPolicy's ``migManager.config.name``) and
``gpusched-gpu-models``.

Neighbours: ``admission.registry``; ``devices.plugin_config``, ``devices.mig``,
``devices.user_models``, ``objects.limits``.
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.apiserver.view import View
from gpusched.devices.advertise import MIG_PARTED_CONFIGMAP_NAMES, MIG_PARTED_NAMESPACES
from gpusched.devices.mig import parse_mig_parted_config
from gpusched.devices.operator import OPERATOR_NAMESPACE, active_policy, policy_config
from gpusched.devices.plugin_config import (CONFIGMAP_ANNOTATION, DEVICE_PLUGIN_CONFIGMAP_NAMES,
                                            DEVICE_PLUGIN_NAMESPACES, HELM_CONFIGMAP_SUFFIX,
                                            parse_config)
from gpusched.devices.user_models import MODELS_CONFIGMAP, MODELS_KEY, MODELS_NAMESPACES, parse_models
from gpusched.errors import FieldError, GpuschedError, InvalidError
from gpusched.objects import limits

NAME = "GpuschedConfigBounds"
Parser = Callable[[str], Any]


def admit_config_map(view: View, body: dict[str, Any]) -> None:
    """Raise ``InvalidError`` when a value of a ConfigMap gpusched reads breaks a bound."""
    meta = body.get("metadata") or {}
    name = str(meta.get("name", ""))
    data = body.get("data") or {}
    parsers = _parsers(view, meta)
    if not parsers or not isinstance(data, dict):
        return
    errors = []
    for key in sorted(data):
        problem = _first_bound_broken(parsers, str(data[key]), key)
        if problem:
            errors.append(FieldError(f"data[{key}]", "Invalid value", None, problem))
    if errors:
        raise InvalidError("ConfigMap", name, errors)


def _first_bound_broken(parsers: list[tuple[str, Parser]], text: str, key: str) -> str:
    for what, parse in parsers:
        if what == "GPU models" and key != MODELS_KEY:
            continue
        try:
            parse(text)
        except limits.LimitError as err:
            return f"{what}: {err}"
        except GpuschedError:
            continue          # the component's own error, reported where it reads the config
    return ""


def _parsers(view: View, meta: dict[str, Any]) -> list[tuple[str, Parser]]:
    """What reads this ConfigMap: (a name for the message, its parser), in a fixed order."""
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace") or "default")
    policy = policy_config(active_policy(view.list("ClusterPolicy")))
    parsers: list[tuple[str, Parser]] = []
    annotated = str((meta.get("annotations") or {}).get(CONFIGMAP_ANNOTATION, "")).lower() == "true"
    by_name = namespace in DEVICE_PLUGIN_NAMESPACES and name in DEVICE_PLUGIN_CONFIGMAP_NAMES
    by_policy = policy is not None and namespace == OPERATOR_NAMESPACE \
        and name == policy.device_plugin_config
    if annotated or by_name or by_policy or name.endswith(HELM_CONFIGMAP_SUFFIX):
        parsers.append(("device-plugin config", parse_config))
    mig_names = MIG_PARTED_CONFIGMAP_NAMES + ((policy.mig_parted_config,) if policy else ())
    if namespace in MIG_PARTED_NAMESPACES and name in mig_names:
        parsers.append(("mig-parted config", parse_mig_parted_config))
    if namespace in MODELS_NAMESPACES and name == MODELS_CONFIGMAP:
        parsers.append(("GPU models", lambda text: parse_models(text, "models.yaml")))
    return parsers


def _validate(attrs: Attributes) -> None:
    admit_config_map(attrs.view, attrs.obj)


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"ConfigMap"}), validate=_validate,
                subresources=frozenset({"", "status"}))
