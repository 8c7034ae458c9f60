"""gpusched.cluster: see docs/design.md."""
