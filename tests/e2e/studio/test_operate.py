"""Memory Studio, the operating tabs, in Chromium: simulate a search (tiers and scores), inject,
reindex to 100 %, a sleep run to its receipt, the activity chart, and the error banners (wrong
key, a stopped service, a validation error naming the field)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg
from playwright.async_api import Page, expect

from .conftest import Stack
from .helpers import rest, sign_in
from .test_memories import seed


async def test_playground_simulate_and_inject(page: Page, stack: Stack, shots: Path) -> None:
    await seed(stack, "alice")
    await sign_in(page, stack, "alice", tab="playground")
    await page.get_by_label("Query").fill("which database for the memory store")
    await page.get_by_label("Strategy").select_option("hybrid")
    await page.get_by_role("button", name="Simulate").click()
    ranking = page.locator("#pg-ranking")
    await expect(ranking.locator("tbody tr").first).to_contain_text("PostgreSQL with pgvector")
    first = ranking.locator("tbody tr").first
    await expect(first.get_by_role("meter", name="score", exact=True)).to_be_visible()
    await expect(first.get_by_role("meter", name="keyword rank", exact=True)).to_be_visible()
    await expect(page.locator("#pg-tiers")).to_contain_text("served")
    await expect(page.locator("#pg-tiers")).to_contain_text("keyword")
    await page.screenshot(path=str(shots / "playground.png"), full_page=True)

    await page.get_by_role("button", name="Inject").click()
    injection = page.locator("#pg-injection")
    await expect(injection).to_contain_text("Memory context")
    await expect(injection).to_contain_text("PostgreSQL with pgvector")


async def test_validation_error_names_the_field(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "alice", tab="playground")
    await page.get_by_label("Token budget").fill("-5")
    await page.get_by_role("button", name="Simulate").click()
    await expect(page.locator("#banner")).to_contain_text("Invalid max_tokens")
    await expect(page.get_by_label("Token budget")).to_have_attribute("aria-invalid", "true")


async def test_engine_reindex_reaches_100(page: Page, stack: Stack, pg_dsn: str, shots: Path) -> None:
    await seed(stack, "alice")
    conn = await asyncpg.connect(pg_dsn)
    try:  # the owner's vectors are lost: every memory of alice waits for re-embedding
        lost = await conn.execute("DELETE FROM memory_embeddings WHERE owner = 'alice'")
        await conn.execute("UPDATE memories SET needs_reindex = true WHERE owner = 'alice'")
    finally:
        await conn.close()
    assert int(lost.split()[-1]) > 0

    await sign_in(page, stack, "operator", owner="alice", tab="engine")
    await expect(page.locator("#engine-chips")).to_contain_text("Keyword")
    await expect(page.locator("#engine-chips")).to_contain_text("Store pgvector")
    await expect(page.locator("#reindex-pending")).to_contain_text("wait for (re)embedding")
    await page.get_by_role("button", name="Reindex now").click()
    await expect(page.locator("#reindex-label")).to_contain_text("100 %", timeout=60_000)
    await expect(page.locator("#reindex-progress")).to_have_attribute("value", "100")
    await expect(page.locator("#settings-form")).to_be_visible()
    await page.screenshot(path=str(shots / "engine.png"), full_page=True)
    status, progress = await rest(stack, "operator", "GET", "/v1/reindex?owner=alice")
    assert status == 200 and progress["pending"] == 0


async def test_settings_validation_from_the_api(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "operator", tab="engine")
    form = page.locator("#settings-form")
    numeric = form.locator("input[type=number]").first
    name = await numeric.get_attribute("name")
    await numeric.fill("-999999")
    await form.get_by_role("button", name="Save globally").click()
    await expect(page.locator("#banner")).to_contain_text(f"Invalid {name}")


async def consolidated(stack: Stack, pg_dsn: str) -> dict[str, str]:
    """What a consolidation run leaves for one owner (as the sleep phases write it): a merge, the
    memory it archived, and a pattern with its evidence."""
    made = {}
    for name, body in (
        ("kept", {"content": "User drinks oat-milk flat whites every morning"}),
        ("gone", {"content": "User likes flat whites with oat milk"}),
        ("pattern", {"content": "Coffee ritual: a flat white before standup", "memory_type": "pattern"}),
    ):
        status, res = await rest(stack, "alice", "POST", "/v1/memories", body)
        assert status == 200, res
        made[name] = res["memory"]["id"]
    conn = await asyncpg.connect(pg_dsn)
    try:
        run = "5f0c6a4e-0000-4000-8000-000000000001"
        await conn.execute(
            "UPDATE memories SET metadata = $2::jsonb WHERE id = $1::uuid",
            made["kept"],
            json.dumps({"mergedFrom": made["gone"], "sleepRunId": run}),
        )
        await conn.execute(
            "UPDATE memories SET state = 'archived', metadata = $2::jsonb WHERE id = $1::uuid",
            made["gone"],
            json.dumps({"mergedInto": made["kept"], "archivedByRun": run}),
        )
        await conn.execute(
            "UPDATE memories SET source = 'sleep', metadata = $2::jsonb WHERE id = $1::uuid",
            made["pattern"],
            json.dumps({"title": "Morning coffee ritual", "evidence": [made["kept"]], "sleepRunId": run}),
        )
    finally:
        await conn.close()
    return made


async def test_sleep_run_to_its_receipt(page: Page, stack: Stack, pg_dsn: str, shots: Path) -> None:
    await seed(stack, "alice")
    made = await consolidated(stack, pg_dsn)
    await sign_in(page, stack, "operator", owner="alice", tab="sleep")
    await page.get_by_role("button", name="Run sleep now").click()
    watch = page.locator("#sleep-watch")
    await expect(watch.locator(".receipt-text")).to_contain_text("memoryd:run:", timeout=90_000)
    receipt = await watch.locator(".receipt-text").inner_text()
    status, runs = await rest(stack, "operator", "GET", "/v1/sleep/status?owner=alice")
    assert status == 200 and receipt in [r.get("receipt") for r in runs["runs"]]
    await expect(page.locator("#sleep-runs details.run").first).to_be_visible()
    await expect(page.locator("#ledger-merges")).to_contain_text("oat-milk flat whites")
    await expect(page.locator("#ledger-archives")).to_contain_text("merged into")
    patterns = page.locator("#ledger-patterns")
    await expect(patterns).to_contain_text("Morning coffee ritual")
    await page.screenshot(path=str(shots / "sleep.png"), full_page=True)
    await patterns.get_by_role("link", name=made["kept"][:8]).click()  # the pattern's evidence
    await expect(page.locator("#mem-one")).to_contain_text("oat-milk flat whites")


async def test_owner_key_sees_runs_but_cannot_start_one(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "alice", tab="sleep")
    await expect(page.locator("#sleep-run")).to_be_hidden()
    await expect(page.locator("#sleep-runs")).to_be_visible()


async def test_activity_chart(page: Page, stack: Stack, shots: Path) -> None:
    await sign_in(page, stack, "operator", owner="alice", tab="activity")
    for i in range(4):  # traffic between the page's samples (every 3 s)
        for j in range(3 + 2 * i):
            turn = [{"role": "user", "content": f"I prefer green tea, round {i}.{j}"}]
            body = {"owner": "alice", "messages": turn, "session_id": "activity"}
            assert (await rest(stack, "operator", "POST", "/v1/events", body))[0] == 202
            if j % 2 == 0:  # fewer searches than events: two lines on the chart
                search = {"owner": "alice", "query": "tea"}
                assert (await rest(stack, "operator", "POST", "/v1/search", search))[0] == 200
        await asyncio.sleep(3.1)
    charts = page.locator("#activity-charts")
    await expect(charts.locator("svg.chart")).to_have_count(2, timeout=20_000)
    await expect(charts).to_contain_text("searches/min")
    await expect(charts.locator("svg.chart polyline").first).to_be_visible()
    # 3 + 5 + 7 + 9 published here; the page's next samples (every 3 s) see the last ones ingested
    deadline = asyncio.get_running_loop().time() + 20
    while True:
        note = await page.locator("#activity-note").inner_text()
        events = int(note.split("Since start: ")[1].split(" chat events")[0])
        if events >= 24 or asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.5)
    assert events >= 24, note
    await page.screenshot(path=str(shots / "activity.png"), full_page=True)


async def test_wrong_key_shows_its_banner(page: Page, stack: Stack) -> None:
    await page.goto(f"{stack.url}/studio/")
    await page.get_by_label("API key").fill("mk_000000000000_" + "0" * 48)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#banner")).to_contain_text("The API key was not accepted")
    await expect(page.locator("#studio")).to_be_hidden()


async def test_unreachable_gateway_shows_its_banner(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "alice", tab="playground")
    await page.route("**/v1/**", lambda route: route.abort("connectionrefused"))
    await page.get_by_label("Query").fill("dark mode")
    await page.get_by_role("button", name="Simulate").click()
    await expect(page.locator("#banner")).to_contain_text("Cannot reach the gateway")
    await expect(page.locator("#studio")).to_be_visible()  # not signed out: the key was not refused


async def test_stopped_service_shows_its_banner(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "alice", tab="playground")
    await stack.stop_retrieve()
    try:
        await page.get_by_label("Query").fill("dark mode")
        await page.get_by_role("button", name="Simulate").click()
        await expect(page.locator("#banner")).to_contain_text("a service behind it is down", timeout=30_000)
    finally:
        await stack.start_retrieve()
    await page.get_by_role("button", name="Simulate").click()
    await expect(page.locator("#pg-tiers")).to_contain_text("served", timeout=30_000)  # back once it is
