"""Admission: the plugins kube-apiserver runs on a write between decoding and storage.

One module per plugin, each a :class:`~gpusched.cluster.admission.plugin.Plugin` (a mutating
and/or a validating hook, and the kinds, operations and subresources it handles); ``registry``
lists them in kube-apiserver's order (``pkg/kubeapiserver/options/plugins.go``
``AllOrderedPlugins``) with gpusched's own plugins at their place. The apiserver's write path
(``apiserver.write``) runs every mutating hook in that order, validates the mutated object,
then runs every validating hook in the same order. A rejection raises a :mod:`gpusched.errors`
type; the write's transaction rolls back, so nothing is stored.

A plugin reads the object through :class:`~gpusched.cluster.admission.attributes.Attributes`,
which parses a pod's resource quantities once per object (cached until a mutating hook changes
them) instead of at every check.

Adding a plugin: one module with ``PLUGIN = Plugin(...)`` and one line in ``registry.ORDERED``
(its module and kinds: a plugin is imported at the first request for one of its kinds).
"""
