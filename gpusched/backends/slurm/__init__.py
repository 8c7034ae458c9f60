"""gpusched.backends.slurm: the same inventory and jobs on a real Slurm cluster.

``config`` (slurm.conf / gres.conf from Nodes and NodePools), ``translate`` (a Kubernetes Job or
Pod -> sbatch options and script, with a warning per thing Slurm cannot express), ``client``
(sbatch / squeue --json / scontrol / scancel, Slurm states -> pod phases). See docs/slurm.md.
"""
