"""A claim's constraints: ``matchAttribute`` (all devices share the value) and
``distinctAttribute`` (no two devices share it), applied as devices are added and removed during
the search.

A constraint with ``requests`` applies only to devices for those requests (a request name covers
its subrequests; ``<request>/<subrequest>`` names one subrequest). A device without the attribute
breaks the constraint. Values compare with their API type: a string ``"1.0.0"`` and a version
``1.0.0`` differ.

Upstream: ``structured/internal/incubating/{allocator_incubating.go (matchAttributeConstraint),
constraint.go (distinctAttributeConstraint)}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusched.dra.model import Attribute, Constraint, Device


@dataclass
class ActiveConstraint:
    """One constraint of a claim during a search.

    ``distinctAttribute`` keeps, as upstream does, one value per *request name*: a second device
    of the same request is compared with the values held and then replaces its request's value.
    """
    requests: frozenset[str]
    attribute: str
    distinct: bool
    count: int = 0
    first: Attribute | None = None
    by_request: dict[str, Attribute] = field(default_factory=dict)

    @staticmethod
    def of(constraint: Constraint) -> ActiveConstraint | None:
        name = constraint.match_attribute or constraint.distinct_attribute
        if name is None:
            return None
        return ActiveConstraint(frozenset(constraint.requests), name, constraint.match_attribute is None)

    def _applies(self, request: str, subrequest: str) -> bool:
        if not self.requests or request in self.requests:
            return True
        return bool(subrequest) and f"{request}/{subrequest}" in self.requests

    def add(self, request: str, subrequest: str, device: Device) -> bool:
        if not self._applies(request, subrequest):
            return True
        value = device.attribute(self.attribute)
        if value is None:
            return False
        if value.kind == "unsupported" and (self.distinct or self.count):
            return False      # upstream: "attribute type unknown" (the first device is taken as is)
        if self.distinct:
            if self.count and value in self.by_request.values():
                return False
            self.by_request[request] = value
        elif self.count == 0:
            self.first = value
        elif value != self.first:
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str) -> None:
        if self._applies(request, subrequest):
            self.by_request.pop(request, None)
            self.count -= 1
