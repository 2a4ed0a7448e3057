"""memoryd down never breaks the chat call: with only the gateway running (no retrieve, no ingest),
the proxy forwards without memory, says so in ``x-memory-status``, and the answer is unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import openai
import pytest

from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from shared.api_keys import KeyStore, new_key, open_bucket
from shared.settings.env import NatsConfig
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

pytestmark = [pytest.mark.integration]


async def test_chat_goes_through_without_memory_when_memoryd_is_down(tmp_path: Path) -> None:
    nats = EmbeddedNats(tmp_path / "nats")
    nats.start()
    saved = dict(os.environ)
    try:
        async with FakeLlm() as llm:
            os.environ |= {"MEMORYD_GATEWAY_PORT": "0", "MEMORYD_GATEWAY_UPSTREAM_URL": llm.base_url}
            config = service_config(nats.url, "postgresql://unused@127.0.0.1:1/none")
            async with run_services(["gateway"], config) as contexts:
                nc = await connect(NatsConfig(url=nats.url), "degraded-test")
                token, record = new_key("owner", "dave")
                await KeyStore(await open_bucket(nc.jetstream())).put(record)
                await nc.close()
                llm.reply_text("Still here.")
                sdk = openai.AsyncOpenAI(base_url=f"{contexts['gateway'].ready_fields['http']}/v1", api_key=token)
                raw = await sdk.chat.completions.with_raw_response.create(
                    model="fake", messages=[{"role": "user", "content": "Are you there?"}]
                )
                assert raw.parse().choices[0].message.content == "Still here."
                assert raw.headers["x-memory-status"] == "unavailable"
                assert llm.requests[-1]["messages"] == [{"role": "user", "content": "Are you there?"}]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        nats.stop()
