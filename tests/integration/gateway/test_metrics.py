"""The gateway's /metrics page: requests by route template and status, the proxy's upstream and
memory outcomes, after real HTTP calls (the proxy through the official ``openai`` SDK)."""

from __future__ import annotations

import asyncio
import re
import uuid

import openai
import pytest

from tests.support.metrics import scrape, value

from .conftest import Stack

pytestmark = [pytest.mark.integration]

DURATION = "memoryd_http_request_duration_seconds_count"


async def test_search_and_chat_show_up_by_route_template_and_status(stack: Stack) -> None:
    before = await asyncio.to_thread(scrape, stack.metrics_url)
    async with stack.client(stack.alice_key) as http:
        search = await http.post("/v1/search", json={"query": "anything at all"})
        assert search.status_code == 200, search.text
        missing = await http.get(f"/v1/memories/{uuid.uuid4()}")
        assert missing.status_code == 404, missing.text
        made_up = await http.request("PURGE", "/v1/search")
        assert made_up.status_code == 405
    stack.llm.reply_text("Metrics are fine.")
    sdk = openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=stack.alice_key, max_retries=0)
    raw = await sdk.chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": "How are the metrics?"}]
    )
    assert raw.parse().choices[0].message.content == "Metrics are fine."
    outcome = raw.headers["x-memory-status"]
    stack.llm.reply_text("Not remembered.")
    skipped = await openai.AsyncOpenAI(
        base_url=f"{stack.url}/v1", api_key=stack.alice_key, max_retries=0, default_headers={"x-memory-no-memory": "1"}
    ).chat.completions.with_raw_response.create(model="fake", messages=[{"role": "user", "content": "Off the record."}])
    assert skipped.headers["x-memory-status"] == "skipped"
    after = await asyncio.to_thread(scrape, stack.metrics_url)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta(DURATION, route="/v1/search", method="POST", status="200") == 1
    assert delta(DURATION, route="/v1/chat/completions", method="POST", status="200") == 2
    assert delta("memoryd_http_requests_total", route="/v1/search", method="POST", status="200") == 1
    # the template, never the raw path: no series names the id
    assert delta(DURATION, route="/v1/memories/{id}", method="GET", status="404") == 1
    assert not any(  # (static routes such as /v1/memories/clear are templates of their own)
        re.search(r"/v1/memories/[0-9a-f]{8}-", dict(labels).get("route", "")) for _name, labels in after
    )
    assert delta("memoryd_http_requests_total", route="/v1/search", method="other", status="405") == 1
    assert not any(dict(labels).get("method") == "PURGE" for _name, labels in after)  # bounded
    buckets = value(after, "memoryd_http_request_duration_seconds_bucket", route="/v1/search", le="+Inf")
    assert buckets == value(after, DURATION, route="/v1/search")
    assert delta("memoryd_proxy_upstream_duration_seconds_count", status="200") == 2
    assert delta("memoryd_proxy_memory_total", outcome=outcome) == 1
    assert delta("memoryd_proxy_memory_total", outcome="skipped") == 1
    assert value(after, "memoryd_build_info", service="gateway") == 1
    assert any(
        n == "memoryd_build_info" and dict(ls).get("service") == "gateway" and dict(ls)["version"] for n, ls in after
    )
