"""Connect to NATS with reconnect/backoff and logging; fail fast when nothing answers."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from nats.aio.client import Client

from shared.settings.env import NatsConfig

from ..errors import ConfigError
from ..nats_auth import inbox_prefix
from ..observability.logging import get_logger

log = get_logger(__name__)


async def connect(cfg: NatsConfig, name: str, *, reconnect_forever: bool = True) -> Client:
    """A connected client, or ``ConfigError`` naming ``MEMORYD_NATS_URL``.

    After the first connection the client reconnects forever (2 s apart, jittered),
    buffering publishes meanwhile; disconnects and reconnects are logged.
    """

    async def on_error(exc: Exception) -> None:
        log.warning("nats.error", error=str(exc) or type(exc).__name__)

    async def on_disconnect() -> None:
        log.warning("nats.disconnected")

    async def on_reconnect() -> None:
        log.info("nats.reconnected", url=str(nc.connected_url.netloc if nc.connected_url else ""))

    opts: dict[str, Any] = {
        "servers": [u.strip() for u in cfg.url.split(",")],
        "name": name,
        "connect_timeout": cfg.connect_timeout_s,
        "allow_reconnect": True,
        "max_reconnect_attempts": -1 if reconnect_forever else 10,
        "reconnect_time_wait": 1,
        "error_cb": on_error,
        "disconnected_cb": on_disconnect,
        "reconnected_cb": on_reconnect,
    }
    if cfg.user:
        opts["user"] = cfg.user
        opts["password"] = cfg.password or ""
        opts["inbox_prefix"] = inbox_prefix(cfg.user)  # its permissions allow only this reply prefix
    nc = Client()
    try:
        await asyncio.wait_for(nc.connect(**opts), timeout=cfg.connect_timeout_s + 2)
    except Exception as exc:  # the client raises several unrelated types here
        with contextlib.suppress(Exception):
            await nc.close()
        raise ConfigError(
            "MEMORYD_NATS_URL", f"cannot connect to NATS at {cfg.url}: {exc or type(exc).__name__}"
        ) from exc
    return nc
