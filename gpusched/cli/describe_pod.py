"""``gpusched describe pod`` in kubectl 1.32's layout (``pkg/describe/describe.go`` describePod,
describeContainers, describeContainerState, describeVolumes, printPodTolerationsMultiline,
DescribeEvents; ``pkg/util/qos`` GetPodQOS), as tabbed lines for ``cli.output.tabwrite``.

gpusched's bookkeeping annotations (assigned GPUs and devices, start time) are hidden from the
Annotations block; what they say is shown in a final ``GPU Assignment (gpusched):`` block after
Events, which kubectl has no equivalent of.

Neighbours: ``cli.describe`` dispatches here; ``cli.describe_template`` (containers, volumes,
tolerations), ``cli.describe_base`` (dates, labels, annotations, events).
"""

from __future__ import annotations

from typing import Any, Callable

import re

from gpusched.objects.assignment import held_by
from gpusched.cli.describe_base import (NONE, Related, annotation_lines, controlled_by, event_lines,
                                        kube_date, label_lines, meta)
from gpusched.cli.output import tabwrite
from gpusched.cli.describe_template import containers_lines, toleration_lines, volumes_lines
from gpusched.objects.quantity import QuantityError, parse_quantity
from fractions import Fraction

GPU_BLOCK = "GPU Assignment (gpusched):"
_KEYED = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


def describe_pod(pod: dict[str, Any], related: Related) -> str:
    """describe.go describePod, then gpusched's GPU block (aligned on its own, so it never
    widens the Events table's columns)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    lines = _header_lines(pod, related)
    if spec.get("initContainers"):
        lines += containers_lines("Init Containers", spec["initContainers"], "",
                                  status.get("initContainerStatuses") or [], field_resolver(pod))
    lines += containers_lines("Containers", spec.get("containers") or [], "",
                              status.get("containerStatuses") or [], field_resolver(pod))
    if status.get("conditions"):
        lines += ["Conditions:", "  Type\tStatus"]
        lines += [f"  {c.get('type', '')} \t{c.get('status', '')} " for c in status["conditions"]]
    lines += volumes_lines(spec.get("volumes") or [], "")
    lines.append(f"QoS Class:\t{pod_qos(pod)}")
    lines += label_lines("Node-Selectors", spec.get("nodeSelector"))
    lines += toleration_lines("Tolerations", spec.get("tolerations") or [])
    lines += event_lines(related.events, related.clock)
    return tabwrite(lines) + "\n" + tabwrite(gpu_lines(pod))


def _header_lines(pod: dict[str, Any], related: Related) -> list[str]:
    """describePod from Name to NominatedNodeName."""
    info, spec, status = meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    lines = [f"Name:\t{info.get('name', '')}", f"Namespace:\t{info.get('namespace', '')}"]
    if spec.get("priority") is not None:
        lines.append(f"Priority:\t{spec['priority']}")
    for title, field in (("Priority Class Name", "priorityClassName"), ("Runtime Class Name", "runtimeClassName"),
                         ("Service Account", "serviceAccountName")):
        if spec.get(field):
            lines.append(f"{title}:\t{spec[field]}")
    node = spec.get("nodeName")
    lines.append(f"Node:\t{node}/{status.get('hostIP', '')}" if node else f"Node:\t{NONE}")
    if status.get("startTime"):
        lines.append(f"Start Time:\t{kube_date(status['startTime'])}")
    lines += label_lines("Labels", info.get("labels"))
    lines += annotation_lines("Annotations", info.get("annotations"))
    lines += _status_lines(info, status, related)
    lines += controlled_by(pod)
    if status.get("nominatedNodeName"):
        lines.append(f"NominatedNodeName:\t{status['nominatedNodeName']}")
    return lines


def _status_lines(info: dict[str, Any], status: dict[str, Any], related: Related) -> list[str]:
    """describePod from Status (Terminating while being deleted) to IPs."""
    if info.get("deletionTimestamp") and status.get("phase") not in ("Failed", "Succeeded"):
        lines = [f"Status:\tTerminating (lasts {related.clock.age(info['deletionTimestamp'])})",
                 f"Termination Grace Period:\t{info.get('deletionGracePeriodSeconds', 0)}s"]
    else:
        lines = [f"Status:\t{status.get('phase', '')}"]
    lines += [f"{title}:\t{status[field]}" for title, field in (("Reason", "reason"), ("Message", "message"))
              if status.get(field)]
    lines.append(f"IP:\t{status.get('podIP', '')}")
    ips = [str(item.get("ip", "")) for item in status.get("podIPs") or []]
    return lines + (["IPs:", *(f"  IP:\t{ip}" for ip in ips)] if ips else [f"IPs:\t{NONE}"])


def gpu_lines(pod: dict[str, Any]) -> list[str]:
    """gpusched's own block (no kubectl counterpart): the GPU indices and device IDs the pod
    holds, from the annotations the Annotations block hides."""
    held = held_by(pod)
    gpus, devices = ",".join(str(g) for g in held.gpu_indices), ",".join(held.device_ids)
    if not gpus and not devices:
        return [f"{GPU_BLOCK}\t{NONE}"]
    return [GPU_BLOCK, f"  Assigned GPUs:\t{gpus or NONE}", f"  Assigned Devices:\t{devices or NONE}"]


def field_resolver(pod: dict[str, Any]) -> Callable[[str], str]:
    """describe.go EnvValueRetriever: the value a downward-API ``fieldPath`` names ("" if none)."""
    info, spec, status = meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    simple = {"metadata.name": info.get("name"), "metadata.namespace": info.get("namespace"),
              "metadata.uid": info.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"), "status.hostIP": status.get("hostIP"),
              "status.podIP": status.get("podIP")}

    def resolve(path: str) -> str:
        keyed = _KEYED.match(path)
        if keyed:
            return str((info.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
        return str(simple.get(path) or "")
    return resolve


def pod_qos(pod: dict[str, Any]) -> str:
    """kubectl pkg/util/qos GetPodQOS over cpu and memory: BestEffort without requests or limits,
    Guaranteed when every container limits both and requests equal limits, else Burstable."""
    spec = pod.get("spec") or {}
    requests: dict[str, Fraction | int] = {}
    limits: dict[str, Fraction | int] = {}
    guaranteed = True
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        resources = container.get("resources") or {}
        _add(requests, _qos_amounts(resources.get("requests")))
        container_limits = _qos_amounts(resources.get("limits"))
        _add(limits, container_limits)
        if set(container_limits) != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) \
            and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _qos_amounts(values: dict[str, Any] | None) -> dict[str, Fraction | int]:
    """The cpu and memory amounts above zero of one container's requests or limits."""
    return {name: _amount(value) for name, value in (values or {}).items()
            if name in ("cpu", "memory") and _amount(value) > 0}


def _add(totals: dict[str, Fraction | int], amounts: dict[str, Fraction | int]) -> None:
    for name, amount in amounts.items():
        totals[name] = totals.get(name, 0) + amount


def _amount(value: object) -> Fraction | int:
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return 0
