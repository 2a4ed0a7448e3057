"""What the Studio browser tests do again and again: open the page, sign in, pick an owner, call REST."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.async_api import Page, expect

from .conftest import Stack


async def sign_in(page: Page, stack: Stack, who: str, owner: str | None = None, tab: str = "memories") -> None:
    await page.goto(f"{stack.url}/studio/#/{tab}")
    await page.get_by_label("API key").fill(stack.keys[who])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#studio")).to_be_visible()
    if owner is not None:
        await page.get_by_label("Owner").fill(owner)
        await page.get_by_label("Owner").press("Enter")
        await page.get_by_label("Owner").blur()
        await expect(page.locator("#owner-input")).to_have_value(owner)


async def rest(stack: Stack, who: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One REST call as a key, to set up and to check what the page did (async: the gateway
    runs in this event loop)."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=20) as http:
        res = await http.request(method, path, json=body, headers={"Authorization": f"Bearer {stack.keys[who]}"})
    return res.status_code, res.json() if res.content else {}
