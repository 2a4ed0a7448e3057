"""The gateway as its own NATS user (the narrowed JetStream permissions of shared/nats_auth.py):
it reads API keys from ``MEM_API_KEYS``, keeps per-key limits in ``MEM_KEY_LIMITS`` and
publishes chat events, and still may not read the chat events' stream or touch the API keys."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from memoryd.connect import connect
from memoryd.subjects import EVENTS_STREAM
from shared.api_keys import KeyLimits, KeyStore, new_key, open_bucket
from shared.settings.env import NatsConfig
from tests.support.auth import AuthBus, run_as_roles, start_auth_bus

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthBus]:
    auth = start_auth_bus(Path(tmp_path_factory.mktemp("gateway-user")))
    try:
        yield auth
    finally:
        auth.server.stop()


@pytest.fixture(scope="module")
async def gateway_url(bus: AuthBus, pg_dsn: str) -> AsyncIterator[str]:
    extra = {"MEMORYD_GATEWAY_PORT": "0", "MEMORYD_GATEWAY_KEY_CACHE_S": "0"}
    async with run_as_roles(["ingest", "gateway"], bus, pg_dsn, extra) as contexts:
        yield str(contexts["gateway"].ready_fields["http"])


async def test_the_gateway_user_keeps_key_limits_and_publishes_events(bus: AuthBus, gateway_url: str) -> None:
    operator = await bus.connect_as("operator")
    try:
        keys = KeyStore(await open_bucket(operator.jetstream()))
        owner = f"gw-{uuid.uuid4().hex[:6]}"
        token, record = new_key("owner", owner, limits=KeyLimits(events_per_second=1))
        await keys.put(record)
        js = operator.jetstream()
        before = (await js.stream_info(EVENTS_STREAM)).state.last_seq
        if 1 - time.time() % 1 < 0.5:  # two posts inside one second's window
            await asyncio.sleep(1 - time.time() % 1 + 0.05)
        async with httpx.AsyncClient(base_url=gateway_url, headers={"authorization": f"Bearer {token}"}) as http:
            body = {"messages": [{"role": "user", "content": "I prefer green tea."}]}
            replies = [await http.post("/v1/events", json=body) for _ in range(2)]
            created = await http.post("/v1/memories", json={"content": "I keep my keys in the hall."})
        assert [r.status_code for r in replies] == [202, 429], [r.text for r in replies]
        assert replies[1].json()["err_code"] == "rate_limited"
        assert (await js.stream_info(EVENTS_STREAM)).state.last_seq == before + 1
        assert created.status_code == 200, created.text
        assert created.json()["memory"]["owner"] == owner
    finally:
        await operator.close()


async def test_the_gateway_user_cannot_read_events_or_forge_keys(bus: AuthBus, gateway_url: str) -> None:
    violations: list[str] = []

    async def on_error(exc: Exception) -> None:
        violations.append(str(exc).lower())

    cfg = NatsConfig(url=bus.url, user="gateway", password=bus.creds.passwords["gateway"])
    gateway = await connect(cfg, "test-gateway-user", reconnect_forever=False, on_error=on_error)
    try:
        for subject in (
            f"$JS.API.STREAM.MSG.GET.{EVENTS_STREAM}",
            f"$JS.API.STREAM.DELETE.{EVENTS_STREAM}",
            "$KV.MEM_API_KEYS.forged",
        ):
            await gateway.publish(subject, b"{}")
        await gateway.flush()
        await asyncio.sleep(0.3)
    finally:
        await gateway.close()
    for subject in ("$js.api.stream.msg.get.mem_events", "$js.api.stream.delete.mem_events", "$kv.mem_api_keys.forged"):
        assert any(f'publish to "{subject}"' in v for v in violations), (subject, violations)
