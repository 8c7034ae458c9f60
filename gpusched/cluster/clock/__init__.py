"""The cluster's clock: virtual time as one engine.

- ``timers``: the event heap (``Timeline``): the controllers' timers derived from objects (a
  grace period ends, a pod's run time is up, a back-off ends) and events pushed by a source;
- ``loop``: the one loop that moves the clock through the heap, settling at each step
  (``Cluster.advance``, ``serve``'s real-time ticks and a replay all run it);
- ``settle``: the controllers, kubelet and scheduler run to a fixpoint at one time;
- ``arrivals``: a trace's arrivals as heap events, and ``feed`` (a replay's run of the loop);
- ``wall``: how a CLI command that waits lets virtual time follow the wall clock;
- ``load``: load curves (requests per second over virtual time) of Deployments.

The package imports nothing itself, so reading a load curve does not load the controllers.
"""
