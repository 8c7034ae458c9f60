"""The kubelet: what each node does with the pods bound to it, and what the node advertises.

Embedded nodes have no kubelet process; these modules do its work for every node in each settle
round, in kubelet terms (kubernetes ``pkg/kubelet/...``):

- ``admission``: admitting bound pods on their node, oldest first (``kubelet.go``
  ``HandlePodAdditions``/``canAdmitPod``): the device manager's allocation, then the predicate
  admit handler (``lifecycle/predicate.go``); re-checking running pods' devices after a
  re-advertisement; rejecting (``rejectPod``);
- ``pod_lifecycle``: bound pods start, run for their duration and finish; graceful termination
  ends at the deletion grace period (the pod workers, ``pod_workers.go``, and the status manager);
- ``containers``: a container that exits non-zero under ``restartPolicy`` (the runtime manager's
  restart and CrashLoopBackOff back-off, ``kuberuntime/kuberuntime_manager.go``);
- ``node_status``: the Ready condition, addresses and ``nodeInfo`` the kubelet posts
  (``kubelet_node_status.go``), simulated pod IPs;
- ``device_plugin``: what a GPU node advertises, as NVIDIA's device plugin registers its resources
  with the device manager (``cm/devicemanager/manager.go`` ``GetCapacity``) and GPU Feature
  Discovery labels the node (both node-local daemons); ``device_inputs``: what decides that view
  (ConfigMaps, the ClusterPolicy, the config each plugin pod loaded), read once per pass;
- ``invariants``: the kubelet's accounting checker (no device held twice, requests within
  allocatable), used by tests and the fuzz suite.

The simulated container view behind ``exec`` and ``logs`` is ``metrics.container`` and
``metrics.container_logs`` (it reads the metrics model, a layer above the cluster).

Neighbours: ``cluster.clock.settle`` runs ``admission`` and ``pod_lifecycle`` after the controllers;
``controllers.registry`` runs ``node_status``, ``device_plugin`` and ``containers``;
``cluster.scheduling`` reads the devices through ``device_inputs``.
"""
