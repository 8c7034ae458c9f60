"""PodSpec and container fields gpusched stores but does not act on, validated as upstream does.

From kubernetes ``pkg/apis/core/validation/validation.go``:

- ``validateContainerPorts``: ``containerPort`` required (0 is absent) and 1..65535, ``hostPort``
  1..65535 when set, ``protocol`` one of SCTP/TCP/UDP (defaulted to TCP before), port names
  IANA service names, unique within the container;
- ``validateEnv``: each name required, printable ASCII other than ``=``
  (``IsRelaxedEnvVarName``);
- ``ValidatePodSpec``: ``nodeName`` a DNS-1123 subdomain (``ValidateNodeName``),
  ``activeDeadlineSeconds`` 1..2^31-1, ``dnsPolicy`` one of the four policies (``None`` needs a
  ``dnsConfig``).

Neighbours: fieldcheck (Errors), names; used by objects.podspec.
"""

from __future__ import annotations

from typing import Any

from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import dns1123_subdomain_errors, env_var_name_errors, port_name_errors, port_number_errors

PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
MAX_INT32 = 2**31 - 1


def validate_container_fields(container: dict[str, Any], path: str, e: Errors) -> None:
    """A container's ports and environment variable names."""
    _ports(e.items_of(container, "ports", f"{path}.ports") or [], f"{path}.ports", e)
    for i, var in enumerate(e.items_of(container, "env", f"{path}.env") or []):
        if not isinstance(var, dict):
            continue
        name = e.string(var, "name", f"{path}.env[{i}].name")
        if not name:
            if not isinstance(var.get("name"), (int, float, dict, list)):
                e.required(f"{path}.env[{i}].name")
            continue
        for msg in env_var_name_errors(name):
            e.invalid(f"{path}.env[{i}].name", name, msg)


def _ports(ports: list[Any], path: str, e: Errors) -> None:
    """``validateContainerPorts``."""
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if not isinstance(port, dict):
            continue
        name = e.string(port, "name", f"{p}.name")
        if name:
            errors = port_name_errors(name)
            for msg in errors:
                e.invalid(f"{p}.name", name, msg)
            if not errors and name in names:
                e.duplicate(f"{p}.name", name)
            names.add(name)
        number = e.integer(port, "containerPort", f"{p}.containerPort")
        if not number:
            if number == 0 or "containerPort" not in port:
                e.required(f"{p}.containerPort")
        else:
            for msg in port_number_errors(number):
                e.invalid(f"{p}.containerPort", number, msg)
        host = e.integer(port, "hostPort", f"{p}.hostPort")
        for msg in port_number_errors(host) if host else ():
            e.invalid(f"{p}.hostPort", host, msg)
        protocol = e.string(port, "protocol", f"{p}.protocol")
        if not protocol:
            e.required(f"{p}.protocol")
        elif protocol not in PORT_PROTOCOLS:
            e.unsupported(f"{p}.protocol", protocol, PORT_PROTOCOLS)


def validate_pod_fields(spec: dict[str, Any], path: str, e: Errors) -> None:
    """``nodeName``, ``activeDeadlineSeconds`` and ``dnsPolicy`` of a PodSpec."""
    node = e.string(spec, "nodeName", f"{path}.nodeName")
    for msg in dns1123_subdomain_errors(node) if node else ():
        e.invalid(f"{path}.nodeName", node, msg)
    deadline = e.integer(spec, "activeDeadlineSeconds", f"{path}.activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        e.invalid(f"{path}.activeDeadlineSeconds", deadline, f"must be between 1 and {MAX_INT32}, inclusive")
    policy = e.string(spec, "dnsPolicy", f"{path}.dnsPolicy")
    if policy and policy not in DNS_POLICIES:      # "" is defaulted to ClusterFirst (v1 defaults)
        e.unsupported(f"{path}.dnsPolicy", policy, DNS_POLICIES)
    elif policy == "None" and spec.get("dnsConfig") is None:
        e.required(f"{path}.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None")
