"""The request a plugin admits: operation, object, old object, and parsed resources, cached.

``admission.Attributes`` upstream: the operation, the kind, the namespace and name, the object
(changed in place by mutating hooks), the stored object on UPDATE and DELETE, the subresource.
gpusched adds the view (what informers give upstream plugins: LimitRanges, quotas, classes) and
the quantities of a Pod parsed once per object (:attr:`Attributes.pod`): LimitRanger, the
RuntimeClass check, ResourceQuota's constraints, usage and scopes and the pod's QoS class all
read them, where each check used to parse the pod again. A mutating hook that changes a pod's
resources calls :meth:`Attributes.resources_changed`, so later hooks parse the new ones.

Neighbours: built by ``apiserver.write``; read by every plugin of ``cluster.admission``;
``apiserver.resources`` (the totals), ``objects.quantity``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpusched.cluster.apiserver.resources import (container_resources, limit_range_pod_limits,
                                                  limit_range_pod_requests, quota_limits,
                                                  quota_requests)
from gpusched.cluster.apiserver.view import View, object_namespace


class PodResources:
    """A pod's quantities in canonical units, each derivation computed at its first read."""

    def __init__(self, pod: dict[str, Any]) -> None:
        self._pod = pod

    @cached_property
    def containers(self) -> list[tuple[str, str, dict[str, int], dict[str, int]]]:
        """(``container``/``init container``, name, requests, limits) of every container then
        every init container, a limit alone setting the request."""
        spec = self._pod.get("spec") or {}
        out = []
        for prefix, field_name in (("container", "containers"), ("init container", "initContainers")):
            for container in spec.get(field_name) or []:
                requests, limits = container_resources(container)
                out.append((prefix, str(container.get("name", "")), requests, limits))
        return out

    @cached_property
    def quota_requests(self) -> dict[str, int]:
        return quota_requests(self._pod)

    @cached_property
    def quota_limits(self) -> dict[str, int]:
        return quota_limits(self._pod)

    @cached_property
    def limit_range_requests(self) -> dict[str, int]:
        return limit_range_pod_requests(self._pod)

    @cached_property
    def limit_range_limits(self) -> dict[str, int]:
        return limit_range_pod_limits(self._pod)

    @cached_property
    def qos(self) -> str:
        """``qos.GetPodQOS`` (pkg/apis/core/helper/qos): BestEffort when no container or init
        container has a positive cpu/memory request or limit; Guaranteed when every one limits
        both cpu and memory and the summed requests equal the summed limits; else Burstable."""
        requests: dict[str, int] = {}
        limits: dict[str, int] = {}
        guaranteed = True
        for _, _, container_requests, container_limits in self.containers:
            for name in ("cpu", "memory"):
                if container_requests.get(name, 0) > 0:
                    requests[name] = requests.get(name, 0) + container_requests[name]
                if container_limits.get(name, 0) > 0:
                    limits[name] = limits.get(name, 0) + container_limits[name]
            if not all(container_limits.get(name, 0) > 0 for name in ("cpu", "memory")):
                guaranteed = False
        if not requests and not limits:
            return "BestEffort"
        if guaranteed and requests == limits:
            return "Guaranteed"
        return "Burstable"


@dataclass(slots=True)
class Attributes:
    """One write as admission sees it; see the module docstring."""

    view: View
    operation: str                       # CREATE | UPDATE | DELETE
    obj: dict[str, Any]                  # the object (DELETE: the stored one)
    old: dict[str, Any] | None = None    # the stored object on UPDATE
    subresource: str = ""
    _pod: PodResources | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return object_namespace(self.kind, self.obj)

    @property
    def pod(self) -> PodResources:
        """The object's quantities as a pod's, parsed at the first read after a change."""
        if self._pod is None:
            self._pod = PodResources(self.obj)
        return self._pod

    def resources_changed(self) -> None:
        """A mutating hook changed the pod's resources (or overhead): parse them again."""
        self._pod = None
