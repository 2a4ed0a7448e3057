"""Fixtures for real servers: PostgreSQL once per session (a fresh database per test module),
nats-server with JetStream per test, both on free loopback ports and torn down reliably."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from nats.aio.client import Client

from memoryd.connect import connect
from memoryd.local.nats import EmbeddedNats
from memoryd.local.postgres import EmbeddedPostgres
from shared.db.pool import create_pool
from shared.settings.env import NatsConfig, PgConfig, ServiceConfig
from tests.support.stack import fresh_database, service_config

warnings.filterwarnings("ignore", module="platformdirs")


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Model variants the embed service builds (``MEMORYD_EMBED_MODEL_CACHE_DIR``) go to a temp dir
    of the session, never to the user's cache."""
    path = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORYD_EMBED_MODEL_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(tmp_path_factory.mktemp("pg") / "data")
    server.start(fsync=False)
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def pg_dsn(pg_server: EmbeddedPostgres) -> AsyncIterator[str]:
    """A fresh, migrated database for this test module."""
    async with fresh_database(pg_server.dsn()) as dsn:
        yield dsn


@pytest.fixture(scope="module")
async def pool(pg_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    p = await create_pool(PgConfig(dsn=pg_dsn, pool_min=1, pool_max=5))
    yield p
    await p.close()


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    server = EmbeddedNats(tmp_path / "nats")
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def nc(nats_server: EmbeddedNats) -> AsyncIterator[Client]:
    client = await connect(NatsConfig(url=nats_server.url), "test")
    yield client
    await client.close()


@pytest.fixture
def config(nats_server: EmbeddedNats, pg_dsn: str) -> ServiceConfig:
    """Service configuration pointing at this test's NATS and this module's database."""
    return service_config(nats_server.url, pg_dsn)
