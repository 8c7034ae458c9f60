"""gpusched.devices: see docs/design.md."""
