"""gpusched.sim: see docs/design.md."""
