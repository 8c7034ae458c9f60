"""The scheduler: kube-scheduler's framework and plugins, vectorised over a NumPy node snapshot.

It never knows which mode it runs in (embedded cluster, experiment, real cluster): it sees a
``Snapshot``, a pod, a clock and a seeded random generator, and returns ``ScheduleResult``s that the
caller applies. ``framework`` holds the extension points, cycle state and statuses, ``plugins/``
the in-tree plugins (one module each), ``profile`` and ``registry`` resolve a profile, ``runner``
runs a scheduling cycle, ``queue`` orders pending pods, ``preemption`` finds victims, ``explain``
says why a pod does not fit, and ``snapshot`` holds the nodes as NumPy rows.

Below it: ``devices`` and ``objects``. Above it: ``cluster``, ``sim``, ``backends``.
"""
