"""Placement policies of the FGD study, as score plugins beside kube-scheduler's in-tree ones.

These are not kube-scheduler plugins: they are the FGD paper's baselines (Random, DotProduct,
GpuClustering, GpuPacking, BestFit, FGD; ``gpusched experiment fgd``), the reference
simulator's per-seed tie-break (NodeOrder) and gpusched's own policies: the FGD-SaturatedFirst
tie-break (GpuSaturatedFirst) and FGD-Fill (PolicyFGDFill, FGD plus GPUs stranded by CPU and
memory). Variants that did not beat FGD are documented in ``docs/fgd-results.md`` and are not
kept as code.

Layering: this package imports ``scheduler`` (the framework's types, the snapshot); the
scheduler never imports it. A caller that wants these plugins feeds ``REGISTRY`` to the
profile resolution from above (``scheduler.registry.merged(IN_TREE, REGISTRY)``), as an
out-of-tree registry is merged into kube-scheduler's in-tree one.

Neighbours: ``scheduler.framework`` (extension points), ``scheduler.snapshot``; used by
``sim.experiment_profile``.
"""

from __future__ import annotations

from gpusched.policies import (bestfit, dotprod, fgd, fgd_fill, gpuclustering, gpupacking,
                               node_order, random, saturated_first)
from gpusched.scheduler.registry import PluginEntry, registry_of

REGISTRY: dict[str, PluginEntry] = registry_of(
    PluginEntry(node_order.NodeOrder, node_order.new),
    PluginEntry(saturated_first.GpuSaturatedFirst, saturated_first.new),
    PluginEntry(random.PolicyRandom, random.new),
    PluginEntry(dotprod.PolicyDotProduct, dotprod.new),
    PluginEntry(gpuclustering.PolicyGpuClustering, gpuclustering.new),
    PluginEntry(gpupacking.PolicyGpuPacking, gpupacking.new),
    PluginEntry(bestfit.PolicyBestFit, bestfit.new),
    PluginEntry(fgd.PolicyFGD, fgd.new),
    PluginEntry(fgd_fill.PolicyFGDFill, fgd_fill.new),
)
