"""``python -m gradcore`` runs the ``gradcore`` command (see :mod:`gradcore.cli`)."""

from .cli import main

raise SystemExit(main())
