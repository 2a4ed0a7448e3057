"""Qdrant-only behaviour (qdrant-client local mode): collection per signature behind an
alias, health reasons (wrong dimension, missing collection, server down), payload mirroring."""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient, models

from memoryd.errors import DependencyDown
from shared.vectors.port import VectorItem, VectorQuery
from shared.vectors.qdrant import QdrantStore, quantization_name

from .world import unit

SIG = "local:minilm:8"


@pytest.fixture
async def client() -> AsyncIterator[AsyncQdrantClient]:
    c = AsyncQdrantClient(location=":memory:")
    yield c
    await c.close()


def item(owner: str, vector: np.ndarray, **fields: object) -> VectorItem:
    return VectorItem(memory_id=str(uuid.uuid4()), owner=owner, vector=vector, **fields)  # type: ignore[arg-type]


async def test_wrong_dimension_collection_is_unhealthy_with_reason(client: AsyncQdrantClient) -> None:
    store = QdrantStore(client, "wd")
    name = store.collection(SIG)
    await client.create_collection(name, vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE))
    status = await store.status(SIG)
    assert not status.healthy
    assert status.detail == f"collection {name} has dimension 4, signature '{SIG}' needs 8"
    with pytest.raises(DependencyDown, match="has dimension 4"):
        await store.ensure(SIG, 8)
    with pytest.raises(DependencyDown, match="dimension 4, query has 8"):
        await store.search(SIG, VectorQuery(owner="a", vector=np.ones(8)))


async def test_alias_swaps_between_signature_collections(client: AsyncQdrantClient) -> None:
    rng = np.random.default_rng(31)
    store = QdrantStore(client, "swap")
    old, new = "local:minilm:8", "remote:bigger:16"
    await store.ensure(old, 8)
    assert await store.active_collection() is None
    await store.activate(old)
    assert await store.active_collection() == store.collection(old)
    await store.upsert(new, [item("a", unit(rng, 16))])  # creates the new collection on first write
    assert ", not active, quantization: none" in (await store.status(new)).detail
    await store.activate(new)
    assert await store.active_collection() == store.collection(new)
    assert (await store.status(new)).detail == f"collection {store.collection(new)}, active, quantization: none"
    assert ", not active, quantization: none" in (await store.status(old)).detail
    assert [a.alias_name for a in (await client.get_aliases()).aliases] == ["swap_active"]
    with pytest.raises(DependencyDown, match="does not exist"):
        await store.activate("never:ensured:8")


async def test_missing_collection_and_server_down() -> None:
    local = AsyncQdrantClient(location=":memory:")
    try:
        store = QdrantStore(local, "miss")
        assert (await store.status(SIG)).detail == f"collection {store.collection(SIG)} does not exist"
        with pytest.raises(DependencyDown, match="not ensured"):
            await store.search(SIG, VectorQuery(owner="a", vector=np.ones(8)))
        assert await store.delete("a", [str(uuid.uuid4())]) == 0
    finally:
        await local.close()
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    remote = AsyncQdrantClient(url=f"http://127.0.0.1:{port}", timeout=2, check_compatibility=False)
    try:
        store = QdrantStore(remote, "down")
        status = await store.status(SIG)
        assert not status.healthy and status.detail.startswith("qdrant unavailable:")
        with pytest.raises(DependencyDown):
            await store.search(SIG, VectorQuery(owner="a", vector=np.ones(8)))
        with pytest.raises(DependencyDown):
            await store.ensure(SIG, 8)
    finally:
        await remote.close()


async def test_update_payload_mirrors_memory_changes(client: AsyncQdrantClient) -> None:
    rng = np.random.default_rng(32)
    store = QdrantStore(client, "pay")
    await store.ensure(SIG, 8)
    mine = item("alice", unit(rng, 8))
    other = item("bob", unit(rng, 8))
    await store.upsert(SIG, [mine, other])
    q = VectorQuery(owner="carol", vector=unit(rng, 8))
    assert await store.search(SIG, q) == []
    # scope change: bob's memory becomes global, visible to carol; alice cannot change bob's
    assert await store.update_payload("alice", [other.memory_id], scope="global") == 0
    assert await store.update_payload("bob", [other.memory_id], scope="global") == 1
    assert [h.memory_id for h in await store.search(SIG, q)] == [other.memory_id]
    # expiry set then cleared
    past = datetime.now(UTC) - timedelta(minutes=1)
    assert await store.update_payload("bob", [other.memory_id], expires_at=past) == 1
    assert await store.search(SIG, q) == []
    assert await store.update_payload("bob", [other.memory_id], expires_at=None) == 1
    assert len(await store.search(SIG, q)) == 1
    assert await store.update_payload("bob", [other.memory_id]) == 0  # nothing to change


async def test_quantization_flag_in_local_mode(client: AsyncQdrantClient) -> None:
    rng = np.random.default_rng(33)
    store = QdrantStore(client, "quant", quantization=True)
    assert store.local
    await store.ensure(SIG, 8)
    items = [item("alice", v) for v in unit(rng, 8, 20)]
    await store.upsert(SIG, items)
    q = unit(rng, 8)
    hits = await store.search(SIG, VectorQuery(owner="alice", vector=q, limit=3))
    want = sorted(items, key=lambda i: -float(np.dot(i.vector, q)))[:3]
    assert [h.memory_id for h in hits] == [i.memory_id for i in want]
    status = await store.status(SIG)  # what the collection holds, and why it is not what was asked
    assert status.healthy and "quantization: none" in status.detail
    assert "int8 asked: local mode ignores quantization" in status.detail
    plain = await QdrantStore(client, "quant").status(SIG)
    assert "quantization: none" in plain.detail and "asked" not in plain.detail


class _ServerLike(QdrantStore):
    """A store that takes its client for a server (local mode would skip the update)."""

    @property
    def local(self) -> bool:
        return False


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect")
async def test_quantization_is_applied_to_an_existing_collection(
    client: AsyncQdrantClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Qdrant server here: the local client records the ``update_collection`` a server gets."""
    await QdrantStore(client, "later").ensure(SIG, 8)  # created without quantization
    sent: list[tuple[str, object]] = []
    update = client.update_collection

    async def recording(name: str, **kwargs: object) -> bool:
        sent.append((name, kwargs.get("quantization_config")))
        return await update(name, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "update_collection", recording)
    await _ServerLike(client, "later").ensure(SIG, 8)  # asked for none, holds none: nothing sent
    assert sent == []
    store = _ServerLike(client, "later", quantization=True)
    await store.ensure(SIG, 8)
    assert len(sent) == 1 and sent[0][0] == store.collection(SIG)
    config = sent[0][1]
    assert isinstance(config, models.ScalarQuantization) and quantization_name(config) == "int8"
    assert "int8 asked: not applied yet" in (await store.status(SIG)).detail  # the local client ignored it


def test_quantization_name_reads_the_collection_config() -> None:
    scalar = models.ScalarQuantization(scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8))
    binary = models.BinaryQuantization(binary=models.BinaryQuantizationConfig())
    ratio = models.CompressionRatio.X16
    product = models.ProductQuantization(product=models.ProductQuantizationConfig(compression=ratio))
    assert [quantization_name(c) for c in (scalar, binary, product, None)] == ["int8", "binary", "product", "none"]
