"""What counts as a change of a stored object: the same JSON, resourceVersion aside.

``View.update`` stores a body only when it differs from the stored one (a body equal to it gets
no new resourceVersion: that is how ``settle`` finds its fixpoint), as kube-apiserver skips an
update that changes nothing.

Neighbours: used by ``apiserver.view``; ``apiserver.store`` (the canonical text).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver.store import dumps


def without_version(body: dict[str, Any]) -> dict[str, Any]:
    """A body without its resourceVersion (what counts as a change), sharing everything else."""
    meta = body.get("metadata") or {}
    if "resourceVersion" in meta:
        return dict(body, metadata={k: v for k, v in meta.items() if k != "resourceVersion"})
    return body


def same_json(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same JSON (canonical text). One object is the same JSON (a status
    write shares the stored spec: ``objects.tree.copy_sharing``). Python's ``==`` decides next (C,
    stopping at the first difference: a real change costs no encoding); what it calls equal is
    confirmed as text, since it also equates 1, 1.0 and True, and 0.0 and -0.0.

    >>> same_json({"a": [1]}, {"a": [1]}), same_json({"a": 1}, {"a": 2}), same_json(1, 1.0)
    (True, False, False)
    """
    return a is b or (bool(a == b) and dumps(a) == dumps(b))


def same_but_version(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """``same_json(without_version(old), without_version(new))``, deciding a difference before
    building either copy: a field that differs under ``==`` (the usual update: a status, an
    annotation) answers at once; only bodies equal so far are copied and compared as text."""
    if old.keys() != new.keys():
        return False
    for key, value in old.items():
        other = new[key]
        if key == "metadata" and isinstance(value, dict) and isinstance(other, dict):
            if not _same_keys_but_version(value, other):
                return False
        elif value is not other and value != other:
            return False
    return same_json(without_version(old), without_version(new))


def _same_keys_but_version(meta: dict[str, Any], other: dict[str, Any]) -> bool:
    """The two metadata are equal under ``==`` but for their resourceVersions."""
    keys = meta.keys() - {"resourceVersion"}
    if keys != other.keys() - {"resourceVersion"}:
        return False
    return all(meta[k] is other[k] or meta[k] == other[k] for k in keys)
