"""``GET /v1/whoami``, ``GET /v1/activity``, ``GET /v1/activity/history`` and
``GET /v1/embedding/models``: what the Studio needs beyond the memory API.

``activity`` reads counters the services already keep, over NATS only: the ``MEM_EVENTS``
stream's last sequence (chat events accepted), the retrieve replicas' ``$SRV.STATS`` request
counts (searches), and each durable consumer's pending messages (queue lag). A source that
does not answer is left out and named in ``errors``; the rest is still returned. The history
is what ``history.keep`` gathered from the same reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from memoryd.schemas.ops import SettingsGetRequest, SettingsGetResult
from memoryd.subjects import (
    EMBED_CONSUMER,
    EVENTS_STREAM,
    EXTRACT_CONSUMER,
    INGEST_CONSUMER,
    JOBS_STREAM,
    RPC_PREFIX,
    SLEEP_CONSUMER,
    SLEEP_STREAM,
)

from ..context import Gateway
from ..handlers.common import Endpoint, authenticate, guarded, json_response
from ..logic.auth import require_operator
from .embedding import models_of
from .history import History
from .schemas import ActivitySample, WhoAmI

CONSUMERS = (
    (EVENTS_STREAM, INGEST_CONSUMER),
    (JOBS_STREAM, EXTRACT_CONSUMER),
    (JOBS_STREAM, EMBED_CONSUMER),
    (SLEEP_STREAM, SLEEP_CONSUMER),
)
SEARCH_SUBJECTS = (f"{RPC_PREFIX}.retrieve", f"{RPC_PREFIX}.inject")
STATS_WAIT_S = 0.25  # replies of every retrieve replica arrive within this on one network


def whoami_endpoint(gw: Gateway) -> Endpoint:
    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        return json_response(WhoAmI(key_id=key.id, role=key.role, owner=key.owner, name=key.name))

    return endpoint


def activity_endpoint(gw: Gateway) -> Endpoint:
    @guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        require_operator(key.role, "GET /v1/activity")
        return json_response(await sample(gw))

    return endpoint


def embedding_models_endpoint(gw: Gateway) -> Endpoint:
    @guarded
    async def endpoint(request: Request) -> Response:
        await authenticate(gw, request)  # any key: the engine is the same for every owner
        got: SettingsGetResult = await gw.call("settings.get", SettingsGetRequest())
        return json_response(models_of(got.settings))

    return endpoint


def history_endpoint(history: History) -> Callable[[Gateway], Endpoint]:
    def factory(gw: Gateway) -> Endpoint:
        @guarded
        async def endpoint(request: Request) -> Response:
            key = await authenticate(gw, request)
            require_operator(key.role, "GET /v1/activity/history")
            return json_response(history.read())

        return endpoint

    return factory


async def sample(gw: Gateway) -> ActivitySample:
    """The services' counters now (a source that does not answer is named in ``errors``)."""
    errors: dict[str, str] = {}
    events, searches, lag = await asyncio.gather(_events(gw, errors), _searches(gw, errors), _lag(gw, errors))
    return ActivitySample(at=datetime.now(UTC), events=events, searches=searches, lag=lag, errors=errors)


async def _events(gw: Gateway, errors: dict[str, str]) -> int:
    try:
        info = await asyncio.wait_for(gw.js.stream_info(EVENTS_STREAM), gw.config.rpc_timeout_s)
    except Exception as exc:
        errors["events"] = f"{type(exc).__name__}: {exc}"
        return 0
    return int(info.state.last_seq or 0)


def searches_in(stats: dict[str, Any]) -> int:
    """Requests served by the retrieve and inject endpoints in one ``$SRV.STATS`` reply."""
    return sum(
        int(ep.get("num_requests") or 0)
        for ep in stats.get("endpoints") or []
        if any(str(ep.get("subject", "")).startswith(s) for s in SEARCH_SUBJECTS)
    )


async def _searches(gw: Gateway, errors: dict[str, str]) -> int:
    """The sum over every retrieve replica (each answers ``$SRV.STATS.memoryd-retrieve``)."""
    inbox = gw.nc.new_inbox()
    replies: list[dict[str, Any]] = []
    sub = await gw.nc.subscribe(inbox)
    try:
        await gw.nc.publish("$SRV.STATS.memoryd-retrieve", b"", reply=inbox)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STATS_WAIT_S
        while (left := deadline - loop.time()) > 0:
            try:
                msg = await sub.next_msg(timeout=left)
            except TimeoutError:
                break
            with contextlib.suppress(ValueError):
                replies.append(json.loads(msg.data))
    except Exception as exc:
        errors["searches"] = f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    if not replies and "searches" not in errors:
        errors["searches"] = "no retrieve replica answered $SRV.STATS"
    return sum(searches_in(r) for r in replies)


async def _lag(gw: Gateway, errors: dict[str, str]) -> dict[str, int]:
    async def one(stream: str, name: str) -> tuple[str, Any]:
        try:
            return name, await asyncio.wait_for(gw.js.consumer_info(stream, name), 2.0)
        except Exception as exc:
            return name, exc

    lag: dict[str, int] = {}
    for name, info in await asyncio.gather(*(one(s, n) for s, n in CONSUMERS)):
        if isinstance(info, Exception):
            errors[f"lag.{name}"] = f"{type(info).__name__}: {info}"
            continue
        lag[name] = int(info.num_pending or 0)
        lag[f"{name}_ack_pending"] = int(info.num_ack_pending or 0)
    return lag
