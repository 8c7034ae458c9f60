"""The scheduler: kube-scheduler's framework and plugins, vectorised over a NumPy node snapshot.

It never knows which mode it runs in (embedded cluster, experiment, real cluster): it sees a
``Snapshot``, a pod, a clock and a seeded random generator, and returns ``ScheduleResult``s that the
caller applies. Below it: ``devices`` and ``objects``. Above it: ``cluster``, ``sim``, ``backends``.
"""
