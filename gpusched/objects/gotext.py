"""Decoded JSON values as Go's ``fmt`` ``%v`` prints them: what kubectl's describers and
kube-apiserver's patch errors show of a value (``map[image:x name:a]``, ``[a b]``, ``<nil>``,
``true``, ``2`` for a whole float).

Neighbours: ``server.strategic`` (patch errors), ``cli.describe_crd`` (custom resources' fields).
"""

from __future__ import annotations

from typing import Any


def go_value(value: Any) -> str:
    """``%v`` of a decoded JSON value; maps print their keys sorted, as Go's fmt does.

    >>> go_value({"name": "a", "image": "x", "ports": [1, 2.5], "x": None, "on": True})
    'map[image:x name:a on:true ports:[1 2.5] x:<nil>]'
    """
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
