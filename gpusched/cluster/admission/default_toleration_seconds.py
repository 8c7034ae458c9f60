"""DefaultTolerationSeconds (``plugin/pkg/admission/defaulttolerationseconds``, ``Admit``).

On create and update a pod without a toleration covering ``node.kubernetes.io/not-ready:
NoExecute`` (an empty key or an empty effect covers it) gets ``{key: node.kubernetes.io/not-ready,
operator: Exists, effect: NoExecute, tolerationSeconds: 300}``, and the same for
``node.kubernetes.io/unreachable``. Subresources (``status``) are left alone, as upstream.

Neighbours: ``admission.registry``; ``apiserver.apply`` (a Pod update is checked after it).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin

NAME = "DefaultTolerationSeconds"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300


def _covers(toleration: dict[str, Any], key: str) -> bool:
    return (toleration.get("key") in (key, "", None)
            and toleration.get("effect") in ("NoExecute", "", None))


def default_toleration_seconds(pod: dict[str, Any]) -> None:
    """Add the not-ready/unreachable NoExecute tolerations a pod lacks (see module docstring)."""
    spec = pod.setdefault("spec", {})
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    added = [{"key": key, "operator": "Exists", "effect": "NoExecute",
              "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for key in (NOT_READY_TAINT, UNREACHABLE_TAINT)
             if not any(isinstance(t, dict) and _covers(t, key) for t in tolerations)]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def _admit(attrs: Attributes) -> None:
    default_toleration_seconds(attrs.obj)


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"Pod"}), mutate=_admit)
