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

import math
from dataclasses import dataclass
from fractions import Fraction
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from gpusched.cli.columns import event_time
from gpusched.cli.output import Clock
from gpusched.objects.quantity import QuantityError, parse_quantity
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

    events: list[dict]
    clock: Clock
    lookup: Callable[[str, str | None], list[dict]]


def meta(obj: dict) -> dict:
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


def label_lines(key: str, values: dict | None, indent: str = "") -> list[str]:
    """describe.go printLabelsMultilineWithIndent: ``Labels:\\ta=b`` then ``\\tc=d``, sorted."""
    items = [f"{k}={v}" for k, v in sorted((values or {}).items())]
    if not items:
        return [f"{indent}{key}:\t{NONE}"]
    return [f"{indent}{key}:\t{items[0]}"] + [f"{indent}\t{item}" for item in items[1:]]


def annotation_lines(key: str, values: dict | None, indent: str = "") -> list[str]:
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


def selector_text(selector: dict | None, empty: str = "") -> str:
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


def controller_text(obj: dict) -> str:
    """describe.go printController: ``Kind/name`` of the controlling owner, else empty."""
    for owner in meta(obj).get("ownerReferences") or []:
        if owner.get("controller"):
            return f"{owner.get('kind', '')}/{owner.get('name', '')}"
    return ""


def controlled_by(obj: dict) -> list[str]:
    text = controller_text(obj)
    return [f"Controlled By:\t{text}"] if text else []


def event_row(event: dict, clock: Clock) -> list[str]:
    """One row of kubectl's Events table (describe.go DescribeEvents): type, reason, age
    (``x N over`` when repeated), from, message."""
    age = clock.age(event_time(event))
    count = int(event.get("count", 1) or 1)
    if count > 1 and event.get("firstTimestamp"):
        age = f"{age} (x{count} over {clock.age(event['firstTimestamp'])})"
    source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""
    return [event.get("type", "Normal"), event.get("reason", ""), age, source,
            str(event.get("message", "")).strip()]


def event_lines(events: Iterable[dict], clock: Clock) -> list[str]:
    """describe.go DescribeEvents as tabbed lines (``Events:  <none>`` when there are none)."""
    events = list(events)
    if not events:
        return [f"Events:\t{NONE}"]
    lines = ["Events:", "  Type\tReason\tAge\tFrom\tMessage", "  ----\t------\t----\t----\t-------"]
    lines.extend("  " + "\t".join(event_row(event, clock)) for event in events)
    return lines


def events_for(events: list[dict], kind: str, name: str, namespace: str | None) -> list[dict]:
    """The events about one object, oldest first (kubectl's SortableEvents)."""
    def matches(event: dict) -> bool:
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


_SI = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def quantity_format(value: Any) -> str:
    """apimachinery's Quantity format of a written quantity: ``BinarySI`` (``Ki``..``Ei``),
    ``DecimalExponent`` (``1e3``) or ``DecimalSI``."""
    text = str(value).strip()
    if text[-2:] in _BINARY_SUFFIXES[1:]:
        return "BinarySI"
    return "DecimalExponent" if "e" in text.lower() else "DecimalSI"


def quantity_text(value: Any, form: str | None = None) -> str:
    """A quantity as apimachinery's ``Quantity.String()`` prints it (what kubectl describe shows):
    binary values (``Ki``..``Ei``) of at least 1024 stay binary with the largest exact suffix
    (``1024Mi`` -> ``1Gi``, ``1536Mi`` stays); decimal values get the largest power-of-1000 suffix
    whose mantissa is whole (``0.5`` -> ``500m``, ``1000`` -> ``1k``, ``1500m`` stays); the
    ``e`` notation keeps ``eN``. ``form`` overrides the written format (a quota's used value is
    printed in its hard value's format). Text that is no quantity is printed as it is."""
    try:
        amount = parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return str(value).strip()
    form = form or quantity_format(value)
    if amount == 0:
        return "0"
    if form == "BinarySI" and abs(amount) >= 1024 and amount.denominator == 1:
        power = 0
        while power < 6 and amount % 1024 ** (power + 1) == 0:
            power += 1
        return f"{amount // 1024 ** power}{_BINARY_SUFFIXES[power]}"
    exponent = 18
    while exponent > -9 and (amount / Fraction(10) ** exponent).denominator != 1:
        exponent -= 3
    mantissa = math.ceil(amount / Fraction(10) ** exponent)
    if form == "DecimalExponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_SI[exponent]}"
