"""Kueue's controllers on the embedded cluster: the batch/v1 Job integration (``jobs``: a queued
Job gets a Workload, runs once admitted with its flavors' labels and tolerations, stops when
evicted, and marks its Workload finished) and Kueue's scheduler (``scheduler``: ClusterQueue and
LocalQueue status, and the scheduling cycle of ``gpusched.kueue.cycle`` run on every change,
admitting, preempting or leaving Workloads pending with Kueue's reasons and messages).

``snapshot`` reads the store into the pure package's inputs; every write goes through
``apiserver.write``. The admission plugin ``admission.kueue_job`` suspends a queued Job at create.
"""
