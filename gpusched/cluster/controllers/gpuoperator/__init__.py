"""The NVIDIA GPU Operator, a cluster-level operator rather than a kube-controller-manager part.

``clusterpolicy`` is the operator's ClusterPolicy reconciler (NVIDIA gpu-operator
``controllers/clusterpolicy_controller.go``, ``controllers/object_controls.go``): from a
``ClusterPolicy`` to the operand DaemonSets (device plugin, GFD, mig-manager, ...) and their
deploy labels on GPU nodes. What those operands do on a node (advertise devices, label it) is the
kubelet side's (``cluster.kubelet.device_plugin``).

Neighbours: ``devices.operator`` (the policy's fields); ``controllers.workloads.daemonset``.
"""
