"""Helpers the scheduler plugins share, as upstream's ``pkg/scheduler/framework/plugins/helper``:
plugins never import each other (an import-linter contract), so what two of them compute alike
lives here. No module here is a plugin (no ``NAME``, no factory).

- ``node_affinity``: nodeSelector and node-affinity terms as node masks (NodeAffinity,
  PodTopologySpread, VolumeBinding);
- ``normalize_score``: ``DefaultNormalizeScore`` (NodeAffinity, TaintToleration);
- ``spread``: topology domains and the pods per node (PodTopologySpread, InterPodAffinity);
- ``resources``: the allocatable/requested matrix (NodeResourcesFit, BalancedAllocation).
"""
