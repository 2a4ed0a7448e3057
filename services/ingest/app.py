"""Wiring of the ingest service: endpoints and consumers on the shared lifecycle."""

from __future__ import annotations

from shared.service import ServiceContext

NEEDS_DB = True


async def setup(ctx: ServiceContext) -> None:
    """Register the ingest service's endpoints and consumers (health comes from the runtime)."""
