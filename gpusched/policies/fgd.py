"""The FGD placement policy as a score plugin: ``NAME`` and the factory; the scoring itself is
``policies.fgd_base.PolicyFGD`` (shared with the ``fgd_fill`` variant).

Neighbours: ``policies.fgd_base``; registered in ``policies/__init__``.
"""

from __future__ import annotations

from typing import Any

from gpusched.policies.fgd_base import NAME, PolicyFGD

__all__ = ["NAME", "PolicyFGD", "new"]


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyFGD:
    return PolicyFGD(args)
