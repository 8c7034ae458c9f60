"""Placement policies of the FGD study, as score plugins beside kube-scheduler's in-tree ones.

These are not kube-scheduler plugins: they are the FGD paper's baselines (Random, DotProduct,
GpuClustering, GpuPacking, BestFit, FGD; ``gpusched experiment fgd``), the reference
simulator's per-seed tie-break (NodeOrder) and gpusched's own FGD-SaturatedFirst tie-break
(GpuSaturatedFirst). Variants that did not beat FGD are documented in ``docs/fgd-results.md``
and are not kept as code.

Layering: this package imports ``scheduler`` (the framework's types, the snapshot); the
scheduler never imports it. A caller that wants these plugins feeds ``REGISTRY`` to the
profile resolution from above (``scheduler.plugins.merged(IN_TREE, REGISTRY)``), as an
out-of-tree registry is merged into kube-scheduler's in-tree one.

Neighbours: ``scheduler.framework`` (extension points), ``scheduler.snapshot``; used by
``sim.experiment_profile``.
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.policies import (bestfit, dotprod, fgd, gpuclustering, gpupacking, node_order,
                               random, saturated_first)

REGISTRY: dict[str, Callable[[dict[str, Any] | None], Any]] = {
    node_order.NAME: node_order.new,
    saturated_first.NAME: saturated_first.new,
    random.NAME: random.new,
    dotprod.NAME: dotprod.new,
    gpuclustering.NAME: gpuclustering.new,
    gpupacking.NAME: gpupacking.new,
    bestfit.NAME: bestfit.new,
    fgd.NAME: fgd.new,
}
