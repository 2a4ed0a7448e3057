"""A connect the server refuses says why: nats-py retries an authorization violation until the
connect timeout, and the error then names the refusal, not ``TimeoutError``."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.client import MemoryClient
from memoryd.errors import ConfigError
from tests.support.auth import start_auth_bus


@pytest.mark.parametrize("password", [None, "wrong-password"])
async def test_refused_credentials_are_named(tmp_path: Path, password: str | None) -> None:
    bus = start_auth_bus(tmp_path)
    try:
        user = None if password is None else "client"
        with pytest.raises(ConfigError) as caught:
            await MemoryClient.connect(bus.url, user=user, password=password, timeout=2)
        message = str(caught.value)
        assert "authorization violation" in message.lower(), message
        assert "MEMORYD_NATS_CREDENTIALS" in message
        assert "TimeoutError" not in message
        if password:
            assert password not in message
    finally:
        bus.server.stop()
