"""Memory Studio in a real Chromium against a real stack.

The stack: real NATS and PostgreSQL (started by fixtures), every service in this process,
the gateway on a free port, three API keys (operator, owner ``alice``, owner ``bob``). The
browser: Debian's Chromium driven by Playwright (``MEMORYD_CHROMIUM`` overrides the path).
Without a browser the tests skip locally and fail when ``CI`` is set, so CI never passes
without them. ``MEMORYD_STUDIO_SCREENSHOTS=<dir>`` keeps the screenshots the tests take
(``make studio-screenshots`` writes them to ``docs/studio``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from shared.api_keys import KeyStore, new_key, open_bucket
from shared.settings.env import NatsConfig, ServiceConfig
from tests.support.stack import run_services, service_config

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CORE = ("ingest", "extract", "embed", "sleep")
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def chromium_path() -> str:
    """The browser's path, or skip (fail under CI) saying how to install it."""
    wanted = os.environ.get("MEMORYD_CHROMIUM", "/usr/bin/chromium")
    found = shutil.which(wanted) or (wanted if os.access(wanted, os.X_OK) else None)
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        found = None
        wanted = "the playwright Python package (pip install -e '.[test]')"
    if found is None:
        message = f"Memory Studio browser tests need {wanted}: as root `apt-get install -y chromium` (make test does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class Stack:
    url: str  # the gateway, e.g. http://127.0.0.1:43123
    config: ServiceConfig
    keys: dict[str, str]  # operator, alice, bob
    nc: Any
    exits: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    retrieve: contextlib.AsyncExitStack | None = None

    async def start_retrieve(self) -> None:
        self.retrieve = contextlib.AsyncExitStack()
        await self.retrieve.enter_async_context(run_services(["retrieve"], self.config))

    async def stop_retrieve(self) -> None:
        assert self.retrieve is not None
        await self.retrieve.aclose()
        self.retrieve = None


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    path = chromium_path()
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        await b.close()


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory, pg_dsn: str) -> AsyncIterator[Stack]:
    nats = EmbeddedNats(tmp_path_factory.mktemp("studio-nats") / "nats")
    nats.start()
    mp = pytest.MonkeyPatch()
    mp.setenv("MEMORYD_GATEWAY_PORT", "0")
    try:
        config = service_config(nats.url, pg_dsn)
        async with contextlib.AsyncExitStack() as exits:
            nc = await connect(NatsConfig(url=nats.url), "studio-test")
            exits.push_async_callback(nc.close)
            await exits.enter_async_context(run_services(CORE, config))
            gateway = await exits.enter_async_context(run_services(["gateway"], config))
            store = KeyStore(await open_bucket(nc.jetstream()))
            keys = {}
            for name, role, owner in (
                ("operator", "operator", None),
                ("alice", "owner", "alice"),
                ("bob", "owner", "bob"),
            ):
                token, record = new_key(role, owner, name=f"studio test {name}")  # type: ignore[arg-type]
                await store.put(record)
                keys[name] = token
            s = Stack(url=gateway["gateway"].ready_fields["http"], config=config, keys=keys, nc=nc)
            await s.start_retrieve()
            try:
                yield s
            finally:
                if s.retrieve is not None:
                    await s.stop_retrieve()
    finally:
        mp.undo()
        nats.stop()


@pytest.fixture
async def page(browser: Any, stack: Stack) -> AsyncIterator[Any]:
    context = await browser.new_context(viewport=DESKTOP, accept_downloads=True)
    p = await context.new_page()
    p.set_default_timeout(15_000)
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    yield p
    await context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def screenshot_dir(tmp_path: Path) -> Path:
    target = os.environ.get("MEMORYD_STUDIO_SCREENSHOTS")
    out = Path(target) if target else tmp_path / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return screenshot_dir(tmp_path)


def unique(word: str) -> str:
    return f"{word}{uuid.uuid4().hex[:6]}"
