"""Kubernetes' protobuf encoding for ``gpusched serve``: requests in, responses and watches out.

- ``descriptors``: the release's messages, built from ``kubernetes.json``
  (``scripts/gen_protobuf_descriptors.py`` makes it from upstream's ``generated.proto`` files);
- ``convert`` and ``special``: messages <-> the JSON-shaped dicts the server holds;
- ``envelope``: the ``k8s\\x00`` magic, ``runtime.Unknown`` and watch frames;
- ``negotiate``: Content-Type and Accept at the edge of the resource handlers.

Neighbours: ``server.app``, ``server.guards``, ``server.watch``.
"""
