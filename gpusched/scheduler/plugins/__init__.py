"""gpusched.scheduler.plugins: see docs/design.md."""
