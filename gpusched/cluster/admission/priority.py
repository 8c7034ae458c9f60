"""Priority (``plugin/pkg/admission/priority/admission.go``).

- A Pod create: ``spec.priorityClassName`` resolved to ``spec.priority`` and
  ``spec.preemptionPolicy`` (the system classes by their fixed values; none named: the
  ``globalDefault`` class, written into the pod; none at all: 0); a class that does not exist
  is refused (``no PriorityClass with name x was found``), and so is a ``priority`` or
  ``preemptionPolicy`` in the pod that differs from what the class says.
- A PriorityClass create or update: at most one ``globalDefault`` (``PriorityClass x is already
  marked as default. Only one default can exist``); ``value`` and ``preemptionPolicy`` are
  immutable (``ValidatePriorityClassUpdate``).
- The system classes cannot be deleted (``this is a system priority class and cannot be
  deleted``, ``pkg/registry/scheduling/priorityclass/storage``).

Neighbours: ``admission.registry``; ``controllers.nodes.bootstrap`` creates the system classes.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, DELETE, UPDATE, Plugin
from gpusched.cluster.apiserver.view import View
from gpusched.errors import FieldError, ForbiddenError, InvalidError

NAME = "Priority"
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000,
                           "system-node-critical": 2000001000}
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"


def _admit_priority_class(view: View, body: dict[str, Any], old: dict[str, Any] | None) -> None:
    name = body["metadata"]["name"]
    if old is not None:
        errors = []
        if old.get("value") != body.get("value"):
            errors.append(FieldError("value", "Forbidden", None, "may not be changed in an update."))
        old_policy = old.get("preemptionPolicy", "PreemptLowerPriority")
        new_policy = body.get("preemptionPolicy", "PreemptLowerPriority")
        if old_policy != new_policy:
            errors.append(FieldError("preemptionPolicy", "Invalid value", new_policy,
                                     "field is immutable"))
        if errors:
            raise InvalidError("PriorityClass", name, errors)
    body.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if body.get("globalDefault"):
        for other in view.list("PriorityClass"):
            if other.get("globalDefault") and other["metadata"]["name"] != name:
                raise ForbiddenError(
                    PRIORITY_CLASSES, name,
                    f"PriorityClass {other['metadata']['name']} is already marked as default. "
                    "Only one default can exist")


def default_priority_class(view: View) -> dict[str, Any] | None:
    """The globalDefault class; with several (a race upstream), the lowest value wins."""
    defaults = [pc for pc in view.list("PriorityClass") if pc.get("globalDefault")]
    defaults.sort(key=lambda pc: (int(pc.get("value", 0)), pc["metadata"]["name"]))
    return defaults[0] if defaults else None


def _class_of(view: View, pod: dict[str, Any]) -> tuple[int, str]:
    """(priority, preemptionPolicy) the pod's class gives; writes the default class's name."""
    spec = pod["spec"]
    class_name = spec.get("priorityClassName") or ""
    policy = "PreemptLowerPriority"
    if class_name in SYSTEM_PRIORITY_CLASSES:
        return SYSTEM_PRIORITY_CLASSES[class_name], policy
    if class_name:
        pc = view.get("PriorityClass", class_name)
        if pc is None:
            raise ForbiddenError("pods", pod["metadata"]["name"],
                                 f"no PriorityClass with name {class_name} was found")
        return int(pc.get("value", 0)), pc.get("preemptionPolicy") or policy
    pc = default_priority_class(view)
    if pc is None:
        return 0, policy
    spec["priorityClassName"] = pc["metadata"]["name"]
    return int(pc.get("value", 0)), pc.get("preemptionPolicy") or policy


def resolve_priority(view: View, pod: dict[str, Any]) -> None:
    """Write spec.priority / priorityClassName / preemptionPolicy as the Priority plugin does."""
    spec = pod.setdefault("spec", {})
    name = pod["metadata"]["name"]
    value, policy = _class_of(view, pod)
    if "priority" in spec and spec["priority"] is not None and int(spec["priority"]) != value:
        raise ForbiddenError(
            "pods", name, f"the integer value of priority ({spec['priority']}) must not be "
            f"provided in pod spec; priority admission controller computed {value} from the "
            "given PriorityClass name")
    if spec.get("preemptionPolicy") and spec["preemptionPolicy"] != policy:
        raise ForbiddenError(
            "pods", name, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) "
            "must not be provided in pod spec; priority admission controller computed "
            f"{policy} from the given PriorityClass name")
    spec["priority"] = value
    spec["preemptionPolicy"] = policy


def _admit(attrs: Attributes) -> None:
    if attrs.kind == "PriorityClass":
        if attrs.operation == DELETE:
            if attrs.name in SYSTEM_PRIORITY_CLASSES:
                raise ForbiddenError(PRIORITY_CLASSES, attrs.name,
                                     "this is a system priority class and cannot be deleted")
            return
        _admit_priority_class(attrs.view, attrs.obj, attrs.old)
    elif attrs.operation == CREATE:
        resolve_priority(attrs.view, attrs.obj)


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE, DELETE}), frozenset({"Pod", "PriorityClass"}),
                mutate=_admit)
