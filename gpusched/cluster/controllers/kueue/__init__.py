"""Kueue's controllers on the embedded cluster: the job integrations (``jobframework``: one
reconciler over a suspendable owner with pod templates - a queued owner gets a Workload, runs
once admitted with its flavors' labels and tolerations, stops when evicted, and marks its
Workload finished - run for batch/v1 Jobs by ``jobs`` and for JobSets by ``jobsets``) and Kueue's
scheduler (``scheduler``: ClusterQueue and LocalQueue status, and the scheduling cycle of
``gpusched.kueue.cycle`` run on every change, admitting, preempting or leaving Workloads pending
with Kueue's reasons and messages).

``snapshot`` reads the store into the pure package's inputs; every write goes through
``apiserver.write``. The admission plugins ``admission.kueue_job`` and ``admission.kueue_jobset``
suspend a queued object at create.
"""
