"""The embedded API server: the store, the in-memory view a command changes, the change journal
and the one write path.

kube-apiserver's shape: every writer (``gpusched apply``/``create``/``patch``/``delete``,
``serve``'s handlers, controllers, the kubelet's status writes, what-if, replay) hands its object
to one function per verb; the object is decoded, admitted (``cluster.admission``), validated and
stored, and the change journal feeds the controllers and the scheduling queue.

- ``store``: the SQLite file (objects, events, the change log, the clock);
- ``view``: one command's in-memory state, loaded from and written back to the store;
- ``notes``: what a write tells the scheduling queue (capacity epochs) and the metrics;
- ``changes``: the change journal as each controller's work queue;
- ``apply``: ``kubectl apply``'s three-way merge and the Pod update rules;
- ``api_ops``: the REST verbs ``serve`` answers (create, replace, bind, evict, events);
- ``resources``: pod resource totals as admission plugins read them.
"""
