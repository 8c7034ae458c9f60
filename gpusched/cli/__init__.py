"""gpusched.cli: the ``gpusched`` command line, kubectl's verbs and output over the embedded cluster.

``main`` wires argparse, global options and the one error handler (a bad input prints one line,
never a traceback); ``commands``, ``get``, ``create``, ``describe*``, ``rollout``, ``top`` and
``container_cmd`` are kubectl's verbs in kubectl's layouts (``columns*``, ``output``,
``jsonpath*`` print), ``serve`` starts the API server, ``replay``/``whatif`` drive the simulator,
``slurm_cmd`` the Slurm commands and ``scheduler_cmd`` the secondary scheduler of a real cluster.
This is the only layer that writes to the terminal.

Neighbours: everything below it; the ``Cluster`` facade (``cluster.cluster``) for the state file.
"""
