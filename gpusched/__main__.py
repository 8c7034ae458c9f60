"""`python -m gpusched` runs the CLI."""

from gpusched.cli.main import main

raise SystemExit(main())
