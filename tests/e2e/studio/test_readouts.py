"""Memory Studio's read-outs in Chromium: what memory costs per proxied call next to the settings
that make it (Engine tab), and the gateway's activity history that the Activity tab opens with.

The gateway samples activity every 0.5 s here (a minute by default), so a history builds up
within the test."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from playwright.async_api import Page, expect

from .conftest import Stack
from .helpers import rest, sign_in

HISTORY_S = 0.5


@pytest.fixture(scope="module", autouse=True)
def _fast_history() -> Iterator[None]:
    """Set before the module's stack starts (autouse fixtures of a scope come first)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MEMORYD_GATEWAY_ACTIVITY_HISTORY_S", str(HISTORY_S))
    yield
    mp.undo()


async def test_engine_settings_say_what_memory_costs(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "operator", tab="engine")
    cost = page.locator("#memory-cost")
    await expect(cost).to_contain_text("memory adds up to 2,000 prompt tokens per proxied call")
    form = page.locator("#settings-form")
    await expect(form.locator('[name="maxTokens"]')).to_have_attribute("aria-describedby", "memory-cost")
    await form.locator('[name="maxTokens"]').fill("500")
    await expect(cost).to_contain_text("memory adds up to 500 prompt tokens per proxied call")
    await form.locator('[name="enabled"]').uncheck()
    await expect(cost).to_have_text("Memory is off: the proxy adds no prompt tokens to proxied calls.")

    status, _ = await rest(stack, "operator", "PUT", "/v1/settings", {"owner": "bob", "values": {"maxTokens": 750}})
    assert status == 200
    owner_page = await page.context.new_page()
    await sign_in(owner_page, stack, "bob", tab="engine")
    await expect(owner_page.locator("#memory-cost")).to_contain_text(
        "memory adds up to 750 prompt tokens per proxied call"
    )
    await owner_page.close()


async def history(stack: Stack, at_least: int, events: int = 0) -> list[dict[str, object]]:
    """The gateway's history once it has ``at_least`` samples and its newest counts ``events``."""
    deadline = asyncio.get_running_loop().time() + 20
    while True:
        status, body = await rest(stack, "operator", "GET", "/v1/activity/history")
        assert status == 200 and body["interval_s"] == HISTORY_S, body
        samples: list[dict[str, object]] = body["samples"]
        if len(samples) >= at_least and int(samples[-1]["events"]) >= events:  # type: ignore[call-overload]
            return samples
        assert asyncio.get_running_loop().time() < deadline, body
        await asyncio.sleep(HISTORY_S)


async def test_the_activity_tab_opens_with_the_gateways_last_hour(page: Page, stack: Stack) -> None:
    before = await history(stack, 2)
    for i in range(3):
        body = {"owner": "alice", "messages": [{"role": "user", "content": f"I prefer oolong, take {i}"}]}
        assert (await rest(stack, "operator", "POST", "/v1/events", body))[0] == 202
    samples = await history(stack, 6, events=int(before[-1]["events"]) + 3)  # type: ignore[call-overload]
    times = [str(s["at"]) for s in samples]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert {"ingest", "extract", "embed", "sleep"} <= set(samples[-1]["lag"])  # type: ignore[arg-type]
    assert (await rest(stack, "alice", "GET", "/v1/activity/history"))[0] == 403

    await sign_in(page, stack, "operator", owner="alice", tab="activity")
    charts = page.locator("#activity-charts")
    await expect(charts.locator("svg.chart")).to_have_count(2, timeout=2_500)
    # the page itself has taken one or two samples by now (every 3 s, and on picking the owner):
    # the other points of the chart are the gateway's history
    rows = await charts.locator("figure").first.locator("table tr").count()
    assert rows >= 6, rows  # a header row and one row per rate between samples
    await expect(page.locator("#activity-note")).to_contain_text(
        f"The gateway keeps the last hour (a sample every {HISTORY_S} s)."
    )


async def test_engine_tab_lists_the_embedding_models(page: Page, stack: Stack) -> None:
    status, models = await rest(stack, "alice", "GET", "/v1/embedding/models")
    assert status == 200, models
    assert (models["sources"], models["source"], models["resolves_to"]) == (
        ["auto", "local", "remote"],
        "auto",
        "local",
    )
    assert models["models"][0] == {
        "source": "local", "model": "all-MiniLM-L6-v2", "dim": 384, "configured": True, "in_use": True,
    }  # fmt: skip
    remote = {"embeddingSource": "local", "embeddingUrl": "http://127.0.0.1:9/v1", "embeddingModel": "bge-m3",
              "embeddingDim": 1024}  # fmt: skip
    assert (await rest(stack, "operator", "PUT", "/v1/settings", {"values": remote}))[0] == 200
    try:
        await sign_in(page, stack, "alice", tab="engine")
        table = page.locator("#embedding-models")
        await expect(table.locator('tr[data-source="local"]')).to_contain_text("all-MiniLM-L6-v2384in use")
        await expect(table.locator('tr[data-source="remote"]')).to_contain_text("bge-m31024configured")
        await expect(page.locator("#embedding-sources")).to_contain_text("set to local")
    finally:
        back = {"embeddingSource": "auto", "embeddingUrl": None}  # no URL: auto is local again
        status, body = await rest(stack, "operator", "PUT", "/v1/settings", {"values": back})
        assert status == 200, body
