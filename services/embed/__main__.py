"""`python -m services.embed` / `memoryd serve embed`: settings from MEMORYD_* variables, then run."""

from shared.service import main

from .app import METRICS, NEEDS_DB, load_settings, setup

if __name__ == "__main__":
    # no allocator bounds: they cost embed workers throughput (docs/deploy.md, "Memory per process")
    raise SystemExit(
        main("embed", setup, needs_db=NEEDS_DB, load_settings=load_settings, metrics=METRICS, bound_heap=False)
    )
