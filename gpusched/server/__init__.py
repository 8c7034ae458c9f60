"""gpusched.server: ``gpusched serve``, a Kubernetes-compatible API server over the cluster file.

``app`` is the HTTP server (uvicorn + starlette) with ``guards`` in kube-apiserver's order;
``resources`` answers the verbs (list, get, create, update, patch, delete, subresources) with
``patch``/``strategic``/``ssa`` for PATCH bodies, ``decoding`` for field validation, ``lists``,
``tables`` and ``watch`` (over the change ``feed``) for reads, ``discovery`` for the API and
OpenAPI documents, ``security`` for TLS, tokens and kubeconfigs. One ``worker`` thread owns the
cluster; ``web/`` is the page at ``/``.

Neighbours: drives ``cluster.cluster``; reached through ``cli.serve``.
"""
