"""Node controllers: the cluster's nodes and its furniture, as kube-controller-manager keeps them.

- ``nodepool``: gpusched's NodePool, a declared group of identical nodes (the embedded cluster's
  stand-in for a cloud provider's node groups): creates, relabels and removes its Nodes;
- ``node_lifecycle``: taint-based eviction and orphaned pods, as ``pkg/controller/nodelifecycle``
  (``NoExecute`` taints, ``tolerationSeconds``) and the pod garbage collector
  (``pkg/controller/podgc``) do;
- ``bootstrap``: the namespaces, system PriorityClasses, ``kubernetes`` Service and default
  ServiceAccounts the API server's and controller-manager's bootstrap controllers keep in place.

Neighbours: ``controllers.registry`` (order, work-queue keys), ``cluster.nodes`` (cordon, drain).
"""
