"""Fixtures for the retrieve service on real NATS + PostgreSQL.

``ScriptedEmbed`` answers ``mem.v1.rpc.embed`` with hand-chosen vectors (a stand-in for the
embed *service*, not for NATS or Postgres), so vector ranks are known exactly and the RRF
order of a hand-checked example can be asserted through the service.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client

from memoryd.schemas import RPC_OPS
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult
from shared.bus.rpc import RpcServer
from shared.db import memories
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorItem
from tests.support.stack import run_services

SIG = "test:hand:4"
DIM = 4


def unit(*xs: float) -> list[float]:
    v = np.asarray(xs, dtype=np.float32)
    return (v / np.linalg.norm(v)).tolist()


class ScriptedEmbed:
    """An embed RPC that maps known texts to given vectors (anything else: ``default``)."""

    def __init__(
        self,
        vectors: Mapping[str, list[float]] | None = None,
        default: Sequence[float] = (1, 1, 1, 1),
        *,
        delay_s: float = 0.0,
    ) -> None:
        self.vectors: dict[str, list[float]] = dict(vectors or {})
        self.default = unit(*default)
        self.delay_s = delay_s
        self.calls: list[str] = []
        self.server: RpcServer | None = None

    async def start(self, nc: Client, signature: str = SIG) -> ScriptedEmbed:
        async def handler(req: EmbedRequest) -> EmbedResult:
            self.calls.extend(req.texts)
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            vecs = [self.vectors.get(t, self.default) for t in req.texts]
            return EmbedResult(vectors=vecs, signature=signature, dim=len(vecs[0]))

        self.server = RpcServer(nc, "embed", "0.0.0-test")
        await self.server.start()
        await self.server.add(RPC_OPS["embed"], handler)
        await self.server.wait_subscribed()
        return self

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.drain()


@pytest.fixture
async def retrieve_svc(config: ServiceConfig) -> AsyncIterator[ServiceContext]:
    async with run_services(["retrieve"], config) as ctxs:
        yield ctxs["retrieve"]


@pytest.fixture(scope="module")
async def vec_meta(pool: asyncpg.Pool) -> str:
    """pgvector is active on the hand-made 4-d signature for this module's database."""
    await PgVectorStore(pool).ensure(SIG, DIM)
    await pool.execute(
        "INSERT INTO memory_vec_meta (store, active_dim, embedding_signature) VALUES ('pgvector', $1, $2)"
        " ON CONFLICT (store) DO UPDATE SET active_dim = EXCLUDED.active_dim,"
        " embedding_signature = EXCLUDED.embedding_signature, pending_signature = NULL",
        DIM,
        SIG,
    )
    return SIG


def owner() -> str:
    """A fresh owner per test: tests share the module's database."""
    return f"o{uuid.uuid4().hex[:12]}"


async def put(
    pool: asyncpg.Pool,
    owner: str,
    content: str,
    *,
    vector: list[float] | None = None,
    created_at: datetime | None = None,
    **kw: Any,
) -> str:
    """Insert a memory row (and its vector in pgvector); return its id."""
    record = await memories.insert(
        pool,
        owner=owner,
        memory_type=kw.pop("memory_type", "factual"),
        content=content,
        source=kw.pop("source", "api"),
        created_at=created_at,
        **kw,
    )
    if vector is not None:
        await PgVectorStore(pool).upsert(
            SIG,
            [
                VectorItem(
                    memory_id=record.id,
                    owner=owner,
                    vector=vector,
                    session_id=record.session_id,
                    scope=record.scope,
                    memory_type=record.memory_type,
                    created_at=record.created_at,
                )
            ],
        )
    return record.id
