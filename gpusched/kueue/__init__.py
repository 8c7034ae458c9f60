"""Kueue's semantics, pure: the cohort tree and its quota arithmetic (``quota``), the flavor
assigner and its messages (``flavors``), queue ordering (``ordering``), fair sharing
(``fair_sharing``, the cycle's fair-sharing order ``fair_iterator``) and preemption target
selection (classical through cohort trees ``preemption``, fair-sharing ``fair_preemption``,
chosen by ``targets``), and one scheduling cycle (``cycle``).

Inputs are dicts shaped as Kueue's v1beta2 objects (ClusterQueue, Cohort, ResourceFlavor,
Workload); outputs are frozen values. Nothing here reads a store or a clock: the controllers in
``cluster/controllers/kueue/`` feed it. Imports ``objects`` only (an import-linter contract).
"""
