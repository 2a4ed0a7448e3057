"""Memory Studio, Engine tab, in Chromium: an embedding-signature change in progress is shown on
top (n of N, what search serves meanwhile) and is gone once the reindex completes.

The change (``vectorQuantization=half``) is held halfway by reindexing one owner only, in a
module of its own: its stack and database are not shared with the other Studio tests. The
degraded states (keyword-only search, embed service silent) are read from ``reindexNotes``, the
tab's own pure function, in the same browser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Page, expect

from tests.support.eventually import eventually

from .conftest import Stack
from .helpers import rest, sign_in

NOTES = {
    "alice": ["Alice keeps bees on the roof", "Alice plays the cello on Fridays", "Alice's car is a green Volvo"],
    "bob": ["Bob runs marathons in spring", "Bob's daughter studies geology"],
}


async def _status(stack: Stack) -> dict[str, Any]:
    code, status = await rest(stack, "operator", "GET", "/v1/engine/status")
    assert code == 200, status
    return status


async def _pending(stack: Stack, owner: str | None = None) -> int:
    code, got = await rest(stack, "operator", "GET", "/v1/reindex" + (f"?owner={owner}" if owner else ""))
    assert code == 200, got
    return int(got["pending"])


async def test_engine_tab_shows_the_reindex_until_it_completes(page: Page, stack: Stack, shots: Path) -> None:
    for owner, contents in NOTES.items():
        for content in contents:
            code, made = await rest(stack, owner, "POST", "/v1/memories", {"content": content})
            assert code == 200, made
    total = sum(map(len, NOTES.values()))

    async def embedded() -> bool:
        return await _pending(stack) == 0

    await eventually(embedded, what="every memory embedded", timeout=60)
    old = (await _status(stack))["embedding"]["stores"]["pgvector"]["signature"]
    new = f"{old}:half"

    code, put = await rest(stack, "operator", "PUT", "/v1/settings", {"values": {"vectorQuantization": "half"}})
    assert code == 200, put

    async def change_pending() -> bool:
        return bool((await _status(stack))["embedding"]["stores"]["pgvector"]["pending_signature"] == new)

    await eventually(change_pending, what="the change to halfvec pending", timeout=30)

    code, queued = await rest(stack, "operator", "POST", "/v1/reindex", {"owner": "alice"})
    assert code == 200 and queued["queued"] == len(NOTES["alice"]), queued  # bob's memories hold it halfway

    async def alice_done() -> bool:
        return await _pending(stack, "alice") == 0

    await eventually(alice_done, what="alice's memories reindexed", timeout=60)
    assert await _pending(stack) == len(NOTES["bob"])
    state = (await _status(stack))["vector_stores"]["pgvector"]["reindex"]
    done = len(NOTES["alice"])
    assert {k: state[k] for k in ("from", "to", "done", "total", "searching")} == {
        "from": old,
        "to": new,
        "done": done,
        "total": total,
        "searching": "old",
    }

    await sign_in(page, stack, "operator", tab="engine")
    card = page.locator("#engine-reindex-state")
    await expect(card).to_be_visible()
    store = card.locator("[data-store='pgvector']")
    await expect(store.locator(".reindex-progress-text")).to_have_text(
        f"Store pgvector: {done} of {total} memories embedded with {new} ({100 * done // total} %)"
    )
    await expect(store.locator(".reindex-serving")).to_have_text(
        f"Search uses the old vectors ({old}) until the reindex completes."
    )
    bar = store.get_by_role("progressbar", name="Reindex of store pgvector")
    await expect(bar).to_have_attribute("value", str(done))
    await expect(bar).to_have_attribute("max", str(total))
    await expect(card).to_have_attribute("data-level", "info")
    box = await card.bounding_box()
    chips = await page.locator("#engine-chips").bounding_box()
    assert box is not None and chips is not None and box["y"] < chips["y"]  # on top of the tab
    await page.screenshot(path=str(shots / "engine-reindex.png"), full_page=False)

    code, queued = await rest(stack, "operator", "POST", "/v1/reindex", {})
    assert code == 200, queued
    await expect(card).to_be_hidden(timeout=45_000)
    assert await card.locator(".reindex-store").count() == 0
    status = await _status(stack)
    assert status["embedding"]["stores"]["pgvector"] == {"signature": new, "dim": 384, "pending_signature": None}
    assert "reindex" not in status["vector_stores"]["pgvector"]


async def test_degraded_states_are_said_plainly(page: Page, stack: Stack) -> None:
    await sign_in(page, stack, "operator", tab="engine")
    stores = {
        "pgvector": {"reindex": {"from": "a:m:384", "to": "b:n:768", "done": 2, "total": 8, "searching": "none"}},
        "qdrant": {"reindex": {"from": None, "to": "b:n:768", "done": 0, "total": 8, "searching": "none"}},
        "other": {"reindex": {"from": "a:m:384", "to": "b:n:768", "done": 9, "total": 8, "searching": "unknown"}},
        "idle": {"healthy": True},
    }
    notes = await page.evaluate(
        "async (stores) => (await import('./js/reindex_state.js')).reindexNotes(stores)", stores
    )
    assert [(n["store"], n["level"], n["percent"], n["progress"]) for n in notes] == [
        ("pgvector", "degraded", 25, "2 of 8 memories embedded with b:n:768"),
        ("qdrant", "info", 0, "0 of 8 memories embedded with b:n:768"),
        ("other", "degraded", 100, "9 of 8 memories embedded with b:n:768"),
    ]
    assert notes[0]["text"].startswith("Degraded: keyword-only search.")
    assert notes[1]["text"] == "This store is being filled: it is searched once the reindex completes."
    assert notes[2]["text"].startswith("Degraded: the embed service did not answer")
