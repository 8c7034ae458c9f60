"""``describe`` pages of the policy and configuration kinds in kubectl's layout: PriorityClass,
ConfigMap, LimitRange, ResourceQuota, PodDisruptionBudget, Namespace, Service.

Each function mirrors one describer of kubectl's ``pkg/describe/describe.go`` (named in its
docstring) and returns tabbed lines; ``cli.output.tabwrite`` aligns them as kubectl's tabwriter.

Neighbours: ``cli.describe_base`` (shared blocks), ``cli.describe`` (dispatch).
"""

from __future__ import annotations

from typing import Any, Iterator

import math

from gpusched.cli.describe_base import (NONE, Related, annotation_lines, event_lines, go_value,
                                        label_lines, meta, selector_text)
from gpusched.objects.quantity import quantity_format
from gpusched.objects.quantity import quantity_string as quantity_text
from gpusched.objects.quantity import QuantityError, parse_quantity


def describe_priorityclass(pc: dict[str, Any], related: Related) -> list[str]:
    """describe.go describePriorityClass."""
    return [f"Name:\t{meta(pc).get('name', '')}", f"Value:\t{pc.get('value', 0)}",
            f"GlobalDefault:\t{go_value(bool(pc.get('globalDefault', False)))}",
            f"PreemptionPolicy:\t{pc.get('preemptionPolicy', 'PreemptLowerPriority')}",
            f"Description:\t{pc.get('description', '')}",
            *_equals_annotations(meta(pc).get("annotations")),
            *event_lines(related.events, related.clock)]


def _equals_annotations(values: dict[str, Any] | None) -> list[str]:
    """describePriorityClass prints annotations with printLabelsMultiline (``k=v``)."""
    return label_lines("Annotations", values)


def describe_configmap(cm: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeConfigMap (Data keys sorted here; kubectl ranges over a Go map)."""
    lines = [f"Name:\t{meta(cm).get('name', '')}", f"Namespace:\t{meta(cm).get('namespace', '')}",
             *label_lines("Labels", meta(cm).get("labels")),
             *annotation_lines("Annotations", meta(cm).get("annotations")),
             "", "Data", "===="]
    for key, value in sorted((cm.get("data") or {}).items()):
        lines += [f"{key}:", "----", *str(value).split("\n"), ""]
    lines += ["", "BinaryData", "===="]
    for key, value in sorted((cm.get("binaryData") or {}).items()):
        lines.append(f"{key}: {len(str(value)) * 3 // 4} bytes")
    return lines + [""] + event_lines(related.events, related.clock)


LIMIT_HEADER = ["Type", "Resource", "Min", "Max", "Default Request", "Default Limit",
                "Max Limit/Request Ratio"]


def _limit_rows(limit_range: dict[str, Any]) -> list[list[str]]:
    rows = []
    for item in (limit_range.get("spec") or {}).get("limits") or []:
        fields = ("min", "max", "defaultRequest", "default", "maxLimitRequestRatio")
        names = sorted({r for f in fields for r in (item.get(f) or {})})
        for resource in names:
            rows.append([str(item.get("type", "")), resource,
                         *(_limit_cell(item, f, resource) for f in fields)])
    return rows


def _limit_cell(item: dict[str, Any], field: str, resource: str) -> str:
    value = (item.get(field) or {}).get(resource)
    return "-" if value is None else quantity_text(value)


def describe_limitrange(limit_range: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeLimitRange (no events)."""
    lines = [f"Name:\t{meta(limit_range).get('name', '')}",
             f"Namespace:\t{meta(limit_range).get('namespace', '')}",
             "\t".join(LIMIT_HEADER), "\t".join("-" * len(h) for h in LIMIT_HEADER)]
    return lines + ["\t".join(row) for row in _limit_rows(limit_range)]


SCOPE_HELP = {   # describe.go helpTextForResourceQuotaScope
    "Terminating": "Matches all pods that have an active deadline. These pods have a limited lifespan "
                   "on a node before being actively terminated by the system.",
    "NotTerminating": "Matches all pods that do not have an active deadline. These pods usually include "
                      "long running pods whose container command is not expected to terminate.",
    "BestEffort": "Matches all pods that do not have resource requirements set. These pods have a best "
                  "effort quality of service.",
    "NotBestEffort": "Matches all pods that have at least one resource requirement set. These pods have a "
                     "burstable or guaranteed quality of service.",
}


def _quota_rows(quota: dict[str, Any], convert: bool = True) -> list[tuple[str, str, str]]:
    """Resource, used, hard. On the quota's own page (describeQuota) a used value whose format
    differs from the hard one is printed as its integer value in the hard value's format
    (resource.NewQuantity); the namespace page (DescribeResourceQuotas) prints both as stored."""
    hard = (quota.get("status") or {}).get("hard") or (quota.get("spec") or {}).get("hard") or {}
    used = (quota.get("status") or {}).get("used") or {}
    rows = []
    for name in sorted(hard):
        value, form = used.get(name, "0"), quantity_format(hard[name])
        if not convert:
            rows.append((name, quantity_text(value), quantity_text(hard[name])))
            continue
        if quantity_format(value) != form:
            value = _whole(value)
        rows.append((name, quantity_text(value, form), quantity_text(hard[name])))
    return rows


def _whole(value: object) -> int | object:
    """Quantity.Value(): the amount rounded up to a whole unit."""
    try:
        return math.ceil(parse_quantity(value))
    except (QuantityError, ValueError, TypeError):
        return value


def _scope_lines(spec: dict[str, Any], indent: str, bullet: str) -> list[str]:
    scopes = sorted(spec.get("scopes") or [])
    if not scopes:
        return []
    return [f"{indent}Scopes:\t{', '.join(scopes)}"] + [
        f"{indent}{bullet}* {SCOPE_HELP[s]}" for s in scopes if s in SCOPE_HELP]


def describe_quota(quota: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeQuota: Name, Namespace, (Scopes), then Resource / Used / Hard; no events."""
    spec = quota.get("spec") or {}
    lines = [f"Name:\t{meta(quota).get('name', '')}", f"Namespace:\t{meta(quota).get('namespace', '')}",
             *_scope_lines(spec, "", " "), "Resource\tUsed\tHard", "--------\t----\t----"]
    return lines + [f"{k}\t{u}\t{h}" for k, u, h in _quota_rows(quota)]


def describe_pdb(pdb: dict[str, Any], related: Related) -> list[str]:
    """describe.go describePodDisruptionBudget."""
    spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
    lines = [f"Name:\t{meta(pdb).get('name', '')}", f"Namespace:\t{meta(pdb).get('namespace', '')}"]
    if "minAvailable" in spec:
        lines.append(f"Min available:\t{spec['minAvailable']}")
    if "maxUnavailable" in spec:
        lines.append(f"Max unavailable:\t{spec['maxUnavailable']}")
    lines.append(f"Selector:\t{selector_text(spec.get('selector'), '<unset>')}")
    lines += ["Status:", f"    Allowed disruptions:\t{status.get('disruptionsAllowed', 0)}",
              f"    Current:\t{status.get('currentHealthy', 0)}",
              f"    Desired:\t{status.get('desiredHealthy', 0)}",
              f"    Total:\t{status.get('expectedPods', 0)}"]
    return lines + event_lines(related.events, related.clock)


def describe_namespace(ns: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeNamespace: status, then its quotas and LimitRanges."""
    name = meta(ns).get("name", "")
    lines = [f"Name:\t{name}", *label_lines("Labels", meta(ns).get("labels")),
             *annotation_lines("Annotations", meta(ns).get("annotations")),
             f"Status:\t{(ns.get('status') or {}).get('phase') or 'Active'}", ""]
    quotas = sorted(related.lookup("ResourceQuota", name), key=lambda q: meta(q).get("name", ""))
    if not quotas:
        lines.append("No resource quota.")
    else:
        lines.append("Resource Quotas")
        for quota in quotas:
            lines += [f"  Name:\t{meta(quota).get('name', '')}", *_scope_lines(quota.get("spec") or {}, "  ", ""),
                      "  Resource\tUsed\tHard", "  --------\t---\t---"]
            lines += [f"  {k}\t{u}\t{h}" for k, u, h in _quota_rows(quota, convert=False)]
    lines.append("")
    limit_ranges = related.lookup("LimitRange", name)
    if not limit_ranges:
        return lines + ["No LimitRange resource."]
    lines += ["Resource Limits", " " + "\t".join(LIMIT_HEADER), " " + "\t".join("-" * len(h) for h in LIMIT_HEADER)]
    for limit_range in limit_ranges:   # DescribeLimitRanges: one header, every range's rows
        lines += [" " + "\t".join(row) for row in _limit_rows(limit_range)]
    return lines


def describe_service(service: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeService, endpoints from the Service's EndpointSlices
    (ServiceDescriber lists them by ``kubernetes.io/service-name``)."""
    spec = service.get("spec") or {}
    slices = [s for s in related.lookup("EndpointSlice", meta(service).get("namespace"))
              if (meta(s).get("labels") or {}).get("kubernetes.io/service-name") == meta(service).get("name")]
    lines = [f"Name:\t{meta(service).get('name', '')}", f"Namespace:\t{meta(service).get('namespace', '')}",
             *label_lines("Labels", meta(service).get("labels")),
             *annotation_lines("Annotations", meta(service).get("annotations")),
             f"Selector:\t{','.join(f'{k}={v}' for k, v in sorted((spec.get('selector') or {}).items())) or NONE}",
             f"Type:\t{spec.get('type', '')}", *_service_address_lines(spec)]
    for port in spec.get("ports") or []:
        lines += _service_port_lines(port, slices)
    lines.append(f"Session Affinity:\t{spec.get('sessionAffinity', '')}")
    lines += _set_fields(spec, (("External Traffic Policy", "externalTrafficPolicy"),
                                ("Internal Traffic Policy", "internalTrafficPolicy"),
                                ("HealthCheck NodePort", "healthCheckNodePort")))
    return lines + event_lines(related.events, related.clock)


def _service_address_lines(spec: dict[str, Any]) -> list[str]:
    """From IP Family Policy (when set) to External Name (when set)."""
    lines = _set_fields(spec, (("IP Family Policy", "ipFamilyPolicy"),))
    lines += [f"IP Families:\t{','.join(spec.get('ipFamilies') or []) or NONE}",
              f"IP:\t{spec.get('clusterIP', '')}", f"IPs:\t{','.join(spec.get('clusterIPs') or []) or NONE}"]
    if spec.get("externalIPs"):
        lines.append(f"External IPs:\t{','.join(spec['externalIPs'])}")
    return lines + _set_fields(spec, (("Desired LoadBalancer IP", "loadBalancerIP"),
                                      ("External Name", "externalName")))


def _set_fields(spec: dict[str, Any], fields: tuple[tuple[str, str], ...]) -> list[str]:
    """``Title:<tab>value`` for each field that is set (kubectl skips the empty ones)."""
    return [f"{title}:\t{spec[field]}" for title, field in fields if spec.get(field)]


def _service_port_lines(port: dict[str, Any], slices: list[dict[str, Any]]) -> list[str]:
    name, protocol = port.get("name") or "<unset>", port.get("protocol", "")
    target = port.get("targetPort", port.get("port", 0))
    lines = [f"Port:\t{name}\t{port.get('port', 0)}/{protocol}", f"TargetPort:\t{target}/{protocol}"]
    if port.get("nodePort"):
        lines.append(f"NodePort:\t{name}\t{port['nodePort']}/{protocol}")
    return lines + [f"Endpoints:\t{_endpoints(slices, port.get('name') or '')}"]


def _endpoints(slices: list[dict[str, Any]], port_name: str, most: int = 3) -> str:
    """describe.go formatEndpointSlices: ready addresses (host:port for the named port), three
    at most, then ``+ N more...`` (set, as kubectl does, once any endpoint follows a full list)."""
    if not slices:
        return NONE
    shown: list[str] = []
    count, more = 0, False
    for port, endpoint in _port_endpoints(slices, port_name):
        more = more or len(shown) == most
        if (endpoint.get("conditions") or {}).get("ready") is False or not endpoint.get("addresses"):
            continue
        address = endpoint["addresses"][0]
        if not more:
            shown.append(address if port is None else _host_port(address, port.get("port", 0)))
        count += 1
    return f"{','.join(shown)} + {count - most} more..." if more else ",".join(shown)


def _port_endpoints(slices: list[dict[str, Any]],
                    port_name: str) -> Iterator[tuple[dict[str, Any] | None, dict[str, Any]]]:
    """Each slice's endpoints once per port named ``port_name`` (once, port None, for a slice
    without ports), in formatEndpointSlices' order."""
    for item in slices:
        ports = [p for p in item.get("ports") or [] if (p.get("name") or "") == port_name]
        for port in ports if item.get("ports") else [None]:
            for endpoint in item.get("endpoints") or []:
                yield port, endpoint


def _host_port(address: str, port: int) -> str:
    """Go's net.JoinHostPort: an IPv6 address goes in brackets."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


KIND_PAGES = {"ResourceQuota": describe_quota, "PriorityClass": describe_priorityclass,
              "ConfigMap": describe_configmap, "LimitRange": describe_limitrange,
              "PodDisruptionBudget": describe_pdb, "Namespace": describe_namespace,
              "Service": describe_service}
