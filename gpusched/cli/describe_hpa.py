"""``describe hpa`` in kubectl 1.32's layout (``pkg/describe/describe.go``
``describeHorizontalPodAutoscalerV2`` and ``printDirectionBehavior``): metadata, Reference, one
``Metrics: ( current / target )`` line per metric, Min/Max replicas, Behavior when set,
``<Kind> pods: N current / M desired``, the Conditions table, Events; one Go tabwriter.

Neighbours: ``cli.describe`` dispatches here (``TABBED_PAGES``); ``cli.describe_base`` helpers.
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.cli.describe_base import Related, annotation_lines, event_lines, kube_date, label_lines

UNKNOWN = "<unknown>"


def _current(status: dict[str, Any], field: str, key: str) -> str | None:
    """``hpa.Status.CurrentMetrics[i].<Field>.Current.<Key>`` as a string, None when absent."""
    source = status.get(field)
    if not isinstance(source, dict):
        return None
    value = (source.get("current") or {}).get(key)
    return None if value is None else str(value)


def _reported(status: dict[str, Any], field: str, key: str) -> str:
    """kubectl's "current" cell: ``<unknown>`` with no status for the metric, else the value or 0."""
    return (_current(status, field, key) or "0") if status.get(field) else UNKNOWN


def _metric_name(source: dict[str, Any]) -> Any:
    return (source.get("metric") or {}).get("name", "")


def _external_line(metric: dict[str, Any], status: dict[str, Any], kind: str) -> str:
    source = metric.get("external") or {}
    name, target = _metric_name(source), source.get("target") or {}
    if target.get("averageValue") is not None:
        current = _current(status, "external", "averageValue") or UNKNOWN
        return f'  "{name}" (target average value):\t{current} / {target["averageValue"]}'
    current = _reported(status, "external", "value")
    return f'  "{name}" (target value):\t{current} / {target.get("value", "")}'


def _pods_line(metric: dict[str, Any], status: dict[str, Any], kind: str) -> str:
    source = metric.get("pods") or {}
    current = _reported(status, "pods", "averageValue")
    return (f'  "{_metric_name(source)}" on pods:\t{current} / '
            f'{(source.get("target") or {}).get("averageValue", "")}')


def _object_line(metric: dict[str, Any], status: dict[str, Any], kind: str) -> str:
    source = metric.get("object") or {}
    described = source.get("describedObject") or {}
    head = (f'  "{_metric_name(source)}" on '
            f'{described.get("kind", "")}/{described.get("name", "")} ')
    target = source.get("target") or {}
    if target.get("type") == "AverageValue":
        current = _reported(status, "object", "averageValue")
        return f'{head}(target average value):\t{current} / {target.get("averageValue", "")}'
    current = _reported(status, "object", "value")
    return f'{head}(target value):\t{current} / {target.get("value", "")}'


def _resource_line(metric: dict[str, Any], status: dict[str, Any], kind: str) -> str:
    """``Resource`` and ``ContainerResource`` metrics."""
    field = "resource" if kind == "Resource" else "containerResource"
    source = metric.get(field) or {}
    head = f'  resource {source.get("name", "")} on pods'
    if kind == "ContainerResource":
        head = f'  resource {source.get("name", "")} of container "{source.get("container", "")}" on pods'
    target = source.get("target") or {}
    if target.get("averageValue") is not None:
        current = _reported(status, field, "averageValue")
        return f'{head}:\t{current} / {target["averageValue"]}'
    current = UNKNOWN
    if _current(status, field, "averageUtilization") is not None:
        current = (f'{_current(status, field, "averageUtilization")}% '
                   f'({_current(status, field, "averageValue") or "0"})')
    goal = (f'{target["averageUtilization"]}%' if target.get("averageUtilization") is not None
            else "<auto>")
    return f'{head}  (as a percentage of request):\t{current} / {goal}'


_METRIC_LINES: dict[str, Callable[[dict[str, Any], dict[str, Any], str], str]] = {
    "External": _external_line, "Pods": _pods_line, "Object": _object_line,
    "Resource": _resource_line, "ContainerResource": _resource_line,
}


def metric_line(metric: dict[str, Any], status: dict[str, Any]) -> str:
    """One line under ``Metrics:`` (LEVEL_1 indent, a tab before the values)."""
    kind = metric.get("type")
    if not isinstance(kind, str) or kind not in _METRIC_LINES:
        return f'  <unknown metric type "{kind}">'
    return _METRIC_LINES[kind](metric, status, kind)


def _behavior_lines(direction: str, rules: dict[str, Any] | None) -> list[str]:
    if rules is None:
        return []
    lines = [f"  {direction}:"]
    if rules.get("stabilizationWindowSeconds") is not None:
        lines.append(f"    Stabilization Window: {rules['stabilizationWindowSeconds']} seconds")
    policies = rules.get("policies") or []
    if policies:
        lines.append(f"    Select Policy: {rules.get('selectPolicy') or 'Max'}")
        lines.append("    Policies:")
        lines += [f"      - Type: {p.get('type', '')}\tValue: {p.get('value', 0)}\t"
                  f"Period: {p.get('periodSeconds', 0)} seconds" for p in policies]
    return lines


def describe_hpa(hpa: dict[str, Any], related: Related) -> list[str]:
    """The page's tabbed lines (``cli.describe`` runs them through the tabwriter)."""
    meta, spec, status = hpa.get("metadata") or {}, hpa.get("spec") or {}, hpa.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    lines = [f"Name:\t{meta.get('name', '')}", f"Namespace:\t{meta.get('namespace', '')}",
             *label_lines("Labels", meta.get("labels")),
             *annotation_lines("Annotations", meta.get("annotations")),
             f"CreationTimestamp:\t{kube_date(meta.get('creationTimestamp'))}",
             f"Reference:\t{ref.get('kind', '')}/{ref.get('name', '')}",
             "Metrics:\t( current / target )"]
    statuses = status.get("currentMetrics") or []
    for i, metric in enumerate(spec.get("metrics") or []):
        lines.append(metric_line(metric, statuses[i] if i < len(statuses) else {}))
    minimum = spec.get("minReplicas")
    lines += [f"Min replicas:\t{'<unset>' if minimum is None else minimum}",
              f"Max replicas:\t{spec.get('maxReplicas', 0)}"]
    behavior = spec.get("behavior")
    if behavior is not None:
        lines.append("Behavior:")
        lines += _behavior_lines("Scale Up", behavior.get("scaleUp"))
        lines += _behavior_lines("Scale Down", behavior.get("scaleDown"))
    lines.append(f"{ref.get('kind', '')} pods:\t{status.get('currentReplicas', 0)} current / "
                 f"{status.get('desiredReplicas', 0)} desired")
    conditions = status.get("conditions") or []
    if conditions:
        lines += ["Conditions:", "  Type\tStatus\tReason\tMessage", "  ----\t------\t------\t-------"]
        lines += [f"  {c.get('type', '')}\t{c.get('status', '')}\t{c.get('reason', '')}\t"
                  f"{c.get('message', '')}" for c in conditions]
    return lines + event_lines(related.events, related.clock)
