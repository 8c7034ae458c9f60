"""Typed views of Kubernetes objects: quantities, kinds, manifests, validation, selectors.

The bottom layer: imports nothing from the rest of gpusched except ``gpusched.errors``.
"""
