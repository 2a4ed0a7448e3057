"""Readiness per pod: the gateway stays ready while a backend service is down (REST answers 503
per request, the proxy goes ahead without memory); without a key ``/readyz`` tells nothing but
ready / not ready; the details need an operator key; ``/livez`` answers on both ports."""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request
from pathlib import Path

import httpx
import openai
import pytest

from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from shared.api_keys import KeyStore, new_key, open_bucket
from shared.settings.env import NatsConfig
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BACKEND = ("ingest", "extract", "embed", "sleep", "gateway")


def _livez(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_one_backend_down_leaves_the_gateway_ready_and_the_proxy_without_memory(
    pg_dsn: str, tmp_path: Path
) -> None:
    nats = EmbeddedNats(tmp_path / "nats")
    nats.start()
    saved = dict(os.environ)
    try:
        async with FakeLlm() as llm:
            os.environ |= {
                "MEMORYD_GATEWAY_PORT": "0",
                "MEMORYD_GATEWAY_UPSTREAM_URL": llm.base_url,
                "MEMORYD_GATEWAY_KEY_CACHE_S": "0",
            }
            config = service_config(nats.url, pg_dsn)
            async with run_services(BACKEND, config, timeout=60) as contexts:
                nc = await connect(NatsConfig(url=nats.url), "probe-tests")
                keys = KeyStore(await open_bucket(nc.jetstream()))
                owner_token, owner_record = new_key("owner", "erin")
                op_token, op_record = new_key("operator", None)
                await keys.put(owner_record)
                await keys.put(op_record)
                await nc.close()
                url = contexts["gateway"].ready_fields["http"]
                async with run_services(["retrieve"], config) as backend, httpx.AsyncClient(base_url=url) as http:
                    ready = await http.get("/readyz")
                    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
                    detailed = await http.get("/readyz", headers={"authorization": f"Bearer {op_token}"})
                    assert detailed.status_code == 200 and detailed.json()["status"] == "ready"
                    assert set(detailed.json()["memory"]["services"]) == {*BACKEND, "retrieve"} - {"gateway"}
                    assert detailed.json()["memory"]["services"]["retrieve"]["status"] == "ok"
                    owner_asks = await http.get("/readyz", headers={"authorization": f"Bearer {owner_token}"})
                    assert owner_asks.status_code == 403
                    assert owner_asks.headers["content-type"] == "application/problem+json"
                    assert (await http.get("/readyz", headers={"authorization": "Bearer mk_nope"})).status_code == 401
                    live = await http.get("/livez")
                    assert (live.status_code, live.json()) == (200, {"status": "ok"})
                    for ctx in (*contexts.values(), *backend.values()):  # every service's own port
                        assert _livez(ctx.metrics_port) == (200, "ok\n"), ctx.name

                # retrieve is stopped now
                async with httpx.AsyncClient(base_url=url) as http:
                    ready = await http.get("/readyz")
                    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
                    search = await http.post(
                        "/v1/search", json={"query": "anything"}, headers={"authorization": f"Bearer {owner_token}"}
                    )
                    assert search.status_code == 503, search.text
                    assert search.headers["content-type"] == "application/problem+json"
                    # the operator sees memory degraded (once the cached details expire); the pod stays ready
                    for _ in range(40):
                        detailed = await http.get("/readyz", headers={"authorization": f"Bearer {op_token}"})
                        assert detailed.status_code == 200 and detailed.json()["status"] == "ready"
                        if "retrieve" in detailed.json()["memory"].get("errors", {}):
                            break
                        await asyncio.sleep(0.25)
                    assert detailed.json()["memory"]["status"] == "degraded", detailed.json()
                    assert "retrieve" not in detailed.json()["memory"].get("services", {})
                llm.reply_text("Still answering.")
                sdk = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=owner_token, max_retries=0)
                raw = await sdk.chat.completions.with_raw_response.create(
                    model="fake", messages=[{"role": "user", "content": "Do you remember me?"}]
                )
                assert raw.parse().choices[0].message.content == "Still answering."
                assert raw.headers["x-memory-status"] == "unavailable"
                assert llm.requests[-1]["messages"] == [{"role": "user", "content": "Do you remember me?"}]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        nats.stop()
