"""gpusched.cluster: the embedded control plane, a Kubernetes cluster's components in one process.

``cluster.Cluster`` is the facade every command drives. It assembles the API server
(``apiserver/``: the SQLite store, the in-memory view of one command, the change journal and the
write path, one function per verb), admission (``admission/``: one module per plugin in
kube-apiserver's order), the controllers
(``controllers/``), the kubelet (``kubelet/``: node admission, device allocation, pod lifecycle),
the scheduler's host (``scheduling/``: the queue's feed, cache, binder, queue-order modes) and
the clock (``clock/``: the event heap, the one loop that advances it and settles, trace
arrivals, the wall clock a waiting command follows, load curves). ``explain*`` and ``whatif_pod`` say why a pod does
not run.

Neighbours: ``scheduler``, ``devices`` and ``objects`` below; ``sim``, ``metrics``, ``server`` and
``cli`` above.
"""
