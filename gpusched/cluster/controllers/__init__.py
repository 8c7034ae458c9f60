"""The controller-manager: the controllers that drive the cluster towards what its objects ask.

As kube-controller-manager runs them (kubernetes ``cmd/kube-controller-manager``,
``pkg/controller``), one sub-package per family:

- ``workloads/``: Deployment, ReplicaSet, Job, DaemonSet;
- ``nodes/``: NodePools, node lifecycle (taint eviction, pod GC, disruption budgets), the
  cluster's furniture (``bootstrap``);
- ``autoscaling/``: HorizontalPodAutoscaler, the VPA recommender, the Cluster Autoscaler;
- ``storage/``: PersistentVolumeClaim binding and provisioning;
- ``network/``: Endpoints and EndpointSlices;
- ``gpuoperator/``: NVIDIA's GPU Operator (a cluster-level operator beside them);

and, shared: ``base`` (informers and work queues: what a change enqueues), ``common`` (owner
references, pod phases, creating pods from templates, the garbage collector), ``registry`` (the
controllers in order, ``Descriptor`` per controller: what ``cluster.clock.settle`` runs, which take
their work queue, which watch what, the per-object timers), ``installed`` (slots a package above
the cluster fills, Slurm's ``sbatch``). The node-side parts (pod admission, lifecycle, containers,
node status, the device plugin) are the kubelet's: ``cluster.kubelet``.

Every controller is ``reconcile(view)`` (changes go through the View), and a keyed one
``reconcile(view, changes)``: it reconciles only the objects its informers map the changes to
(its module's ``QUEUE``, ``controllers.base``). Timed ones also have per-object timers
``due(view, body) -> float | None`` listed by kind in ``registry.TIMED``: the event heap of
``cluster.clock.timers`` orders them so ``Cluster.advance`` steps through time in order. A command's
own settle runs every controller's full pass, as an informer's resync.

This package's ``__init__`` (and each family's) imports nothing, so a module that needs one helper
(``controllers.common``) does not load every controller (and what they import).

Neighbours: ``cluster.clock.settle`` runs them; they write through ``apiserver.view``, pods they create
pass ``cluster.admission``.
"""
