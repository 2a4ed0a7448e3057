"""`python -m services.gateway` / `memoryd serve gateway`: settings from MEMORYD_* variables, then run."""

from shared.service import main

from .app import METRICS, NEEDS_DB, load_settings, setup

if __name__ == "__main__":
    import asyncio

    import uvloop  # less CPU per request in the event loop and socket I/O

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    raise SystemExit(main("gateway", setup, needs_db=NEEDS_DB, load_settings=load_settings, metrics=METRICS))
