"""Connect to NATS with reconnect/backoff and logging; fail fast when nothing answers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from nats.aio.client import Client

from shared.settings.env import NatsConfig

from ..errors import ConfigError
from ..lean_imports import websocket_transport
from ..nats_auth import inbox_prefix as user_inbox
from ..observability.logging import get_logger, redact_text

log = get_logger(__name__)


def url_user(url: str) -> str | None:
    """The user named in the first server URL that names one (``nats://user:pw@host``)."""
    for server in url.split(","):
        with contextlib.suppress(ValueError):
            user = urlsplit(server.strip()).username
            if user:
                return unquote(user)
    return None


async def connect(
    cfg: NatsConfig,
    name: str,
    *,
    reconnect_forever: bool = True,
    on_error: Callable[[Exception], Awaitable[None]] | None = None,
    inbox_prefix: str | None = None,
) -> Client:
    """A connected client, or ``ConfigError`` naming ``MEMORYD_NATS_URL``.

    After the first connection the client reconnects forever (2 s apart, jittered),
    buffering publishes meanwhile; disconnects and reconnects are logged. The user (from
    ``cfg.user`` or the URL) gets its own inbox prefix ``_INBOX.<user>`` (or ``inbox_prefix``),
    the only reply subjects its permissions allow. ``on_error`` also sees every asynchronous error
    (permission violations among them).
    """

    refusals: list[Exception] = []  # what the server said while the first connect was retried

    async def error_cb(exc: Exception) -> None:
        if not nc.is_connected:
            refusals.append(exc)
        log.warning("nats.error", error=str(exc) or type(exc).__name__)
        if on_error is not None:
            await on_error(exc)

    async def on_disconnect() -> None:
        if not (nc.is_closed or nc.is_draining):  # a deliberate close() is not news
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
        "error_cb": error_cb,
        "disconnected_cb": on_disconnect,
        "reconnected_cb": on_reconnect,
    }
    if cfg.user:
        opts["user"] = cfg.user
        opts["password"] = cfg.password or ""
    user = cfg.user or url_user(cfg.url)
    if inbox_prefix or user:
        opts["inbox_prefix"] = inbox_prefix or user_inbox(user or "")  # the only reply prefix it may use
    try:
        websocket_transport(cfg.url)
    except ImportError:
        raise ConfigError("MEMORYD_NATS_URL", "a ws:// or wss:// NATS URL needs the aiohttp package") from None
    nc = Client()
    try:
        await asyncio.wait_for(nc.connect(**opts), timeout=cfg.connect_timeout_s + 2)
    except Exception as exc:  # the client raises several unrelated types here
        with contextlib.suppress(Exception):
            await nc.close()
        why = connect_failure(exc, refusals)
        raise ConfigError("MEMORYD_NATS_URL", f"cannot connect to NATS at {redact_text(cfg.url)}: {why}") from exc
    return nc


def connect_failure(exc: Exception, refusals: Sequence[Exception]) -> str:
    """Why the first connect failed, in words. nats-py retries an authorization violation until
    the attempts or the timeout run out and then raises something unrelated (a timeout, a reset
    connection), so a refusal the server sent meanwhile is the reason to report."""
    said = [redact_text(str(e)) or type(e).__name__ for e in (*refusals, exc)]
    refused = [s for s in said if "authorization" in s.lower()]
    if refused:
        return f"{refused[-1]}: the server wants a user and password (in the URL, or MEMORYD_NATS_CREDENTIALS)"
    if isinstance(exc, TimeoutError) and refusals:
        return said[-2]
    return said[-1]
