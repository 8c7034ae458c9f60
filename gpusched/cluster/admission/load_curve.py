"""GpuschedLoadCurve (gpusched's own): a Deployment's ``gpusched.io/load`` must parse.

A bad load curve (``cluster.clock.load``) in the Deployment's or its template's annotations is refused
as 422 Invalid naming the annotation and the curve field that is wrong; nothing is stored.

Neighbours: ``admission.registry``; ``cluster.clock.load`` (the curve and its parser).
"""

from __future__ import annotations

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.clock.load import check_load

NAME = "GpuschedLoadCurve"


def _validate(attrs: Attributes) -> None:
    check_load(attrs.obj)


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"Deployment"}), validate=_validate,
                subresources=frozenset({"", "status"}))
