"""Pieces every kubectl-layout describe page shares: kubectl's dates, Labels/Annotations blocks,
label selectors, ``Controlled By``, the Events table, and what a describer may look up.

A page is a list of lines whose cells are separated by tabs; ``cli.output.tabwrite`` aligns them
as the Go tabwriter of kubectl's ``tabbedString`` does (minwidth 0, padding 2). Each helper here
mirrors one function of kubectl's ``pkg/describe/describe.go`` and names it.

Neighbours: ``cli.describe`` (pods, nodes, dispatch), ``cli.describe_kinds`` (policy and config
kinds), ``cli.describe_workloads`` (Deployment, ReplicaSet, Job, DaemonSet), ``cli.describe_storage``
(PersistentVolumeClaim, PersistentVolume, StorageClass).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from gpusched.cli.columns import event_time
from gpusched.cli.output import Clock
from gpusched.objects.types import ANN_ASSIGNED_DEVICES, ANN_ASSIGNED_GPUS, ANN_START_TIME

NONE = "<none>"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# kubectl's skipAnnotations, plus gpusched's bookkeeping (describe pod shows it as its own lines)
HIDDEN_ANNOTATIONS = (LAST_APPLIED, ANN_ASSIGNED_GPUS, ANN_ASSIGNED_DEVICES, ANN_START_TIME)
MAX_ANNOTATION_LEN = 140   # describe.go maxAnnotationLen


@dataclass(frozen=True)
class Related:
    """What a describer may read besides its object: its events (oldest first), the virtual
    clock, and ``lookup(kind, namespace)`` listing other objects (ReplicaSets, pods, quotas)."""

    events: list[dict[str, Any]]
    clock: Clock
    lookup: Callable[[str, str | None], list[dict[str, Any]]]


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def kube_date(timestamp: str | None) -> str:
    """A timestamp as kubectl describe prints it (Go's RFC1123Z): ``Thu, 01 Jan 2026 00:00:00 +0000``."""
    if not timestamp:
        return NONE
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return str(timestamp)
    return moment.strftime("%a, %d %b %Y %H:%M:%S +0000")


def label_lines(key: str, values: dict[str, Any] | None, indent: str = "") -> list[str]:
    """describe.go printLabelsMultilineWithIndent: ``Labels:\\ta=b`` then ``\\tc=d``, sorted."""
    items = [f"{k}={v}" for k, v in sorted((values or {}).items())]
    if not items:
        return [f"{indent}{key}:\t{NONE}"]
    return [f"{indent}{key}:\t{items[0]}"] + [f"{indent}\t{item}" for item in items[1:]]


def annotation_lines(key: str, values: dict[str, Any] | None, indent: str = "") -> list[str]:
    """describe.go printAnnotationsMultiline: sorted ``k: v``; a long or multi-line value goes
    below its key, each line cut at 138 characters with ``...``. The indent is printed only
    before the title (kubectl writes continuation lines with a bare tab)."""
    keys = sorted(k for k in (values or {}) if k not in HIDDEN_ANNOTATIONS)
    if not keys:
        return [f"{indent}{key}:\t{NONE}"]
    lines: list[str] = []
    for number, name in enumerate(keys):
        lead = f"{indent}{key}:\t" if number == 0 else "\t"
        value = str((values or {})[name]).removesuffix("\n")
        if len(value) + len(name) + 2 > MAX_ANNOTATION_LEN or "\n" in value:
            lines.append(f"{lead}{name}:")
            lines.extend(f"\t  {_shorten(part, MAX_ANNOTATION_LEN - 2)}" for part in value.split("\n"))
        else:
            lines.append(f"{lead}{name}: {value}")
    return lines


def _shorten(text: str, limit: int) -> str:
    return text[:limit] + "..." if len(text) > limit else text


def selector_text(selector: dict[str, Any] | None, empty: str = "") -> str:
    """apimachinery's LabelSelectorAsSelector(...).String(): requirements sorted by key,
    ``k=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``; ``empty`` when there are none
    (FormatLabelSelector prints ``<none>``, a bare ``%s`` of the selector prints nothing)."""
    selector = selector or {}
    parts = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key, values = expression.get("key", ""), ",".join(sorted(expression.get("values") or []))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(expression.get("operator", ""), key)
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts)) or empty


def controller_text(obj: dict[str, Any]) -> str:
    """describe.go printController: ``Kind/name`` of the controlling owner, else empty."""
    for owner in meta(obj).get("ownerReferences") or []:
        if owner.get("controller"):
            return f"{owner.get('kind', '')}/{owner.get('name', '')}"
    return ""


def controlled_by(obj: dict[str, Any]) -> list[str]:
    text = controller_text(obj)
    return [f"Controlled By:\t{text}"] if text else []


def event_row(event: dict[str, Any], clock: Clock) -> list[str]:
    """One row of kubectl's Events table (describe.go DescribeEvents): type, reason, age
    (``x N over`` when repeated), from, message."""
    age = clock.age(event_time(event))
    count = int(event.get("count", 1) or 1)
    if count > 1 and event.get("firstTimestamp"):
        age = f"{age} (x{count} over {clock.age(event['firstTimestamp'])})"
    source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""
    return [event.get("type", "Normal"), event.get("reason", ""), age, source,
            str(event.get("message", "")).strip()]


def event_lines(events: Iterable[dict[str, Any]], clock: Clock) -> list[str]:
    """describe.go DescribeEvents as tabbed lines (``Events:  <none>`` when there are none)."""
    events = list(events)
    if not events:
        return [f"Events:\t{NONE}"]
    lines = ["Events:", "  Type\tReason\tAge\tFrom\tMessage", "  ----\t------\t----\t----\t-------"]
    lines.extend("  " + "\t".join(event_row(event, clock)) for event in events)
    return lines


def events_for(events: list[dict[str, Any]], kind: str, name: str, namespace: str | None) -> list[dict[str, Any]]:
    """The events about one object, oldest first (kubectl's SortableEvents)."""
    def matches(event: dict[str, Any]) -> bool:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        return (involved.get("kind") == kind and involved.get("name") == name
                and (namespace is None or involved.get("namespace", namespace) in (namespace, "")))
    return sorted((e for e in events if matches(e)), key=lambda e: event_time(e) or "")


def go_value(value: Any) -> str:
    """A value as Go's ``%v`` prints it: booleans lower case, lists as ``[a b]``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return "" if value is None else str(value)


