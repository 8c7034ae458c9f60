"""gpusched.server: see docs/design.md."""
