"""Memory Studio, Memories tab, in Chromium: add, find by search, edit, delete with its receipt,
import a file with a per-line error, an owner key that cannot open another owner's memory, and
the agent filter of the list and the playground."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
from playwright.async_api import Page, expect

from memoryd.codec import encode
from memoryd.schemas import MemoryRecord
from shared.db.memories import content_hash

from .conftest import PHONE, Stack, unique
from .helpers import rest, sign_in

SEED = (
    ("User prefers dark mode in every editor", "factual"),
    ("Deploys happen on Tuesdays after the standup", "procedural"),
    ("Decided to use PostgreSQL with pgvector for the memory store", "episodic"),
    ("Favourite programming language is TypeScript", "factual"),
)


async def seed(stack: Stack, owner: str, *, session: str = "onboarding") -> list[str]:
    ids = []
    for content, memory_type in SEED:
        status, made = await rest(
            stack,
            owner,
            "POST",
            "/v1/memories",
            {"content": content, "memory_type": memory_type, "session_id": session},
        )
        assert status == 200, made
        ids.append(made["memory"]["id"])
    return ids


async def test_add_search_edit_delete(page: Page, stack: Stack, shots: Path) -> None:
    await seed(stack, "alice")
    await sign_in(page, stack, "alice")
    await expect(page.locator("#who-owner")).to_have_text("owner alice")
    await expect(page.locator("#owner-pick")).to_be_hidden()  # an owner key cannot pick another owner

    word = unique("kiwi")
    await page.get_by_label("Content").fill(f"User's cat is called {word}")
    await page.get_by_label("Key (optional)").fill(f"pet:{word}")
    await page.locator("#add-type").select_option("factual")
    await page.get_by_label("Session (optional)").fill("chat-7")
    await page.get_by_role("button", name="Add memory").click()
    await expect(page.locator("#banner")).to_contain_text("Memory added")
    await expect(page.locator("#stat-total .stat-value")).to_have_text(str(len(SEED) + 1))

    await page.get_by_role("searchbox", name="Search").fill(word)  # live search, debounced
    item = page.locator("#mem-list article.mem")
    await expect(item).to_have_count(1)
    await expect(item).to_contain_text(f"User's cat is called {word}")
    await expect(page.locator("#mem-range")).to_have_text("1–1 of 1")

    await item.get_by_role("button", name="Edit").click()
    await item.get_by_label("Content").fill(f"User's cat is called {word} and is ginger")
    await item.get_by_role("button", name="Save").click()
    await expect(item.locator(".mem-content")).to_have_text(f"User's cat is called {word} and is ginger")
    memory_id = await item.get_attribute("data-id")
    status, got = await rest(stack, "alice", "GET", f"/v1/memories/{memory_id}")
    assert status == 200 and got["memory"]["content"].endswith("and is ginger")

    await page.get_by_role("button", name="Dismiss message").click()
    await expect(page.locator("#banner")).to_be_hidden()
    await page.get_by_role("searchbox", name="Search").fill("")
    await expect(page.locator("#mem-list article.mem")).to_have_count(len(SEED) + 1)
    await page.screenshot(path=str(shots / "memories.png"), full_page=True)

    await page.get_by_role("searchbox", name="Search").fill(word)
    await expect(item).to_have_count(1)
    await item.get_by_role("button", name="Delete").click()
    dialog = page.locator("dialog#confirm")
    await expect(dialog).to_be_visible()
    await dialog.get_by_role("button", name="Delete").click()
    receipt = page.locator("#mem-receipt")
    await expect(receipt).to_contain_text("Removed from: row 1")
    await expect(receipt).to_contain_text("pgvector vectors")
    await expect(page.locator("#mem-list")).to_contain_text("No memory matches these filters.")
    status, _ = await rest(stack, "alice", "GET", f"/v1/memories/{memory_id}")
    assert status == 404


async def test_filters_and_one_memory_by_url(page: Page, stack: Stack) -> None:
    ids = await seed(stack, "alice", session="filters")
    await sign_in(page, stack, "alice")
    await page.get_by_label("Session", exact=True).fill("filters")
    await page.locator("#mem-memory_type").select_option("procedural")
    await expect(page.locator("#mem-list article.mem")).to_have_count(1)
    await expect(page.locator("#mem-list")).to_contain_text("Deploys happen on Tuesdays")

    await page.goto(f"{stack.url}/studio/#/memories/{ids[2]}")
    one = page.locator("#mem-one")
    await expect(one).to_contain_text("Decided to use PostgreSQL")
    await expect(one).to_contain_text("episodic")


async def test_import_file_with_progress_and_line_errors(page: Page, stack: Stack, tmp_path: Path) -> None:
    tag = unique("imp")
    now = datetime.now(UTC)
    good = [
        encode(
            MemoryRecord(
                id=str(uuid.uuid4()),
                owner="someone-else",
                memory_type="factual",
                content=text,
                source="import",
                state="active",
                created_at=now,
                updated_at=now,
                content_hash=content_hash(text),
                key=f"{tag}:{i}",
            )
        ).decode()
        for i, text in enumerate(f"Imported fact number {i} about {tag}" for i in range(12))
    ]
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text("\n".join([good[0], "{not json", good[1]]) + "\n")
    good_file = tmp_path / "memories.jsonl"
    good_file.write_text("\n".join(good) + "\n")

    await sign_in(page, stack, "alice")
    await page.get_by_label("Import a JSON-lines file (as exported)").set_input_files(str(bad_file))
    await page.get_by_role("button", name="Import", exact=True).click()
    await expect(page.locator("#import-errors")).to_contain_text("line 2:")
    await expect(page.locator("#import-summary")).to_contain_text("1 line(s) refused")

    await page.get_by_label("Import a JSON-lines file (as exported)").set_input_files(str(good_file))
    await page.get_by_role("button", name="Import", exact=True).click()
    await expect(page.locator("#import-summary")).to_contain_text("Imported 12")
    await expect(page.locator("#import-progress")).to_have_attribute("value", "100")
    await page.get_by_role("searchbox", name="Search").fill(tag)
    await expect(page.locator("#mem-range")).to_have_text("1–12 of 12")

    async with page.expect_download() as download_info:
        await page.get_by_role("button", name="Export JSON lines").click()
    download = await download_info.value
    lines = (await asyncio.to_thread(Path(await download.path()).read_text)).splitlines()
    assert sum(tag in line for line in lines) == 12
    assert all(json.loads(line)["owner"] == "alice" for line in lines)


async def test_restore_and_compact_dry_run(page: Page, stack: Stack, pg_dsn: str) -> None:
    ids = await seed(stack, "alice", session="restore")
    conn = await asyncpg.connect(pg_dsn)
    try:  # what the sleep worker's demotion leaves: a summary, the original kept
        await conn.execute(
            "UPDATE memories SET state = 'summary', full_content = content, content = 'dark mode (summary)'"
            " WHERE id = $1::uuid",
            ids[0],
        )
        await conn.execute("UPDATE memories SET created_at = now() - interval '40 days' WHERE id = $1::uuid", ids[1])
    finally:
        await conn.close()
    await sign_in(page, stack, "alice")
    await page.locator("#mem-state").select_option("summary")
    item = page.locator(f"#mem-list article[data-id='{ids[0]}']")
    await expect(item).to_contain_text("dark mode (summary)")
    await item.get_by_role("button", name="Restore").click()
    await expect(page.locator("#banner")).to_contain_text("Restored")
    status, got = await rest(stack, "alice", "GET", f"/v1/memories/{ids[0]}")
    assert status == 200 and got["memory"]["state"] == "active"
    assert got["memory"]["content"] == "User prefers dark mode in every editor"

    await page.get_by_label("Compact memories older than (days)").fill("30")
    await page.get_by_role("button", name="Dry run").click()
    await expect(page.locator("#compact-candidates")).to_contain_text("candidates")
    await expect(page.locator("#compact-report")).to_contain_text(ids[1])
    await expect(page.locator("#compact-run")).to_have_count(0)  # owner keys: dry runs only


async def test_owner_key_cannot_open_another_owners_memory(page: Page, stack: Stack) -> None:
    secret = unique("bobsecret")
    status, made = await rest(stack, "bob", "POST", "/v1/memories", {"content": f"Bob's private note {secret}"})
    assert status == 200
    bob_id = made["memory"]["id"]

    await sign_in(page, stack, "alice")
    await page.goto(f"{stack.url}/studio/#/memories/{bob_id}")
    await expect(page.locator("#mem-missing")).to_contain_text(f"No memory {bob_id} for owner alice")
    await page.goto(f"{stack.url}/studio/?owner=bob#/memories/{bob_id}")
    await page.reload()
    await expect(page.locator("#mem-missing")).to_be_visible()
    await page.evaluate("sessionStorage.setItem('memoryd.studio.owner', 'bob')")  # what a tampered tab could hold
    await page.reload()
    await expect(page.locator("#mem-missing")).to_be_visible()
    await page.goto(f"{stack.url}/studio/#/memories")
    await page.get_by_role("searchbox", name="Search").fill(secret)
    await expect(page.locator("#mem-list")).to_contain_text("No memory matches these filters.")
    assert secret not in await page.content()

    # and the API behind it: the same id is 404 for alice, another owner named is 403
    assert (await rest(stack, "alice", "GET", f"/v1/memories/{bob_id}"))[0] == 404
    assert (await rest(stack, "alice", "GET", f"/v1/memories/{bob_id}?owner=bob"))[0] == 403


async def test_phone_width_and_keyboard(page: Page, stack: Stack, shots: Path) -> None:
    await seed(stack, "alice", session="phone")
    await page.set_viewport_size(PHONE)
    await sign_in(page, stack, "operator", owner="alice")
    await expect(page.locator("#mem-list article.mem").first).to_be_visible()
    width: Any = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide at {PHONE['width']} px"
    await page.screenshot(path=str(shots / "memories-phone.png"), full_page=False)

    tab = page.get_by_role("tab", name="Memories")
    await tab.focus()
    await page.keyboard.press("ArrowRight")
    await expect(page.get_by_role("tab", name="Playground")).to_have_attribute("aria-selected", "true")
    await expect(page.get_by_role("tab", name="Playground")).to_be_focused()
    await page.keyboard.press("End")
    await expect(page.get_by_role("tab", name="Graph")).to_have_attribute("aria-selected", "true")
    await page.keyboard.press("Home")
    await expect(page.locator("#panel-memories")).to_be_visible()

    for name in ("Playground", "Engine", "Sleep", "Activity", "Graph"):  # no tab needs sideways scrolling
        await page.get_by_role("tab", name=name).click()
        await expect(page.locator(f"#panel-{name.lower()}")).to_be_visible()
        await page.wait_for_timeout(300)
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{name} is {width} px wide at {PHONE['width']} px"


async def test_agent_filter_in_the_list_and_the_playground(page: Page, stack: Stack) -> None:
    tag = unique("okapi")
    planner, coder = unique("planner-"), unique("coder-")
    notes = {
        f"The {tag} sprint plan has three milestones": planner,
        f"The {tag} roadmap puts the beta in March": planner,
        f"The {tag} service is written in Rust": coder,
    }
    for content, agent in notes.items():
        status, made = await rest(
            stack, "alice", "POST", "/v1/memories", {"content": content, "session_id": "agents", "agent_id": agent}
        )
        assert status == 200 and made["memory"]["agent_id"] == agent, made
    await sign_in(page, stack, "alice")
    await page.get_by_label("Content").fill(f"The {tag} tests run on every push")  # the add form names an agent too
    await page.locator("#add-agent").fill(coder)
    await page.get_by_role("button", name="Add memory").click()
    await expect(page.locator("#banner")).to_contain_text("Memory added")

    items = page.locator("#mem-list article.mem")
    await page.get_by_role("searchbox", name="Search").fill(tag)
    await expect(items).to_have_count(4)
    await expect(items.filter(has_text=f"agent {coder}")).to_have_count(2)
    await expect(items.filter(has_text=f"agent {planner}")).to_have_count(2)
    await page.get_by_label("Agent", exact=True).fill(planner)
    await expect(items).to_have_count(2)
    await expect(items.filter(has_text=f"agent {planner}")).to_have_count(2)
    await expect(page.locator("#mem-list")).not_to_contain_text(coder)
    await expect(page.locator("#mem-range")).to_have_text("1–2 of 2")
    await page.get_by_label("Agent", exact=True).fill("")
    await expect(items).to_have_count(4)

    rust = items.filter(has_text="written in Rust")
    await rust.get_by_role("link", name="Open memory").click()
    one = page.locator("#mem-one")
    await expect(one.locator("dt", has_text="Agent")).to_have_count(1)
    await expect(one.locator("dd", has_text=coder)).to_have_count(1)

    await page.get_by_role("tab", name="Playground").click()
    await page.get_by_label("Query").fill(f"{tag} plan")
    await page.locator("#pg-agent").fill(planner)
    await page.get_by_role("button", name="Simulate").click()
    rows = page.locator("#pg-ranking tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.filter(has_text=f"agent {planner}")).to_have_count(2)
    await expect(page.locator("#pg-ranking")).not_to_contain_text(coder)
    await page.locator("#pg-agent").fill("")
    await page.get_by_role("button", name="Simulate").click()
    await expect(rows.filter(has_text=f"agent {coder}")).to_have_count(2)
    await expect(rows.filter(has_text=f"agent {planner}")).to_have_count(2)
