"""``logs`` for a pod of the embedded cluster: the kubelet-side events of the pod's life
(scheduled, devices allocated, started, finished with exit code), the device plugin's
``Allocate`` lines, labelled as such, followed by the simulated output of a container command
``metrics.container`` knows (``command: ["nvidia-smi"]`` in the guides' test pods).

Neighbours: ``metrics.container`` (the simulated command output, the marker line); used by
``cli`` (``gpusched logs``) and ``server`` (``pods/log``).
"""

from __future__ import annotations

from typing import Any

from datetime import datetime

import yaml

from gpusched.cluster.kubelet.device_inputs import device_inputs
from gpusched.cluster.apiserver.store import EPOCH
from gpusched.cluster.apiserver.view import View
from gpusched.metrics.cluster_source import seconds_of
from gpusched.metrics.container import (ContainerView, ExecResult, _unwrap_shell, build_view,
                                        container_names, exec_output, known_output, marker)
from gpusched.objects import limits
from gpusched.objects.assignment import held_by
from gpusched.objects.pod import annotation_seconds
from gpusched.objects.types import ANN_START_TIME

# ---- logs ---------------------------------------------------------------------------------------

def pod_log(view: View, pod: dict[str, Any], container: str) -> str:
    """``kubectl logs``: the kubelet-side life of the pod, then its known command's output."""
    lines = [marker(pod, container, "log") + " (kubelet-side events of the pod's life)"]
    lines += _event_lines(view, pod)
    _insert_allocation(view, pod, container, lines)
    lines += _termination(pod, container)
    lines += _plugin_lines(view, pod, container)
    lines += _command_lines(view, pod, container)
    return "\n".join(lines) + "\n"


def _event_lines(view: View, pod: dict[str, Any]) -> list[str]:
    """The pod's events (by uid, or by name where an event names no uid)."""
    meta = pod.get("metadata") or {}
    uid = meta.get("uid", "")
    lines = []
    for event in view.list_events(meta.get("namespace", "default")):
        ref = event.get("involvedObject") or {}
        if ref.get("uid") == uid or (ref.get("kind") == "Pod" and ref.get("name") == meta.get("name")
                                     and not ref.get("uid")):
            lines.append(f"{event.get('lastTimestamp', '')} {event.get('reason', '')}: "
                         f"{event.get('message', '')}")
    return lines


def _insert_allocation(view: View, pod: dict[str, Any], container: str, lines: list[str]) -> None:
    """The kubelet's device allocation, right after the Scheduled event (or the first line)."""
    ids = ",".join(held_by(pod).device_ids)
    started = annotation_seconds(pod, ANN_START_TIME)
    if not ids or started is None:
        return
    when = view.timestamp(started)
    cv = build_view(view, pod, container)
    allocated = (f"{when} DevicesAllocated: {ids} (NVIDIA_VISIBLE_DEVICES="
                 f"{cv.env.get('NVIDIA_VISIBLE_DEVICES', '')})")
    after = next((i for i, line in enumerate(lines) if " Scheduled: " in line), 0)
    lines.insert(after + 1, allocated)


def _plugin_lines(view: View, pod: dict[str, Any], container: str) -> list[str]:
    """A running device plugin pod's own log."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get("app") == "nvidia-device-plugin-daemonset" and container == "nvidia-device-plugin" \
            and (pod.get("status") or {}).get("phase") == "Running":
        return ["[gpusched: simulated output of the device plugin]", *device_plugin_log(view, pod)]
    return []


def _command_lines(view: View, pod: dict[str, Any], container: str) -> list[str]:
    """The simulated output of the container's command, once it started (not for ``sleep``)."""
    spec: dict[str, Any] = next((c for c in (pod.get("spec") or {}).get("containers") or []
                                 if c.get("name") == container), {})
    words = _unwrap_shell([str(w) for w in (spec.get("command") or []) + (spec.get("args") or [])])
    started = (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed")
    if started and words and words[0] != "sleep":
        answer = known_output(view, pod, container, words)
        if answer is not None:
            return [f"[gpusched: simulated output of `{' '.join(words)}`]", answer.stdout]
    return []


def _klog(view: View, pod: dict[str, Any], source: str, text: str, level: str = "I") -> str:
    """One klog line at the pod's start time: ``I0101 00:00:00.000000       1 main.go:1] text``."""
    start = annotation_seconds(pod, ANN_START_TIME) or 0.0
    when = datetime.fromtimestamp(EPOCH.timestamp() + start, tz=EPOCH.tzinfo)
    return f"{level}{when:%m%d %H:%M:%S}.000000       1 {source}] {text}"


def _loaded_config(raw: str) -> dict[str, Any]:
    """The config text the plugin printed (it parsed, or the state would carry its error)."""
    try:
        loaded = limits.safe_load(raw)
    except (yaml.YAMLError, limits.LimitError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def device_plugin_log(view: View, pod: dict[str, Any]) -> list[str]:
    """What the device plugin logs at start (k8s-device-plugin cmd/nvidia-device-plugin/main.go
    and internal/plugin/server.go messages): the config it loaded, one GRPC server and one
    kubelet registration per advertised resource."""
    import json as _json

    from gpusched.devices.advertise import node_device_state

    node = view.get("Node", (pod.get("spec") or {}).get("nodeName", ""))
    if node is None:
        return []
    inputs = device_inputs(view)
    state = node_device_state(node, inputs.for_node(node["metadata"]["name"]),
                              policy=inputs.policy, recorded=True)
    image = next((c.get("image", "") for c in (pod.get("spec") or {}).get("containers") or []), "")
    lines = [_klog(view, pod, "main.go:235", f'"Starting NVIDIA Device Plugin" '
                                           f'version="{image.rpartition(":")[2]}"'),
             _klog(view, pod, "main.go:317", "Loading configuration.")]
    if state.error:
        return lines + [_klog(view, pod, "main.go:173", f"error starting plugins: {state.error}",
                              "E")]
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": state.devices.mig_strategy}}
    for cm in inputs.for_node(node["metadata"]["name"]):
        raw = (cm.get("data") or {}).get(state.config_key) if state.config_key else None
        if raw:
            loaded = _loaded_config(raw)
            config = {**loaded, "flags": {**(loaded.get("flags") or {}),
                                          "migStrategy": state.devices.mig_strategy}}
            break
    lines += [_klog(view, pod, "main.go:353", ""), "Running with config:",
              _json.dumps(config, indent=2), _klog(view, pod, "main.go:356", "Retrieving plugins.")]
    for resource in sorted(state.capacity):
        sock = resource.replace("nvidia.com/", "nvidia-").replace("/", "-")
        lines += [_klog(view, pod, "server.go:195", f"Starting GRPC server for '{resource}'"),
                  _klog(view, pod, "server.go:139", f"Starting to serve '{resource}' on "
                                                    f"/var/lib/kubelet/device-plugins/{sock}.sock"),
                  _klog(view, pod, "server.go:146", f"Registered device plugin for '{resource}' "
                                                    f"with Kubelet")]
    return lines


def _termination(pod: dict[str, Any], container: str) -> list[str]:
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated")
        if cs.get("name") == container and terminated:
            return [f"{terminated.get('finishedAt', '')} Finished: container {container} exited "
                    f"with code {terminated.get('exitCode', 0)} "
                    f"({terminated.get('reason', 'Completed')})"]
    if status.get("phase") == "Failed":
        return [f"{_last_time(pod)} Failed: {status.get('reason', '')}: {status.get('message', '')}"]
    return []


def _last_time(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("startTime") or
               (pod.get("metadata") or {}).get("creationTimestamp", ""))


__all__ = ["ContainerView", "ExecResult", "build_view", "container_names", "exec_output",
           "known_output", "pod_log", "seconds_of"]
