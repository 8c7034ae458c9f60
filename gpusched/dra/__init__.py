"""gpusched.dra: Dynamic Resource Allocation's semantics, pure (``resource.k8s.io/v1``).

- ``model``: typed read views of ResourceSlice, DeviceClass and ResourceClaim, parsed once;
- ``cel`` (with ``cel_library``, ``cel_cost``, ``semver``): CEL device selectors;
- ``allocator``: upstream's structured allocator (pools, slices, devices in order; depth-first
  with backtracking; the first complete solution wins).

Layer: imports ``gpusched.objects`` only (the import-linter contract ``dra-pure``); the scheduler's
DynamicResources plugin and the objects' validation call it.
"""
