"""`python -m services.ingest` / `memoryd serve ingest`: settings from MEMORYD_* variables, then run."""

from shared.service import main

from .app import METRICS, NEEDS_DB, load_settings, setup

if __name__ == "__main__":
    raise SystemExit(main("ingest", setup, needs_db=NEEDS_DB, load_settings=load_settings, metrics=METRICS))
