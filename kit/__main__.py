"""`python -m kit` is the `kit` command."""

from launcher.cli import main

raise SystemExit(main())
