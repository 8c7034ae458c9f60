"""``describe`` of a custom resource (Kueue's kinds, PodGroup, JobSet), as kubectl's generic
describer prints one (kubectl ``pkg/describe/describe.go`` ``genericDescriber.Describe``).

``Name`` and ``Namespace`` (empty for a cluster-scoped object), the Labels and Annotations
blocks, then every field of the object (``printUnstructuredContent``): keys sorted, each named
by ``smartLabelFor`` (``cohortName`` -> ``Cohort Name``, ``apiVersion`` -> ``API Version``; a key
with characters other than letters and ``-``, such as ``nvidia.com/gpu``, as it is), a mapping
or list as a heading with its content two spaces in, a list's mappings one after the other, a
scalar as ``Label:<tab>value`` (Go's ``%v``). ``metadata`` leaves out managedFields, name,
namespace, labels and annotations. Then the Events table. One Go tabwriter aligns it all.

Neighbours: ``cli.describe`` (dispatch), ``cli.describe_base`` (labels, annotations, events).
"""

from __future__ import annotations

import re
from typing import Any

from gpusched.cli.describe_base import Related, annotation_lines, event_lines, label_lines
from gpusched.objects.gotext import go_value

ACRONYMS = ("API", "URL", "UID", "OSB", "GUID")     # smartLabelFor's commonAcronyms
SKIPPED = (".metadata.managedFields", ".metadata.name", ".metadata.namespace", ".metadata.labels",
           ".metadata.annotations")
_RUNS = re.compile(r"[a-z]+|[A-Z]+|[0-9]+|[^a-zA-Z0-9]+")


def camel_split(word: str) -> list[str]:
    """fatih/camelcase ``Split``: runs of one character class, the last capital of a capital run
    moved onto a following lower-case run.

    >>> camel_split("podSetAssignments"), camel_split("APIVersion"), camel_split("minCount")
    (['pod', 'Set', 'Assignments'], ['API', 'Version'], ['min', 'Count'])
    """
    runs = _RUNS.findall(word)
    for i in range(len(runs) - 1):
        if runs[i].isupper() and runs[i + 1].islower() and runs[i + 1].isalpha():
            runs[i + 1] = runs[i][-1] + runs[i + 1]
            runs[i] = runs[i][:-1]
    return [run for run in runs if run]


def smart_label(field: str) -> str:
    """``smartLabelFor``: ``cohortName`` -> ``Cohort Name``; other characters than letters and
    ``-`` leave the key as it is."""
    if any(not (c.isalpha() or c == "-") for c in field):
        return field
    parts = [p.upper() if p.upper() in ACRONYMS else p[:1].upper() + p[1:]
             for p in camel_split(field) if p != "_"]
    return " ".join(parts)


def content_lines(content: dict[str, Any], level: int = 0, prefix: str = "") -> list[str]:
    """``printUnstructuredContent`` as tabbed lines."""
    lines: list[str] = []
    pad = "  " * level
    for field in sorted(content):
        value, path = content[field], f"{prefix}.{field}"
        if path in SKIPPED:
            continue
        if isinstance(value, dict):
            lines.append(f"{pad}{smart_label(field)}:")
            lines += content_lines(value, level + 1, path)
        elif isinstance(value, list):
            lines.append(f"{pad}{smart_label(field)}:")
            for child in value:
                lines += (content_lines(child, level + 1, path) if isinstance(child, dict)
                          else [f"{pad}  {go_value(child)}"])
        else:
            lines.append(f"{pad}{smart_label(field)}:\t{go_value(value)}")
    return lines


def describe_custom_resource(obj: dict[str, Any], related: Related) -> list[str]:
    """The page's tabbed lines (``cli.describe`` runs them through the tabwriter)."""
    meta = obj.get("metadata") or {}
    return [f"Name:\t{meta.get('name', '')}", f"Namespace:\t{meta.get('namespace', '')}",
            *label_lines("Labels", meta.get("labels")),
            *annotation_lines("Annotations", meta.get("annotations")),
            *content_lines(obj), *event_lines(related.events, related.clock)]
