"""``python -m hookgate`` is the ``hookgate`` command."""

from hookgate.cli import main

raise SystemExit(main())
