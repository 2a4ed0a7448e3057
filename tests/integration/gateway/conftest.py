"""One stack per test module: NATS, every service in-process (the gateway on a free port), the
scripted upstream LLM, and three API keys (owners ``alice-<n>``/``bob-<n>`` and an operator)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from nats.aio.client import Client

from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from shared.api_keys import KeyStore, new_key, open_bucket
from shared.service_names import SERVICES
from shared.settings.env import NatsConfig
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

#: The gateway's own upstream key (``MEMORYD_GATEWAY_UPSTREAM_API_KEY``): only its upstream may see it.
GATEWAY_LLM_KEY = "sk-gateway-only-0123456789"
#: A connection that has not sent a request's headers by then is closed.
HEADER_TIMEOUT_S = 3.0


@dataclass
class Stack:
    url: str
    metrics_url: str
    nats_url: str
    llm: FakeLlm
    nc: Client
    keys: KeyStore
    alice: str
    bob: str
    alice_key: str
    bob_key: str
    operator_key: str

    def client(self, key: str | None, **kw: object) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30.0, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
async def stack(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    nats = EmbeddedNats(Path(tmp_path_factory.mktemp("gw")) / "nats")
    nats.start()
    saved = dict(os.environ)
    try:
        async with FakeLlm() as llm:
            os.environ |= {
                "MEMORYD_GATEWAY_PORT": "0",
                "MEMORYD_GATEWAY_UPSTREAM_URL": llm.base_url,
                "MEMORYD_GATEWAY_KEY_CACHE_S": "0",
                "MEMORYD_GATEWAY_UPSTREAM_API_KEY": GATEWAY_LLM_KEY,
                "MEMORYD_GATEWAY_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
            }
            config = service_config(nats.url, pg_dsn)
            async with run_services(SERVICES, config, timeout=60) as contexts:
                nc = await connect(NatsConfig(url=nats.url), "gateway-tests")
                keys = KeyStore(await open_bucket(nc.jetstream()))
                tag = uuid.uuid4().hex[:6]
                alice, bob = f"alice-{tag}", f"bob-{tag}"
                tokens = {}
                for name, role, owner in (("alice", "owner", alice), ("bob", "owner", bob), ("op", "operator", None)):
                    token, record = new_key(role, owner, name=name)  # type: ignore[arg-type]
                    await keys.put(record)
                    tokens[name] = token
                yield Stack(
                    url=contexts["gateway"].ready_fields["http"],
                    metrics_url=f"http://127.0.0.1:{contexts['gateway'].metrics_port}/metrics",
                    nats_url=nats.url,
                    llm=llm,
                    nc=nc,
                    keys=keys,
                    alice=alice,
                    bob=bob,
                    alice_key=tokens["alice"],
                    bob_key=tokens["bob"],
                    operator_key=tokens["op"],
                )
                await nc.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        nats.stop()
