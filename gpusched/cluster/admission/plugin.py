"""What an admission plugin is: a name, what it handles, a mutating and/or a validating hook.

As ``k8s.io/apiserver/pkg/admission`` ``Interface`` (``Handles``), ``MutationInterface``
(``Admit``) and ``ValidationInterface`` (``Validate``): a hook returns nothing when it lets the
request pass and raises a :mod:`gpusched.errors` type (``Forbidden``, ``Invalid``, ``NotFound``)
when it refuses it, with upstream's message.

Neighbours: every module of ``cluster.admission`` builds one; ``admission.registry`` orders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from gpusched.cluster.admission.attributes import Attributes

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"
Hook = Callable[[Attributes], None]


@dataclass(frozen=True, slots=True)
class Plugin:
    """One admission plugin; ``kinds`` None handles every kind; ``subresources``: the
    subresources it sees ("" is the main resource; most plugins ignore ``status``)."""

    name: str
    operations: frozenset[str]
    kinds: frozenset[str] | None = None
    mutate: Hook | None = None
    validate: Hook | None = None
    subresources: frozenset[str] = frozenset({""})

    def handles(self, kind: str, operation: str, subresource: str) -> bool:
        return (operation in self.operations and subresource in self.subresources
                and (self.kinds is None or kind in self.kinds))
