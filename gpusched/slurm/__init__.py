"""gpusched.slurm: everything Slurm, for the embedded cluster and for a real Slurm cluster.

Parsing (shared):
    ``sbatch``      ``#SBATCH`` options -> ``SbatchJob``; Slurm's names (partitions, GRES types,
                    hostlists).
The embedded cluster (``gpusched sbatch|squeue|sacct|scancel|sinfo``):
    ``embedded``    sbatch -> one Job (``sbatch-<id>``); scancel.
    ``reports``     the squeue / sacct / sinfo rows.
    ``controller``  the sbatch controller (``afterok`` dependencies, ``--time`` limits); it runs
                    in the cluster's settle order through the slot ``cluster.controllers.installed``
                    that :func:`gpusched.slurm.controller.install` fills.
    ``output``      the jobs' ``slurm-%j.out`` files (simulated command output).
A real Slurm cluster (``gpusched slurm config|submit|jobs|cancel``; docs/slurm.md):
    ``config``      slurm.conf / gres.conf from Nodes and NodePools;
    ``translate``   a Kubernetes Job or Pod -> sbatch options and script;
    ``client``      sbatch / squeue --json / scontrol / scancel, Slurm states -> pod phases.

Layer (``.importlinter``): above ``cluster`` and ``metrics``, beside ``server``, below ``cli``
(``cli.slurm_cmd`` prints). Inside, ``output`` > ``reports`` > ``embedded`` > ``controller`` >
``sbatch``, and the real-Slurm modules never import the embedded ones. The queue-order modes Slurm inspired
(backfill, strict priority) are the scheduling core's (``scheduler.backfill``,
``cluster.scheduling.backfill``): they schedule every pod, sbatch or not.
"""
