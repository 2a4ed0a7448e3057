"""Connect to NATS with reconnect/backoff and logging; fail fast when nothing answers.

Used by the client and by every service: ``connect`` takes anything with the four fields of
``NatsTarget`` (the services pass their ``NatsConfig``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import structlog
from nats.aio.client import Client

from memoryd.errors import ConfigError
from memoryd.redact import redact_text
from memoryd.subjects import inbox_prefix as user_inbox

log = structlog.get_logger(__name__)


class NatsTarget(Protocol):
    """Where and as whom to connect."""

    @property
    def url(self) -> str: ...
    @property
    def user(self) -> str | None: ...
    @property
    def password(self) -> str | None: ...
    @property
    def connect_timeout_s(self) -> float: ...


@dataclass(frozen=True, kw_only=True)
class NatsEndpoint:
    """A ``NatsTarget`` for a client or a command line (a service passes its ``NatsConfig``)."""

    url: str
    user: str | None = None
    password: str | None = None
    connect_timeout_s: float = 3.0


def url_user(url: str) -> str | None:
    """The user named in the first server URL that names one (``nats://user:pw@host``)."""
    for server in url.split(","):
        with contextlib.suppress(ValueError):
            user = urlsplit(server.strip()).username
            if user:
                return unquote(user)
    return None


async def connect(
    cfg: NatsTarget,
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


def websocket_transport(url: str) -> None:
    """Give nats-py its WebSocket transport back when ``url`` (comma-separated servers) names a
    ``ws://`` or ``wss://`` server (a service imports nats-py without it, ``shared.lean_imports``);
    ImportError when aiohttp is not installed."""
    if not any(server.strip().lower().startswith(("ws://", "wss://")) for server in url.split(",")):
        return
    transport = importlib.import_module("nats.aio.transport")
    if getattr(transport, "aiohttp", None) is None:
        setattr(transport, "aiohttp", importlib.import_module("aiohttp"))  # noqa: B010 (a module global)
