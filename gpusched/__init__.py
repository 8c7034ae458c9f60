"""gpusched: a GPU scheduler with Kubernetes semantics.

Layers, bottom up, as ``.importlinter`` checks them (see docs/design.md):
objects -> devices -> scheduler -> cluster / policies -> sim / metrics / backends ->
server / slurm -> cli. Each package's docstring says what it is for and names its main modules;
each module's docstring names its neighbours.
"""

__version__ = "0.1.0"
