"""gpusched.objects: Kubernetes objects as gpusched reads them, the bottom layer of the package.

Manifests enter here and become checked dicts and typed values: ``manifest`` and ``strict`` decode
(against the OpenAPI ``schema``s in ``schemas/``), ``validation*`` refuse with field paths,
``quantity`` parses amounts once into canonical integers, ``selectors`` match labels, ``kinds``
names the resources. ``typed_views`` (generated from the OpenAPI schemas) types what the core
reads of a stored body; ``pod.pod_info`` and ``node.node_info`` build the frozen values of
``types`` the scheduler reads, and ``assignment`` is the one reader and writer of the device
assignment annotations.

Layer: imports nothing from the rest of gpusched except ``gpusched.errors``.
"""
