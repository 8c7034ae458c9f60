"""gpusched.dra: Dynamic Resource Allocation's semantics, pure (``resource.k8s.io/v1``).

- ``model``: typed read views of ResourceSlice, DeviceClass and ResourceClaim, parsed once;
- ``cel`` (with ``cel_library``, ``cel_cost``, ``cel_projection``, ``semver``): CEL device
  selectors in Kubernetes' DRA environment, compiled once per text;
- ``allocator``: upstream's structured allocator (``allocate``, ``InUse``, ``NodeFacts``,
  ``SliceSet``, ``first_available_score``), built from ``pools`` (what a node sees),
  ``requests`` (the checks before the search), ``search`` (depth-first with backtracking; the
  first complete solution wins), ``selection``, ``counters``, ``capacity``, ``constraints`` and
  ``results`` (the ``status.allocation`` it writes); ``in_use`` reads allocated claims.

Layer: imports ``gpusched.objects`` only (the import-linter contract ``dra-pure``); the scheduler's
DynamicResources plugin and the objects' validation call it.
"""
