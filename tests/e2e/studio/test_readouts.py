"""Memory Studio's read-outs in Chromium: what memory costs per proxied call next to the settings
that make it (Engine tab)."""

from __future__ import annotations

from playwright.async_api import Page, expect

from .conftest import Stack
from .helpers import rest, sign_in


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
