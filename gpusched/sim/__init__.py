"""gpusched.sim: experiments over virtual time, with the same scheduler as every other mode.

``replay`` drives a trace (``replay_input``: Alibaba CSVs, job CSV/Parquet, manifests; load from
``replay_load``) through the embedded cluster and measures it (``replay_record``,
``replay_metrics``, ``replay_output``); ``whatif*`` compares variants of one replay over seeds;
``experiment``, ``workload``, ``fragmentation`` and ``report`` reproduce the FGD paper's
protocol on the ``alibaba`` trace, and ``sweep`` runs many experiments from one YAML file.

Neighbours: ``cluster`` (the embedded cluster), ``scheduler`` and ``policies``; driven by ``cli``.
"""
