"""`python -m services.extract` / `memoryd serve extract`: settings from MEMORYD_* variables, then run."""

from shared.service import main

from .app import NEEDS_DB, setup

if __name__ == "__main__":
    raise SystemExit(main("extract", setup, needs_db=NEEDS_DB))
