"""Memory Studio, the conflict review queue in Chromium: a freeze-mode sleep run (no LLM in this
stack) parks a near-duplicate pair, the Sleep tab shows the pending count as a badge and the pair
with its two memories, and keeping one side answers with a receipt the REST API also lists."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import asyncpg
from playwright.async_api import Page, expect

from tests.support.eventually import eventually

from .conftest import Stack
from .helpers import rest, sign_in

OWNER = "carol"


async def embedded(pg_dsn: str, ids: list[str]) -> bool:
    conn = await asyncpg.connect(pg_dsn)
    try:
        found = await conn.fetchval(
            "SELECT count(DISTINCT memory_id) FROM memory_embeddings WHERE memory_id = ANY($1::uuid[])",
            [uuid.UUID(i) for i in ids],
        )
    finally:
        await conn.close()
    return bool(found == len(ids))


async def test_parked_conflicts_are_counted_listed_and_resolved(
    page: Page, stack: Stack, pg_dsn: str, shots: Path
) -> None:
    freeze = {"conflictFreezeEnabled": True, "sleepConflictStrictness": "aggressive"}
    status, res = await rest(stack, "operator", "PUT", "/v1/settings", {"owner": OWNER, "values": freeze})
    assert status == 200, res
    made = {}
    for name, text in (("friday", "The team deploys to production on Fridays"),
                       ("thursday", "The team deploys to production on Thursdays")):  # fmt: skip
        status, res = await rest(stack, "operator", "POST", "/v1/memories", {"owner": OWNER, "content": text})
        assert status == 200, res
        made[name] = res["memory"]["id"]
    await eventually(lambda: embedded(pg_dsn, list(made.values())), "both memories embedded")
    body = {"owner": OWNER, "wait": True, "timeout_s": 60}
    status, started = await rest(stack, "operator", "POST", "/v1/sleep/runs", body)
    assert status == 200 and started["run"]["status"] == "ok", started
    phase = started["run"]["phases"]["conflict_resolution"]
    assert phase["frozen"] >= 1 and "no LLM call" in phase["reason"], phase
    status, queue = await rest(stack, "operator", "GET", f"/v1/conflicts?owner={OWNER}")
    assert status == 200 and queue["pending"] >= 1, queue
    (entry,) = [i for i in queue["items"] if {i["a"]["id"], i["b"]["id"]} == set(made.values())]

    await sign_in(page, stack, "operator", owner=OWNER, tab="memories")
    badge = page.locator("#tab-sleep #conflicts-badge")
    await expect(badge).to_have_text(str(queue["pending"]))
    await page.get_by_role("tab", name=re.compile("^Sleep")).click()
    card = page.locator(f'[data-conflict="{entry["id"]}"]')
    await expect(card).to_contain_text("The team deploys to production on Fridays")
    await expect(card).to_contain_text("The team deploys to production on Thursdays")
    await expect(card).to_contain_text("conflictFreezeEnabled")
    await expect(page.locator("#conflict-count")).to_have_text(f"{queue['pending']} pending")
    await page.screenshot(path=str(shots / "conflicts.png"), full_page=True)

    await card.locator(f'[data-memory="{made["friday"]}"]').get_by_role("button", name=re.compile("^Keep")).click()
    receipt = page.locator("#conflict-receipt")
    await expect(receipt).to_contain_text("accept by studio")
    await expect(receipt).to_contain_text(f"kept {made['friday'][:8]}, archived {made['thursday'][:8]}")
    await expect(card).to_have_count(0)
    left = queue["pending"] - 1
    if left:
        await expect(badge).to_have_text(str(left))
    else:
        await expect(badge).to_be_hidden()

    status, done = await rest(stack, "operator", "GET", f"/v1/conflicts?owner={OWNER}&status=resolved")
    assert status == 200 and done["pending"] == left
    (stored,) = [i["receipt"] for i in done["items"] if i["id"] == entry["id"]]
    assert (stored["action"], stored["kept"], stored["archived"], stored["resolved_by"]) == (
        "accept", made["friday"], made["thursday"], "studio")  # fmt: skip
    status, gone = await rest(stack, "operator", "GET", f"/v1/memories/{made['thursday']}?owner={OWNER}")
    assert status == 200 and gone["memory"]["state"] == "archived"
    assert gone["memory"]["metadata"]["mergedInto"] == made["friday"]
