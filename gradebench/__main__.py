"""``python -m gradebench``: the command line, for where the ``gradebench`` script is not on the PATH."""

from ._cli.main import main

raise SystemExit(main())
