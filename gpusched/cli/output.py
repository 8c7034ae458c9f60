"""kubectl-style output: aligned tables, ages, and the json / yaml / name printers.

Tables are laid out as kubectl's tabwriter does it: every column left-aligned and padded to its
widest cell plus three spaces (at least six wide), the last column not padded. Ages follow
apimachinery's ``duration.HumanDuration`` (``objects.duration.format_duration``).

Neighbours: ``cli.columns`` builds the rows per kind; ``cli.commands`` prints them; ``cli.describe``
uses ``format_age`` and ``render_table``. Nothing here touches the cluster.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterable, Sequence

from gpusched.objects.duration import format_duration as human_duration
from gpusched.objects.kinds import KindInfo, resolve_kind

COLUMN_GAP = 3
MIN_CELL = 6     # kubectl's tabwriter: minwidth 6, padding 3 (cli-runtime GetNewTabWriter)


def cell_width(text_width: int) -> int:
    """The width a column of ``text_width``-wide cells takes, its gap included."""
    return max(text_width + COLUMN_GAP, MIN_CELL)


def render_table(header: Sequence[str], rows: Iterable[Sequence[Any]], headers: bool = True) -> str:
    """Align ``rows`` under ``header`` the way kubectl does (3-space gaps, columns at least 6
    wide, last column unpadded, so an empty last cell leaves the padding before it);
    ``headers=False`` is ``--no-headers`` (widths from the rows).

    >>> print(render_table(["NAME", "AGE"], [["a", "5s"], ["longer", "10m"]]))
    NAME     AGE
    a        5s
    longer   10m
    >>> print(render_table(["N", "X"], [["a", "1"]], headers=False))
    a     1
    """
    table = ([list(map(str, header))] if headers else []) + [[str(cell) for cell in row] for row in rows]
    if not table:
        return ""
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for row in table:
        cells = [cell.ljust(cell_width(widths[i])) for i, cell in enumerate(row[:-1])]
        lines.append("".join(cells) + row[-1])   # an empty last cell leaves the padding, as kubectl
    return "\n".join(lines)


def tabwrite(lines: Sequence[str], padding: int = 2) -> str:
    r"""Go's ``text/tabwriter`` as kubectl's describe uses it (minwidth 0, padding 2, no flags):
    cells end at tabs; a column's block is every run of consecutive lines that have a cell in
    it, padded to the block's widest cell plus ``padding``; the last cell of a line is free.

    >>> print(tabwrite(["Name:\tq", "Resource\tUsed\tHard", "pods\t2\t10"]))
    Name:     q
    Resource  Used  Hard
    pods      2     10
    """
    cells = [line.split("\t") for line in lines]
    widths: list[list[int]] = [[0] * (len(row) - 1) for row in cells]

    def block(first: int, last: int, column: int) -> None:
        line = first
        while line < last:
            if len(cells[line]) - 1 <= column:
                line += 1
                continue
            end = line
            width = 0
            while end < last and len(cells[end]) - 1 > column:
                width = max(width, len(cells[end][column]) + padding)
                end += 1
            for row in range(line, end):
                widths[row][column] = width
            block(line, end, column + 1)
            line = end

    block(0, len(cells), 0)
    return "\n".join("".join(cell.ljust(widths[i][j]) for j, cell in enumerate(row[:-1])) + row[-1]
                     for i, row in enumerate(cells))


def parse_timestamp(text: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp (``2026-01-01T00:00:00Z``), None if absent."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Clock:
    """The virtual 'now' the AGE columns are measured from (``Cluster.timestamp()``)."""

    def __init__(self, now_timestamp: str) -> None:
        self.now = parse_timestamp(now_timestamp) or 0.0

    def age(self, timestamp: str | None) -> str:
        then = parse_timestamp(timestamp)
        return "<unknown>" if then is None else human_duration(self.now - then)


def resource_name(info: KindInfo) -> str:
    """``pod``, ``deployment.apps``, ``priorityclass.scheduling.k8s.io``, ``nodepool.gpusched.io``."""
    return f"{info.singular}.{info.group}" if info.group else info.singular


def object_ref(obj: dict[str, Any]) -> str:
    """``kind.group/name`` as ``kubectl apply`` and ``-o name`` print it (``job.batch/train``)."""
    info = resolve_kind(str(obj.get("kind", "")))
    return f"{resource_name(info)}/{obj.get('metadata', {}).get('name', '')}"


def as_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``kind: List`` envelope kubectl prints for several objects."""
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def to_json(document: Any) -> str:
    """kubectl's JSON: 4-space indentation, keys sorted (as Go marshals unstructured maps)."""
    return json.dumps(document, indent=4, sort_keys=True, ensure_ascii=False)


def to_yaml(document: Any) -> str:
    """Block YAML with the keys sorted, as kubectl prints them (``cli.yaml_printer``; PyYAML is
    imported only when YAML is printed)."""
    from gpusched.cli.yaml_printer import to_yaml as dump

    return dump(document)
