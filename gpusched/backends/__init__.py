"""gpusched.backends: see docs/design.md."""
