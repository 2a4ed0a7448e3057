"""Memory Studio against `memoryd up` as a user runs it (NATS authentication on, every service
its own process): keys from `memoryd keys create`, an owner adds and finds a memory, an operator
sees that owner's engine and the activity charts, without an error banner."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from .conftest import DESKTOP

MEMORYD = [sys.executable, "-m", "memoryd.cli.main"]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}


@pytest.fixture(scope="module")
async def up(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("studio-up") / "data"
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        *MEMORYD, "up", "--data-dir", str(data), "--nats-port", str(_free_port()), "--gateway-port", str(port),
        env=_env(), stdout=asyncio.subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        while True:
            line = (await asyncio.wait_for(proc.stdout.readline(), timeout=180)).decode()
            assert line, f"memoryd up exited ({await proc.wait()})"
            if line.startswith("memoryd ready "):
                break
        yield f"http://127.0.0.1:{port}", data
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have exited already: the test says why
            proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), timeout=60)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _key(data: Path, *args: str) -> str:
    done = await asyncio.to_thread(
        subprocess.run,
        [*MEMORYD, "keys", "create", *args, "--data-dir", str(data)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1].strip()


async def test_studio_on_memoryd_up(browser: Any, up: tuple[str, Path]) -> None:
    url, data = up
    alice, operator = await _key(data, "--owner", "alice"), await _key(data, "--operator")
    context = await browser.new_context(viewport=DESKTOP)
    page = await context.new_page()
    page.set_default_timeout(20_000)
    try:
        await page.goto(f"{url}/studio/")
        await page.get_by_label("API key").fill(alice)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#who-owner")).to_have_text("owner alice")
        await page.get_by_label("Content").fill("User deploys with Kubernetes and Argo CD")
        await page.get_by_role("button", name="Add memory").click()
        await expect(page.locator("#stat-total .stat-value")).to_have_text("1")
        await page.get_by_role("searchbox", name="Search").fill("kubernetes")
        await expect(page.locator("#mem-list article.mem")).to_have_count(1)

        await page.get_by_role("button", name="Sign out").click()
        await page.get_by_label("API key").fill(operator)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_label("Owner").fill("alice")
        await page.get_by_label("Owner").press("Enter")
        await page.get_by_role("tab", name="Engine").click()
        await expect(page.locator("#engine-chips")).to_contain_text("Store pgvector")
        await expect(page.locator("#lag-list")).to_contain_text("embed")
        await page.get_by_role("tab", name="Activity").click()
        await expect(page.locator("#activity-charts svg.chart")).to_have_count(2, timeout=30_000)
        await expect(page.locator("#banner")).to_be_hidden()
    finally:
        await context.close()
