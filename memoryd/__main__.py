"""``python -m memoryd``: the ``memoryd`` command line."""

from memoryd.cli.main import main

raise SystemExit(main())
