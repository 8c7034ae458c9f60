"""gpusched.metrics: what a GPU cluster's monitoring shows, for the embedded cluster and this host.

``dcgm`` renders dcgm-exporter's counter set from GPU samples, which come either from the
documented model of each pod's GPU use (``gpu_model``, ``cluster_source``) or from this host's
real GPUs through NVML (``nvml_source``, served by ``exporter``). ``cluster_metrics`` adds the
scheduler's and cluster's own Prometheus metrics and ``exposition`` assembles ``/metrics``;
``cost`` prices GPU-hours, and ``container``/``container_logs`` answer ``exec`` and ``logs``.

Neighbours: reads the cluster's view and ``objects.assignment``; used by ``server`` and ``cli``.
"""
