"""memoryd services: one sub-package per service; they talk only over NATS."""

from shared.lean_imports import preload

# before any service module: nats-py and structlog without the optional packages a service
# does not use through them (aiohttp, rich), httpx without its command line (shared.lean_imports)
preload()
