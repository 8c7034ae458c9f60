"""gpusched: a GPU scheduler with Kubernetes semantics.

Layers, bottom up (see docs/design.md): objects -> devices -> scheduler -> cluster ->
sim / metrics / backends -> app -> server / cli. Each module's docstring names its neighbours.
"""

__version__ = "0.1.0"
