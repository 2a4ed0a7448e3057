"""Engine settings over ``settings.get/put`` and the CLI: global only, every field and
combination validated (400 naming the field, nothing written), the environment as the
default, API keys write-only (``***`` in every answer, stored sealed: ``test_settings_secrets``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.errors import ValidationFailed
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.ops import SettingsGetRequest, SettingsPutRequest
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from shared.settings.memory import GLOBAL_OWNER
from shared.settings.store import read_values
from tests.support.stack import run_services

from ..embed.helpers import run_cli


@pytest.fixture
async def ingest(
    config: ServiceConfig, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceContext]:
    """Ingest (which serves the settings RPC) with a local embedder in its environment; the
    global row is put back afterwards (tests of this module share the database)."""
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    saved = await read_values(pool, GLOBAL_OWNER)
    async with run_services(["ingest"], config) as ctxs:
        yield ctxs["ingest"]
    await pool.execute("DELETE FROM settings WHERE owner = $1", GLOBAL_OWNER)
    if saved:
        await pool.execute('INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb)', GLOBAL_OWNER, saved)


REMOTE = {"embeddingSource": "remote", "embeddingUrl": "http://embedder:11434/v1", "embeddingModel": "m"}


BAD: list[tuple[bool, dict[str, Any], str]] = [  # (for an owner?, values, the field the 400 names)
    (True, {"embeddingSource": "remote"}, "embeddingSource"),  # global only
    (True, {"maxTokens": 100, "qdrantUrl": ":memory:"}, "qdrantUrl"),
    (True, {"vectorStore": "pgvector"}, "vectorStore"),
    (False, {"embeddingSource": "remote"}, "embeddingUrl"),
    (False, {"embeddingSource": "remote", "embeddingUrl": "http://embedder:11434/v1"}, "embeddingModel"),
    (False, REMOTE, "embeddingDim"),
    (False, {**REMOTE, "embeddingDim": 768, "embeddingQuantization": "dynamic-int8"}, "embeddingQuantization"),
    (False, {"vectorStore": "qdrant"}, "qdrantUrl"),
    (False, {"vectorStore": "sometimes"}, "vectorStore"),
    (False, {"embeddingSource": "cloud"}, "embeddingSource"),
    (False, {"embeddingUrl": "embedder:11434"}, "embeddingUrl"),
    (False, {"embeddingDim": -1}, "embeddingDim"),
    (False, {"embeddingQuantization": "int4"}, "embeddingQuantization"),
    (False, {"qdrantUrl": "qdrant-data"}, "qdrantUrl"),
    (False, {"qdrantCollection": "a/b"}, "qdrantCollection"),
    (False, {"qdrantQuantization": "on"}, "qdrantQuantization"),
    (True, {"vectorQuantization": "half"}, "vectorQuantization"),
    (False, {"vectorQuantization": "int8"}, "vectorQuantization"),
    (False, {"embeddingApiKey": ""}, "embeddingApiKey"),
    (True, {"rerankDepth": 51}, "rerankDepth"),
    (True, {"rerank": "sometimes"}, "rerank"),
]


async def test_bad_engine_settings_are_400_naming_the_field(
    nc: Client, pool: asyncpg.Pool, ingest: ServiceContext
) -> None:
    before = await read_values(pool, GLOBAL_OWNER)
    for for_owner, values, field in BAD:
        owner = f"o-{uuid.uuid4().hex[:8]}" if for_owner else None
        with pytest.raises(ValidationFailed, match=field):
            await call(nc, "settings.put", SettingsPutRequest(owner=owner, values=values))
        assert await read_values(pool, GLOBAL_OWNER) == before, values
        if owner:
            assert await read_values(pool, owner) == {}, values


async def test_defaults_come_from_the_environment_and_api_keys_are_write_only(
    nc: Client, pool: asyncpg.Pool, ingest: ServiceContext
) -> None:
    shown = await call(nc, "settings.get", SettingsGetRequest())
    assert shown.settings["embeddingSource"] == "local" and shown.sources["embeddingSource"] == "default"
    assert shown.settings["vectorStore"] == "auto" and shown.settings["embeddingApiKey"] is None
    assert shown.settings["vectorQuantization"] == "none"
    assert shown.settings["rerank"] is False and shown.settings["rerankDepth"] == 20

    secrets = {"embeddingApiKey": "sk-very-secret", "qdrantApiKey": "qd-secret"}
    put = await call(nc, "settings.put", SettingsPutRequest(values={**REMOTE, "embeddingDim": 768, **secrets}))
    owner = f"o-{uuid.uuid4().hex[:8]}"
    await call(nc, "settings.put", SettingsPutRequest(owner=owner, values={"rerank": True, "rerankDepth": 8}))
    mine = await call(nc, "settings.get", SettingsGetRequest(owner=owner))
    for answer in (put.settings, mine.settings):
        assert answer["embeddingApiKey"] == "***" and answer["qdrantApiKey"] == "***"
        assert "secret" not in repr(answer)
    assert (mine.settings["embeddingSource"], mine.sources["embeddingSource"]) == ("remote", "global")
    assert (mine.settings["rerankDepth"], mine.sources["rerankDepth"]) == (8, "owner")
    stored = await read_values(pool, GLOBAL_OWNER)
    assert ingest.keyring.open("embeddingApiKey", stored["embeddingApiKey"]) == "sk-very-secret"
    assert stored["embeddingDim"] == 768


async def test_cli_sets_engine_settings_with_their_types(
    nats_server: EmbeddedNats, pool: asyncpg.Pool, ingest: ServiceContext
) -> None:
    env = {"MEMORYD_NATS_URL": nats_server.url}
    code, out, err = await run_cli(["settings", "set", "embeddingApiKey", "12345"], env)
    assert code == 0, err
    assert out.strip() == 'embeddingApiKey = "***" (global)'
    stored = (await read_values(pool, GLOBAL_OWNER))["embeddingApiKey"]
    assert ingest.keyring.open("embeddingApiKey", stored) == "12345"  # a string, not a number

    code, out, err = await run_cli(["settings", "set", "embeddingModel", "nomic", "--owner", "someone"], env)
    assert code != 0 and "embeddingModel is global-only" in err
    code, out, err = await run_cli(["settings", "set", "vectorStore", "qdrant"], env)
    assert code != 0 and "qdrantUrl" in err
