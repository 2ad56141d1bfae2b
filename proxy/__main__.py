"""``python -m proxy`` is the ``hookgate`` command."""

from proxy.cli import main

raise SystemExit(main())
