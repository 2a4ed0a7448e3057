"""Wiring of the extract service: endpoints and consumers on the shared lifecycle."""

from __future__ import annotations

from shared.service import ServiceContext

NEEDS_DB = True


async def setup(ctx: ServiceContext) -> None:
    """Register the extract service's endpoints and consumers (health comes from the runtime)."""
