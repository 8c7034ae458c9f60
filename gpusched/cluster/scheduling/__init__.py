"""The scheduler's host in the embedded cluster: what kube-scheduler's process keeps around the
scheduling framework, fed by the cluster's change journal instead of informers.

- ``host``: the ``scheduler`` step of ``settle``: feeds the one scheduling queue
  (``scheduler.queue``) from the journal and runs the loop (``scheduler.scheduling_loop``);
- ``cache``: the scheduler's snapshot of nodes, devices and bound pods, kept current from what
  changed (upstream's scheduler cache);
- ``binder``: a result written to the view (bind, preempt, failure records, attempt metrics),
  the loop's ``Binder``;
- ``profiles``: the served scheduler names and profiles, the Scheduler of one pass;
- ``mode``: which queue order a pass runs (ConfigMap ``kube-system/gpusched-scheduler``);
- ``backfill``: the ``backfill`` and ``strict`` queue-order modes, imported when one is set.
"""
