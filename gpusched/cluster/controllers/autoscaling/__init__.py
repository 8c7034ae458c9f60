"""Autoscaling: the HorizontalPodAutoscaler, the VPA recommender and the Cluster Autoscaler.

- ``hpa`` and ``hpa_*``: kube-controller-manager's horizontal-pod-autoscaler
  (``pkg/controller/podautoscaler``): ``hpa_metrics`` reads the metrics (``metrics/``),
  ``hpa_replicas`` the replica calculator (``replica_calculator.go``), ``hpa_behavior`` the
  scale-up/down policies and stabilization windows (``horizontal.go``), ``hpa_sync`` the sync
  period timer;
- ``vpa``: the VerticalPodAutoscaler recommender (kubernetes/autoscaler ``vertical-pod-autoscaler``)
  and ``gpu_fit``, gpusched's GPU right-sizing from the peaks it records;
- ``autoscaler`` and ``autoscaler_*``: the Cluster Autoscaler (kubernetes/autoscaler
  ``cluster-autoscaler``) on NodePools: ``autoscaler_config`` its options and ConfigMaps,
  ``autoscaler_groups`` the node groups and scale-up simulation, ``autoscaler_scaledown``
  unneeded-node removal, ``autoscaler_status`` the ``cluster-autoscaler-status`` ConfigMap.

Neighbours: ``controllers.registry`` (order, watches, timers); ``metrics`` (utilization).
"""
