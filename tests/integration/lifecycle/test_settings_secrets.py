"""Engine API keys at rest: sealed in the ``settings`` table (no plaintext anywhere in it),
``***`` over the settings RPC, opened for the services that use them; a service with the
wrong key or none says it is degraded and never uses the ciphertext; rows from before
sealing are sealed when ingest starts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.errors import SecretUnavailable
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.ops import SettingsGetRequest, SettingsPutRequest
from shared.secrets import generate_key, is_sealed
from shared.service import _health
from shared.settings.env import ServiceConfig
from shared.settings.global_row import GlobalRow
from shared.settings.memory import GLOBAL_OWNER
from shared.settings.store import read_values
from tests.support.metrics import scrape, value
from tests.support.stack import run_services, service_config

KEYS = {"embeddingApiKey": "sk-embed-6f1c2a9e77", "qdrantApiKey": "qd-key-0b93d11f42"}


@pytest.fixture
async def clean_global_row(pool: asyncpg.Pool) -> AsyncIterator[None]:
    """The global row is put back afterwards (tests of this module share the database)."""
    saved = await read_values(pool, GLOBAL_OWNER)
    yield
    await pool.execute("DELETE FROM settings WHERE owner = $1", GLOBAL_OWNER)
    if saved:
        await pool.execute('INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb)', GLOBAL_OWNER, saved)


async def table_text(pool: asyncpg.Pool) -> str:
    rows = await pool.fetch("SELECT s::text AS row FROM settings s")
    return "\n".join(r["row"] for r in rows)


async def test_api_keys_are_sealed_in_the_table_masked_in_answers_and_opened_for_services(
    nc: Client, pool: asyncpg.Pool, config: ServiceConfig, clean_global_row: None
) -> None:
    async with run_services(["ingest"], config) as ctxs:
        put = await call(nc, "settings.put", SettingsPutRequest(values={**KEYS, "rerankDepth": 12}))
        got = await call(nc, "settings.get", SettingsGetRequest())
        keyring = ctxs["ingest"].keyring
        for answer in (put.settings, got.settings):
            assert answer["embeddingApiKey"] == "***" and answer["qdrantApiKey"] == "***"
            assert not any(secret in repr(answer) for secret in KEYS.values())
        assert got.settings["rerankDepth"] == 12
        text = await table_text(pool)
        assert not any(secret in text for secret in KEYS.values()), text
        stored = await read_values(pool, GLOBAL_OWNER)
        assert all(is_sealed(stored[k]) and stored[k].startswith(f"enc:v1:{keyring.current_id}:") for k in KEYS)
        row = GlobalRow(pool, keyring)
        opened = await row.read()
        assert {k: opened[k] for k in KEYS} == KEYS and await row.check() == "ok"
        # clearing a key stores null, and the other stays sealed
        await call(nc, "settings.put", SettingsPutRequest(values={"qdrantApiKey": None}))
        stored = await read_values(pool, GLOBAL_OWNER)
        assert stored["qdrantApiKey"] is None and is_sealed(stored["embeddingApiKey"])
        assert (await call(nc, "settings.get", SettingsGetRequest())).settings["qdrantApiKey"] is None


async def test_the_wrong_key_is_a_typed_error_and_the_service_says_it_is_degraded(
    nc: Client,
    pool: asyncpg.Pool,
    nats_server: EmbeddedNats,
    pg_dsn: str,
    config: ServiceConfig,
    clean_global_row: None,
) -> None:
    async with run_services(["ingest"], config):
        await call(nc, "settings.put", SettingsPutRequest(values=KEYS))
    sealed = await read_values(pool, GLOBAL_OWNER)

    wrong = service_config(nats_server.url, pg_dsn, {"MEMORYD_SECRETS_KEY": generate_key()})
    async with run_services(["ingest"], wrong) as ctxs:
        ctx = ctxs["ingest"]
        with pytest.raises(SecretUnavailable, match="which this process does not have"):
            ctx.keyring.open("embeddingApiKey", sealed["embeddingApiKey"])
        health = await _health(ctx, deep=False)
        assert health.status == "degraded"
        assert (
            health.checks["secrets"].startswith("degraded: ")
            and "embeddingApiKey: sealed with key" in health.checks["secrets"]
        )
        page = await asyncio.to_thread(scrape, f"http://127.0.0.1:{ctx.metrics_port}/metrics")
        row = GlobalRow(pool, ctx.keyring)
        opened = await row.read()
        assert "embeddingApiKey" not in opened and "qdrantApiKey" not in opened  # never the ciphertext
        # what the alert reads, set by the service itself (before this test's own read)
        assert value(page, "memoryd_secrets_unavailable_keys") == len(row.problems) >= 2
        assert await read_values(pool, GLOBAL_OWNER) == sealed  # left as it was for the right key

    keyless = service_config(nats_server.url, pg_dsn, {"MEMORYD_SECRETS_KEY": ""})
    async with run_services(["ingest"], keyless) as ctxs:
        assert not ctxs["ingest"].keyring.configured
        with pytest.raises(SecretUnavailable, match="no secrets key configured"):
            await call(nc, "settings.put", SettingsPutRequest(values={"embeddingApiKey": "sk-new-3b1f"}))
        assert await read_values(pool, GLOBAL_OWNER) == sealed  # nothing written
        assert (await _health(ctxs["ingest"], deep=False)).checks["secrets"].startswith("degraded: ")
        await call(nc, "settings.put", SettingsPutRequest(values={"rerankDepth": 9}))  # other settings still work
    assert "sk-new-3b1f" not in await table_text(pool)


async def test_plaintext_rows_from_before_sealing_are_sealed_when_ingest_starts(
    pool: asyncpg.Pool, config: ServiceConfig, clean_global_row: None
) -> None:
    await pool.execute("DELETE FROM settings WHERE owner = $1", GLOBAL_OWNER)
    await pool.execute(
        'INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb)', GLOBAL_OWNER, {**KEYS, "rerankDepth": 7}
    )
    async with run_services(["ingest"], config) as ctxs:
        stored = await read_values(pool, GLOBAL_OWNER)
        assert all(is_sealed(stored[k]) for k in KEYS) and stored["rerankDepth"] == 7
        text = await table_text(pool)
        assert not any(secret in text for secret in KEYS.values())
        opened = await GlobalRow(pool, ctxs["ingest"].keyring).read()
        assert {k: opened[k] for k in KEYS} == KEYS
