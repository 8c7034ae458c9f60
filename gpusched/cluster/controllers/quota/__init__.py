"""The resourcequota controller: keeps each ResourceQuota's ``status`` (hard and used).

kube-controller-manager's ``resourcequota`` controller (``pkg/controller/resourcequota``); the
admission half of quotas (refusing what would exceed them) is ``cluster.admission.resource_quota``
and both count usage with ``cluster.admission.quota_evaluator``.
"""
