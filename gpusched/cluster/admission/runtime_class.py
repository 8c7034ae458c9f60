"""RuntimeClass (``plugin/pkg/admission/runtimeclass/admission.go``).

- ``Admit`` on a Pod create: the pod's RuntimeClass must exist (``pod rejected: RuntimeClass
  "x" not found``); ``setOverhead`` writes ``spec.overhead`` from ``overhead.podFixed`` (a pod
  overhead that differs is refused), then ``setScheduling`` merges ``scheduling.nodeSelector``
  (a conflicting key is refused) and ``scheduling.tolerations`` (``MergeTolerations``).
- ``Validate`` on a Pod create (``validateOverhead``): the pod's overhead must be its
  RuntimeClass's, and a pod overhead without one is refused.

Neighbours: ``admission.registry``; ``objects.quantity``.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, Plugin
from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.errors import ForbiddenError
from gpusched.objects.quantity import canonical

NAME = "RuntimeClass"
OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"


def lookup_runtime_class(view: View, pod: dict[str, Any]) -> dict[str, Any] | None:
    """``prepareObjects``: the pod's RuntimeClass (``pod rejected: RuntimeClass "x" not found``)."""
    name = (pod.get("spec") or {}).get("runtimeClassName")
    if not name:
        return None
    found = view.get("RuntimeClass", name)
    if found is None:
        raise ForbiddenError("pods", pod["metadata"]["name"],
                             f'pod rejected: RuntimeClass "{name}" not found')
    return found


def _overhead_of(runtime_class: dict[str, Any] | None) -> dict[str, int] | None:
    fixed = ((runtime_class or {}).get("overhead") or {}).get("podFixed")
    if fixed is None:
        return None
    return {str(k): canonical(str(k), v) for k, v in fixed.items()}


def _pod_overhead(pod: dict[str, Any]) -> dict[str, int] | None:
    overhead = (pod.get("spec") or {}).get("overhead")
    if overhead is None:
        return None
    return {str(k): canonical(str(k), v) for k, v in overhead.items()}


def _set_scheduling(pod: dict[str, Any], scheduling: dict[str, Any]) -> None:
    spec, name = pod["spec"], pod["metadata"]["name"]
    selector = dict(spec.get("nodeSelector") or {})
    for key, value in (scheduling.get("nodeSelector") or {}).items():
        if key in selector and selector[key] != value:
            raise ForbiddenError("pods", name, f"conflict: runtimeClass.scheduling.nodeSelector"
                                 f"[{key}] = {value}; pod.spec.nodeSelector[{key}] = {selector[key]}")
        selector[key] = value
    if selector:
        spec["nodeSelector"] = selector
    merged = merge_tolerations(list(spec.get("tolerations") or []),
                               list(scheduling.get("tolerations") or []))
    if merged:
        spec["tolerations"] = merged


def _admit(attrs: Attributes) -> None:
    """``setOverhead`` then ``setScheduling``."""
    pod = attrs.obj
    runtime_class = lookup_runtime_class(attrs.view, pod)
    if runtime_class is None:
        return
    spec = pod.setdefault("spec", {})
    fixed = _overhead_of(runtime_class)
    if fixed is not None:
        current = _pod_overhead(pod)
        if current is not None and current != fixed:
            raise ForbiddenError("pods", attrs.name, OVERHEAD_MISMATCH)
        spec["overhead"] = copy_tree(runtime_class["overhead"]["podFixed"])
        attrs.resources_changed()
    scheduling = runtime_class.get("scheduling")
    if scheduling:
        _set_scheduling(pod, scheduling)


def _validate(attrs: Attributes) -> None:
    """``validateOverhead``: a pod's overhead must be its RuntimeClass's."""
    fixed = _overhead_of(lookup_runtime_class(attrs.view, attrs.obj))
    current = _pod_overhead(attrs.obj)
    if fixed is not None:
        if current != fixed:
            raise ForbiddenError("pods", attrs.name, OVERHEAD_MISMATCH)
    elif current is not None:
        raise ForbiddenError("pods", attrs.name, "pod rejected: Pod Overhead set without "
                             "corresponding RuntimeClass defined Overhead")


def _is_superset(big: dict[str, Any], small: dict[str, Any]) -> bool:
    """``isSuperset`` (pkg/util/tolerations/tolerations.go): ``big`` tolerates all ``small`` does."""
    if big.get("effect") and big.get("effect") != small.get("effect"):
        return False
    if big.get("key") != small.get("key") and not (
            not big.get("key") and big.get("operator") == "Exists"):
        return False
    if (big.get("operator") or "Equal") == "Equal":
        if (small.get("operator") or "Equal") != "Equal" or big.get("value") != small.get("value"):
            return False
    if big.get("effect") == "NoExecute":
        big_s, small_s = big.get("tolerationSeconds"), small.get("tolerationSeconds")
        if big_s is not None and (small_s is None or small_s > big_s):
            return False
    return True


def merge_tolerations(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``MergeTolerations``: both lists, a toleration dropped when another covers it."""
    every = first + second
    merged: list[dict[str, Any]] = []
    for i, toleration in enumerate(every):
        if any(_is_superset(kept, toleration) for kept in merged):
            continue
        if any(other != toleration and _is_superset(other, toleration) for other in every[i + 1:]):
            continue
        merged.append(toleration)
    return merged


PLUGIN = Plugin(NAME, frozenset({CREATE}), frozenset({"Pod"}), mutate=_admit, validate=_validate)
