"""gpusched.cli: see docs/design.md."""
