"""gpusched.metrics: see docs/design.md."""
