"""``get`` columns of the core kinds beside workloads, as kubectl 1.32's printers show them.

kubernetes ``pkg/printers/internalversion/printers.go`` (serviceColumnDefinitions,
endpointColumnDefinitions, endpointSliceColumnDefinitions, storageClassColumnDefinitions,
persistentVolume(Claim)ColumnDefinitions, networkPolicyColumnDefinitions,
serviceAccountColumnDefinitions, secretColumnDefinitions,
horizontalPodAutoscalerColumnDefinitions) and the VerticalPodAutoscaler CRD's
additionalPrinterColumns. ``KIND_COLUMNS``: kind -> (header, cells, wide header, wide cells),
turned into ``cli.columns.Columns`` there.

Neighbours: ``cli.columns`` (registers these), ``cli.output`` (Clock).
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.cli.output import Clock

NONE = "<none>"
UNSET = "<unset>"
ACCESS_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
                "ReadWriteOncePod": "RWOP"}
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
Row = list[str]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def _name(obj: dict[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _age(obj: dict[str, Any], clock: Clock) -> str:
    return clock.age(_meta(obj).get("creationTimestamp"))


def _first_three(items: list[str]) -> str:
    """kubectl's formatEndpoints / formatEndpointSlice: at most 3, then `` + N more...``."""
    if not items:
        return NONE
    text = ",".join(items[:3])
    return text + (f" + {len(items) - 3} more..." if len(items) > 3 else "")


def _selector_text(selector: dict[str, Any] | None) -> str:
    """metav1.FormatLabelSelector for matchLabels / matchExpressions."""
    if not selector:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for req in selector.get("matchExpressions") or []:
        op, key, values = req.get("operator"), req.get("key"), ",".join(req.get("values") or [])
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": f"{key}", "DoesNotExist": f"!{key}"}.get(op, f"{key} {op}"))
    return ",".join(parts) or NONE


# ---- Service, Endpoints, EndpointSlice ------------------------------------------------------

def _service_ports(spec: dict[str, Any]) -> str:
    ports = []
    for port in spec.get("ports") or []:
        text = str(port.get("port", ""))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(ports) or NONE


def _external_ip(obj: dict[str, Any]) -> str:
    spec = _spec(obj)
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        return str(spec.get("externalName") or NONE)
    ingress = [i.get("ip") or i.get("hostname") for i in
               (_status(obj).get("loadBalancer") or {}).get("ingress") or []]
    ips = [*ingress, *(spec.get("externalIPs") or [])]
    if ips:
        return ",".join(str(ip) for ip in ips)
    return "<pending>" if kind == "LoadBalancer" else NONE


def _service_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec = _spec(obj)
    cluster_ip = spec.get("clusterIP") or NONE
    return [_name(obj), str(spec.get("type", "ClusterIP")), str(cluster_ip), _external_ip(obj),
            _service_ports(spec), _age(obj, clock)]


def _service_wide(obj: dict[str, Any], clock: Clock) -> Row:
    selector = _spec(obj).get("selector") or {}
    return [",".join(f"{k}={v}" for k, v in sorted(selector.items())) or NONE]


def _endpoints_cells(obj: dict[str, Any], clock: Clock) -> Row:
    items = []
    for subset in obj.get("subsets") or []:
        ports = subset.get("ports") or [{}]
        for address in subset.get("addresses") or []:
            for port in ports:
                items.append(f"{address.get('ip')}:{port['port']}" if port.get("port")
                             else str(address.get("ip")))
    return [_name(obj), _first_three(items), _age(obj, clock)]


def _endpointslice_cells(obj: dict[str, Any], clock: Clock) -> Row:
    ports = [str(p.get("port")) for p in obj.get("ports") or [] if p.get("port") is not None]
    addresses = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    return [_name(obj), str(obj.get("addressType", "")), ",".join(ports) or UNSET,
            _first_three(addresses) if addresses else UNSET, _age(obj, clock)]


# ---- storage --------------------------------------------------------------------------------

def _storageclass_cells(obj: dict[str, Any], clock: Clock) -> Row:
    annotations = _meta(obj).get("annotations") or {}
    name = _name(obj) + (" (default)" if any(annotations.get(a) == "true"
                                             for a in DEFAULT_CLASS_ANNOTATIONS) else "")
    return [name, str(obj.get("provisioner", "")), str(obj.get("reclaimPolicy", "Delete")),
            str(obj.get("volumeBindingMode", "Immediate")),
            "true" if obj.get("allowVolumeExpansion") else "false", _age(obj, clock)]


def _modes(obj: dict[str, Any], source: dict[str, Any]) -> str:
    return ",".join(ACCESS_MODES.get(m, m) for m in source.get("accessModes") or [])


def _pv_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec, status = _spec(obj), _status(obj)
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref.get("name") else ""
    return [_name(obj), str((spec.get("capacity") or {}).get("storage", "")), _modes(obj, spec),
            str(spec.get("persistentVolumeReclaimPolicy", "Retain")), str(status.get("phase", "")),
            claim, str(spec.get("storageClassName") or ""),
            str(spec.get("volumeAttributesClassName") or UNSET), str(status.get("reason") or ""),
            _age(obj, clock)]


def _volume_mode_wide(obj: dict[str, Any], clock: Clock) -> Row:
    return [str(_spec(obj).get("volumeMode") or "Filesystem")]


def _pvc_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec, status = _spec(obj), _status(obj)
    bound = status.get("phase") == "Bound"
    capacity = str((status.get("capacity") or {}).get("storage", "")) if bound else ""
    return [_name(obj), str(status.get("phase", "Pending")), str(spec.get("volumeName") or ""),
            capacity, _modes(obj, status) if bound else "", str(spec.get("storageClassName") or ""),
            str(spec.get("volumeAttributesClassName") or UNSET), _age(obj, clock)]


# ---- policy, accounts, secrets, autoscalers ---------------------------------------------------

def _networkpolicy_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _selector_text(_spec(obj).get("podSelector")), _age(obj, clock)]


def _serviceaccount_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), str(len(obj.get("secrets") or [])), _age(obj, clock)]


def _secret_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), str(obj.get("type", "Opaque")), str(len(obj.get("data") or {})),
            _age(obj, clock)]


def _hpa_targets(obj: dict[str, Any]) -> str:
    """kubectl's ``formatHPAMetrics`` (pkg/printers/internalversion/printers.go, 1.32): one
    ``current/target`` per metric, resources prefixed ``cpu: ``, at most two then ``+ N more...``."""
    spec = _spec(obj)
    if obj.get("apiVersion") == "autoscaling/v1" or "targetCPUUtilizationPercentage" in spec:
        target = spec.get("targetCPUUtilizationPercentage", 80)
        current = _status(obj).get("currentCPUUtilizationPercentage")
        return f"cpu: {'<unknown>' if current is None else f'{current}%'}/{target}%"
    specs, statuses = spec.get("metrics") or [], _status(obj).get("currentMetrics") or []
    if not specs:
        return "<none>"
    items = [_hpa_target(metric, statuses[i] if i < len(statuses) else {})
             for i, metric in enumerate(specs)]
    if len(items) > 2:
        return f"{', '.join(items[:2])} + {len(items) - 2} more..."
    return ", ".join(items)


def _hpa_target(metric: dict[str, Any], status: dict[str, Any]) -> str:
    kind = metric.get("type")
    field = {"External": "external", "Pods": "pods", "Object": "object", "Resource": "resource",
             "ContainerResource": "containerResource"}.get(str(kind))
    if field is None:
        return "<unknown type>"
    source, target = metric.get(field) or {}, (metric.get(field) or {}).get("target") or {}
    current = (status.get(field) or {}).get("current") if status.get(field) else None
    if kind in ("External", "Object"):
        return _value_target(target, current)
    if kind == "Pods":
        shown = str(current.get("averageValue", "0")) if current is not None else "<unknown>"
        return f"{shown}/{target.get('averageValue', '')}"
    return _resource_target(source.get("name", ""), target, current)


def _value_target(target: dict[str, Any], current: dict[str, Any] | None) -> str:
    """External and Object metrics: ``current/target``, `` (avg)`` for an average value."""
    key = "averageValue" if target.get("averageValue") is not None else "value"
    shown = str((current or {}).get(key, "<unknown>")) if current is not None else "<unknown>"
    suffix = " (avg)" if key == "averageValue" else ""
    return f"{shown}/{target.get(key, '')}{suffix}"


def _resource_target(name: Any, target: dict[str, Any], current: dict[str, Any] | None) -> str:
    """Resource and ContainerResource metrics: ``name: current/target`` by value or utilization."""
    if target.get("averageValue") is not None:
        shown = str(current.get("averageValue", "0")) if current is not None else "<unknown>"
        return f"{name}: {shown}/{target['averageValue']}"
    shown = (f"{current['averageUtilization']}%" if current is not None
             and current.get("averageUtilization") is not None else "<unknown>")
    goal = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
    return f"{name}: {shown}/{goal}"


def _hpa_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec = _spec(obj)
    ref = spec.get("scaleTargetRef") or {}
    return [_name(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}", _hpa_targets(obj),
            str(spec.get("minReplicas", 1)), str(spec.get("maxReplicas", "")),
            str(_status(obj).get("currentReplicas", 0)), _age(obj, clock)]


def _vpa_cells(obj: dict[str, Any], clock: Clock) -> Row:
    recommendation = ((_status(obj).get("recommendation") or {})
                      .get("containerRecommendations") or [{}])[0].get("target") or {}
    provided = next((c.get("status", "") for c in _status(obj).get("conditions") or []
                     if c.get("type") == "RecommendationProvided"), "")
    return [_name(obj), str((_spec(obj).get("updatePolicy") or {}).get("updateMode", "")),
            str(recommendation.get("cpu", "")), str(recommendation.get("memory", "")), provided,
            _age(obj, clock)]


Cells = Callable[[dict[str, Any], Clock], Row]
KIND_COLUMNS: dict[str, tuple[tuple[str, ...], Cells, tuple[str, ...], Cells | None]] = {
    "Service": (("NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"), _service_cells,
                ("SELECTOR",), _service_wide),
    "Endpoints": (("NAME", "ENDPOINTS", "AGE"), _endpoints_cells, (), None),
    "EndpointSlice": (("NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"), _endpointslice_cells,
                      (), None),
    "StorageClass": (("NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE",
                      "ALLOWVOLUMEEXPANSION", "AGE"), _storageclass_cells, (), None),
    "PersistentVolume": (("NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM",
                          "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"), _pv_cells,
                         ("VOLUMEMODE",), _volume_mode_wide),
    "PersistentVolumeClaim": (("NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES",
                               "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"), _pvc_cells,
                              ("VOLUMEMODE",), _volume_mode_wide),
    "NetworkPolicy": (("NAME", "POD-SELECTOR", "AGE"), _networkpolicy_cells, (), None),
    "ServiceAccount": (("NAME", "SECRETS", "AGE"), _serviceaccount_cells, (), None),
    "Secret": (("NAME", "TYPE", "DATA", "AGE"), _secret_cells, (), None),
    "HorizontalPodAutoscaler": (("NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS",
                                 "AGE"), _hpa_cells, (), None),
    "VerticalPodAutoscaler": (("NAME", "MODE", "CPU", "MEM", "PROVIDED", "AGE"), _vpa_cells, (),
                              None),
}
