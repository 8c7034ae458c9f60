"""The ``Pod Template:`` block of kubectl's workload describe pages (Deployment, ReplicaSet, Job,
DaemonSet): labels, annotations, containers with ports, command, resources, environment and
mounts, volumes, priority class, node selectors and tolerations.

Mirrors kubectl ``pkg/describe/describe.go`` DescribePodTemplate, describeContainers (basic info,
command, resources, env, mounts; a template has no container statuses), describeVolumes and
printPodTolerationsMultiline. Returns tabbed lines for ``cli.output.tabwrite``.

Neighbours: ``cli.describe_workloads`` (the pages), ``cli.describe_base`` (shared blocks).
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.cli.describe_base import (NONE, annotation_lines, kube_date, label_lines,
                                        selector_text)
from gpusched.objects.quantity import quantity_string as quantity_text

L1, L2, L3 = "  ", "    ", "      "   # describe.go PrefixWriter LEVEL_1..3


def pod_template_lines(template: dict[str, Any] | None) -> list[str]:
    """describe.go DescribePodTemplate."""
    template = template or {}
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    lines = ["Pod Template:", *label_lines("  Labels", meta.get("labels"))]
    if meta.get("annotations"):
        lines += annotation_lines("  Annotations", meta["annotations"])
    if spec.get("serviceAccountName"):
        lines.append(f"{L1}Service Account:\t{spec['serviceAccountName']}")
    if spec.get("initContainers"):
        lines += containers_lines("Init Containers", spec["initContainers"])
    lines += containers_lines("Containers", spec.get("containers") or [])
    lines += volumes_lines(spec.get("volumes") or [])
    lines += _spread_lines(spec.get("topologySpreadConstraints") or [])
    if spec.get("priorityClassName"):
        lines.append(f"{L1}Priority Class Name:\t{spec['priorityClassName']}")
    lines += label_lines("  Node-Selectors", spec.get("nodeSelector"))
    return lines + toleration_lines("  Tolerations", spec.get("tolerations") or [])


def containers_lines(label: str, containers: list[dict[str, Any]], space: str = "  ",
                     statuses: list[dict[str, Any]] | None = None, resolve: Callable[[str], str] | None = None) -> list[str]:
    """describe.go describeContainers. A template passes space ``"  "`` (names get one more
    space) and no statuses; a pod passes space ``""``, its container statuses (Container ID,
    Image ID, State, Ready, Restart Count) and ``resolve`` for field references."""
    by_name = {str(s.get("name", "")): s for s in statuses or []} if statuses is not None else {}
    lines = [f"{space}{label}:" + ("" if containers else f" {NONE}")]
    for container in containers:
        status = by_name.get(str(container.get("name", "")))
        lines.append(f"{L1}{' ' if space else ''}{container.get('name', '')}:")
        if status is not None:
            lines.append(f"{L2}Container ID:\t{status.get('containerID', '')}")
        lines.append(f"{L2}Image:\t{container.get('image', '')}")
        if status is not None:
            lines.append(f"{L2}Image ID:\t{status.get('imageID', '')}")
        lines += _port_lines(container.get("ports") or [])
        lines += _command_lines(container)
        if status is not None:
            lines += container_state_lines(status)
        lines += resource_lines(container.get("resources") or {})
        lines += _env_from_lines(container.get("envFrom") or [])
        lines += _env_lines(container.get("env") or [], resolve)
        lines += _mount_lines(container.get("volumeMounts") or [])
    return lines


def container_state_lines(status: dict[str, Any]) -> list[str]:
    """describe.go describeContainerState: State (and Last State when it terminated), Ready
    (printBool: ``True``/``False``), Restart Count."""
    lines = _state_lines("State", status.get("state") or {})
    if (status.get("lastState") or {}).get("terminated"):
        lines += _state_lines("Last State", status["lastState"])
    return lines + [f"{L2}Ready:\t{bool(status.get('ready', False))}",
                    f"{L2}Restart Count:\t{int(status.get('restartCount', 0) or 0)}"]


def _state_lines(title: str, state: dict[str, Any]) -> list[str]:
    """describe.go describeStatus: Running (Started), Waiting (Reason), Terminated (Reason,
    Message, Exit Code, Signal, Started, Finished)."""
    if state.get("running") is not None:
        return [f"{L2}{title}:\tRunning", f"{L3}Started:\t{kube_date(state['running'].get('startedAt'))}"]
    if state.get("terminated") is not None:
        done = state["terminated"]
        lines = [f"{L2}{title}:\tTerminated"]
        lines += [f"{L3}{key}:\t{done[field]}" for key, field in (("Reason", "reason"), ("Message", "message"))
                  if done.get(field)]
        lines.append(f"{L3}Exit Code:\t{int(done.get('exitCode', 0) or 0)}")
        if int(done.get("signal", 0) or 0) > 0:
            lines.append(f"{L3}Signal:\t{int(done['signal'])}")
        return lines + [f"{L3}Started:\t{kube_date(done.get('startedAt'))}",
                        f"{L3}Finished:\t{kube_date(done.get('finishedAt'))}"]
    lines = [f"{L2}{title}:\tWaiting"]
    reason = (state.get("waiting") or {}).get("reason")
    return lines + ([f"{L3}Reason:\t{reason}"] if reason else [])


def _port_lines(ports: list[dict[str, Any]]) -> list[str]:
    """describeContainerBasicInfo: ``Port`` / ``Ports`` and ``Host Port`` / ``Host Ports``."""
    lines = []
    for title, field in (("Port", "containerPort"), ("Host Port", "hostPort")):
        text = ", ".join(f"{p.get(field, 0)}/{p.get('protocol', 'TCP')}" for p in ports)
        lines.append(f"{L2}{title}s:\t{text}" if "," in text else f"{L2}{title}:\t{text or NONE}")
    return lines


def _command_lines(container: dict[str, Any]) -> list[str]:
    lines = []
    for title, field in (("Command", "command"), ("Args", "args")):
        if container.get(field):
            lines.append(f"{L2}{title}:")
            lines += [f"{L3}{part}" for item in container[field] for part in str(item).split("\n")]
    return lines


def resource_lines(resources: dict[str, Any], indent: str = L2) -> list[str]:
    """describe.go describeResources: Limits then Requests, resource names sorted."""
    lines = []
    for title, field in (("Limits", "limits"), ("Requests", "requests")):
        values = resources.get(field) or {}
        if values:
            lines.append(f"{indent}{title}:")
            lines += [f"{indent}  {name}:\t{quantity_text(values[name])}" for name in sorted(values)]
    return lines


def _env_from_lines(sources: list[dict[str, Any]]) -> list[str]:
    """describeContainerEnvFrom: ``NAME\\tConfigMap\\tOptional: false`` per source."""
    if not sources:
        return []
    lines = [f"{L2}Environment Variables from:"]
    for source in sources:
        kind, ref = ("ConfigMap", source["configMapRef"]) if source.get("configMapRef") else \
            ("Secret", source.get("secretRef") or {})
        if source.get("prefix"):
            kind += f" with prefix '{source['prefix']}'"
        optional = str(bool(ref.get("optional", False))).lower()
        lines.append(f"{L3}{ref.get('name', '')}\t{kind}\tOptional: {optional}")
    return lines


def _env_lines(env: list[dict[str, Any]], resolve: Callable[[str], str] | None = None) -> list[str]:
    """describeContainerEnvVars (a template has no resolver: field references print empty; a
    pod's ``resolve(fieldPath)`` gives the value)."""
    if not env:
        return [f"{L2}Environment:\t{NONE}"]
    lines = [f"{L2}Environment:"]
    for variable in env:
        name, source = variable.get("name", ""), variable.get("valueFrom")
        if not source:
            parts = str(variable.get("value", "")).split("\n")
            lines += [f"{L3}{name}:\t{parts[0]}"] + [f"{L3}\t{part}" for part in parts[1:]]
        else:
            lines.append(f"{L3}{name}:\t{_value_from(source, resolve)}")
    return lines


def _value_from(source: dict[str, Any], resolve: Callable[[str], str] | None = None) -> str:
    if source.get("fieldRef"):
        ref = source["fieldRef"]
        value = resolve(str(ref.get("fieldPath", ""))) if resolve else ""
        return f"{value} ({ref.get('apiVersion', '')}:{ref.get('fieldPath', '')})"
    if source.get("resourceFieldRef"):
        return f" ({source['resourceFieldRef'].get('resource', '')})"
    for field, what, joint in (("secretKeyRef", "secret", "in"), ("configMapKeyRef", "config map", "of")):
        if source.get(field):
            ref = source[field]
            optional = str(bool(ref.get("optional", False))).lower()
            return (f"<set to the key '{ref.get('key', '')}' {joint} {what} '{ref.get('name', '')}'>"
                    f"\tOptional: {optional}")
    return ""


def _mount_lines(mounts: list[dict[str, Any]]) -> list[str]:
    """describeContainerVolumes: mounts sorted by path, ``PATH from NAME (rw|ro[,path="sub"])``."""
    if not mounts:
        return [f"{L2}Mounts:\t{NONE}"]
    lines = [f"{L2}Mounts:"]
    for mount in sorted(mounts, key=lambda m: str(m.get("mountPath", ""))):
        flags = ["ro" if mount.get("readOnly") else "rw"]
        if mount.get("subPath"):
            flags.append(f'path="{mount["subPath"]}"')
        lines.append(f"{L3}{mount.get('mountPath', '')} from {mount.get('name', '')} ({','.join(flags)})")
    return lines


VOLUME_TYPES = {   # describe.go print*VolumeSource: field -> (type line, ((title, key, default), ...))
    "persistentVolumeClaim": ("PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the "
                              "same namespace)", (("ClaimName", "claimName", ""), ("ReadOnly", "readOnly", False))),
    "emptyDir": ("EmptyDir (a temporary directory that shares a pod's lifetime)",
                 (("Medium", "medium", ""), ("SizeLimit", "sizeLimit", "<unset>"))),
    "hostPath": ("HostPath (bare host directory volume)",
                 (("Path", "path", ""), ("HostPathType", "type", NONE))),
    "configMap": ("ConfigMap (a volume populated by a ConfigMap)",
                  (("Name", "name", ""), ("Optional", "optional", False))),
    "secret": ("Secret (a volume populated by a Secret)",
               (("SecretName", "secretName", ""), ("Optional", "optional", False))),
}


def volumes_lines(volumes: list[dict[str, Any]], space: str = "  ") -> list[str]:
    """describe.go describeVolumes for the kinds gpusched's examples use; others ``<unknown>``
    (a template passes space ``"  "``: names get one more space; a pod ``""``)."""
    if not volumes:
        return [f"{space}Volumes:\t{NONE}"]
    lines = [f"{space}Volumes:"]
    for volume in volumes:
        lines.append(f"{L1}{' ' if space else ''}{volume.get('name', '')}:")
        field = next((f for f in VOLUME_TYPES if f in volume), None)
        if field is None:
            lines.append(f"{L1}<unknown>")
            continue
        kind, rows = VOLUME_TYPES[field]
        source = volume.get(field) or {}
        lines.append(f"{L2}Type:\t{kind}")
        for title, key, default in rows:
            value = source.get(key)
            lines.append(f"{L2}{title}:\t{_go(default if value in (None, '') else value)}")
    return lines


def _go(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _spread_lines(constraints: list[dict[str, Any]]) -> list[str]:
    """describe.go describeTopologySpreadConstraints (sorted by topology key)."""
    lines = []
    for number, item in enumerate(sorted(constraints, key=lambda c: str(c.get("topologyKey", "")))):
        lead = "  Topology Spread Constraints:\t" if number == 0 else "  \t"
        text = (f"{item.get('topologyKey', '')}:{item.get('whenUnsatisfiable', '')} when max skew "
                f"{item.get('maxSkew', 0)} is exceeded")
        if item.get("labelSelector") is not None:
            text += f" for selector {selector_text(item['labelSelector'], NONE)}"
        lines.append(lead + text)
    return lines


def toleration_text(toleration: dict[str, Any]) -> str:
    """One toleration as printTolerationsMultilineWithIndent writes it."""
    key, value, effect = (str(toleration.get(f, "") or "") for f in ("key", "value", "effect"))
    text = key + (f"={value}" if value else "") + (f":{effect}" if effect else "")
    if toleration.get("operator") == "Exists" and not value:
        text += " op=Exists" if key or effect else "op=Exists"
    if toleration.get("tolerationSeconds") is not None:
        text += f" for {toleration['tolerationSeconds']}s"
    return text


def toleration_lines(title: str, tolerations: list[dict[str, Any]]) -> list[str]:
    """printPodTolerationsMultiline: sorted by key (Go's sort.Slice: not stable)."""
    texts = [toleration_text(t) for t in sorted(tolerations, key=lambda t: str(t.get("key", "")))]
    if not texts:
        return [f"{title}:\t{NONE}"]
    return [f"{title}:\t{texts[0]}"] + [f"\t{text}" for text in texts[1:]]
