"""The adversary as a test (issue 25): hostile and generated inputs over three surfaces.

- ``manifests``: ``gpusched apply -f`` on generated YAML (mutated manifests of ``examples/``,
  random values planted in them, the hostile classes of issue 25 findings 1-4 and 6);
- ``api``: requests against a running ``gpusched serve`` (schemathesis cases from the served
  ``/openapi/v3``, generated bodies, headers and patches, the classes of findings 5-7);
- ``concurrent``: several clients creating and deleting pods, nodes and ConfigMaps at once, the
  cluster's invariants checked after each round.

Every case is classified (``harness.CLASSES``): crash, hang, accepted-invalid, double-held device,
over-committed node, poisoned read. Every process the suite starts runs under a memory limit.
``test_fuzz.py`` runs a small derandomised budget and asserts 0 in every class;
``python -m bench.fuzz --cases 10000`` runs the large one and prints the table.
"""
