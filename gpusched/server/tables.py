"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` asks for to print real columns.

The columns themselves are the CLI's (``cli.columns``, kubectl's printers), which sit above this
layer; ``gpusched serve`` therefore hands the server a :data:`ColumnSource` (``cli.serve`` builds
it from ``cli.columns.table_rows``). Without one, tables have NAME and AGE only.

A column that appears only with ``-o wide`` gets ``priority: 1`` (a CRD's such columns may sit
between the others: a ClusterQueue's STRATEGY comes before PENDING WORKLOADS). Each row carries the object as
``PartialObjectMetadata`` (or the whole object with ``includeObject=Object``, which kubectl asks
for with ``--sort-by``), so kubectl can add NAMESPACE for ``-A`` itself.

Neighbours: ``server.resources`` (list/get/watch responses).
"""

from __future__ import annotations

from typing import Any, Callable

# (kind, objects, now_timestamp) -> (column names, each one's priority (0: shown, 1: only with
# -o wide; a CRD's wide columns sit between the others), rows)
ColumnSource = Callable[[str, list[dict[str, Any]], str], tuple[list[str], list[int], list[list[str]]]]

TABLE_ACCEPT = "as=table"
DESCRIPTIONS = {"Name": "Name must be unique within a namespace. More info: "
                        "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"}


def wants_table(accept: str) -> bool:
    """True when the Accept header asks for a Table (``application/json;as=Table;v=v1;...``)."""
    return TABLE_ACCEPT in accept.replace(" ", "").lower()


def _title(header: str) -> str:
    """``NOMINATED NODE`` -> ``Nominated Node`` (kubectl upper-cases it back)."""
    return " ".join(word.capitalize() if word.isupper() else word for word in header.split(" "))


def _plain_columns(kind: str, objects: list[dict[str, Any]], now: str) -> tuple[list[str], list[int], list[list[str]]]:
    return ["NAME"], [0], [[str((o.get("metadata") or {}).get("name", ""))] for o in objects]


def row_object(obj: dict[str, Any], include: str) -> dict[str, Any]:
    if include == "Object":
        return obj
    if include == "None":
        return {}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {}}


def build_table(kind: str, objects: list[dict[str, Any]], now: str, columns: ColumnSource | None,
                resource_version: str = "", include: str = "Metadata",
                with_definitions: bool = True) -> dict[str, Any]:
    """A Table of ``objects`` (all of one kind)."""
    header, priorities, rows = (columns or _plain_columns)(kind, objects, now)
    definitions = [{"name": _title(name), "type": "string",
                    "format": "name" if name == "NAME" else "",
                    "description": DESCRIPTIONS.get(_title(name), _title(name)),
                    "priority": priorities[i]}
                   for i, name in enumerate(header)]
    table = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
             "metadata": {"resourceVersion": resource_version},
             "columnDefinitions": definitions if with_definitions else [],
             "rows": [{"cells": cells, "object": row_object(obj, include)}
                      for cells, obj in zip(rows, objects)]}
    return table
