"""``python -m gradcore`` runs the ``gradcore`` command (see :mod:`gradcore.cli`)."""

from .cli import main

if __name__ == "__main__":  # (importing it, as a docs build does, runs nothing)
    raise SystemExit(main())
