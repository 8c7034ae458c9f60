"""Workload controllers: from a Deployment, ReplicaSet, Job, DaemonSet or StatefulSet to its pods.

kube-controller-manager's workload controllers (kubernetes ``pkg/controller/deployment``,
``replicaset``, ``job``, ``daemon``, ``statefulset``), each reconciling one kind from the change feed:

- ``deployment``: rollouts (RollingUpdate, Recreate) through ReplicaSets; ``deployment_status``
  its status and progress deadline (a timer), ``deployment_util`` the revision and
  surge/unavailable arithmetic of ``pkg/controller/deployment/util/deployment_util.go``;
- ``replicaset``: keeps ``spec.replicas`` pods, choosing which to delete as upstream ranks them;
- ``job``: completions, parallelism, back-off, ``podFailurePolicy`` (``job_rules``), deadlines;
- ``daemonset``: one pod per eligible node, rolling updates;
- ``statefulset``: pods ``<set>-0..N-1`` one at a time in order (OrderedReady), removed from the
  highest ordinal down.

Neighbours: ``controllers.common`` (owner references, creating pods), ``controllers.registry``
(their order and work-queue keys), ``cluster.rollout`` (``kubectl rollout``).
"""
